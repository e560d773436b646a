"""A variant of the scheduler compiled for an engine's features is kept on disk, so that a
later process runs it from its first request: loaded, not compiled; keyed by the source, so an
edited ``scheduler.py`` or another Python never loads a stale one; a damaged or unwritable
cache costs a compile, never a wrong run."""

from pathlib import Path

import numpy as np
import pytest

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.serving import compiled, scheduler, specialise
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.scenario import Scenario, build
from napkin.timing.efficiency import Efficiency


def _engine(**spec) -> Engine:
    return Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
                  Efficiency(), EngineSpec(num_blocks=100, **spec))


def _new_process(monkeypatch: pytest.MonkeyPatch, cache: Path | None) -> None:
    """What a fresh process knows: nothing simulated, no variant in memory."""
    monkeypatch.setattr(specialise, "CACHE", cache)
    monkeypatch.setattr(specialise, "_simulated", [0])
    monkeypatch.setattr(specialise, "_warm", {})
    specialise._compiled.cache_clear()


@pytest.fixture(autouse=True)
def _forget_variants():
    yield
    specialise._compiled.cache_clear()


def test_a_variant_compiled_once_is_loaded_by_the_next_process(monkeypatch, tmp_path):
    _new_process(monkeypatch, tmp_path)
    assert specialise.specialised(_engine(), requests=10) is scheduler.process  # cold: as is
    assert not list(tmp_path.iterdir())
    compiled = specialise.specialised(_engine(), requests=specialise.SPECIALISE_AFTER)
    assert compiled is not scheduler.process
    [kept] = tmp_path.iterdir()
    assert kept.suffix == ".marshal" and kept.stat().st_size > 1000
    assert kept.stat().st_mode & 0o777 == 0o644  # (every user of the install reads it)
    _new_process(monkeypatch, tmp_path)
    monkeypatch.setattr(specialise, "_compile", lambda switches: pytest.fail("compiled"))
    loaded = specialise.specialised(_engine(), requests=10)  # warm: from the first request
    assert loaded is not scheduler.process
    assert loaded.__code__.co_code == compiled.__code__.co_code
    assert loaded.__code__.co_filename == scheduler.process.__code__.co_filename
    # another engine's features have no variant on disk yet: process itself
    assert specialise.specialised(_engine(enable_prefix_caching=True)) is scheduler.process


def test_another_source_or_python_finds_no_variant(monkeypatch, tmp_path):
    _new_process(monkeypatch, tmp_path)
    specialise.specialised(_engine(), requests=specialise.SPECIALISE_AFTER)
    _new_process(monkeypatch, tmp_path)
    monkeypatch.setattr(specialise, "_source_key", lambda: "an-edited-scheduler")
    assert specialise.specialised(_engine(), requests=10) is scheduler.process


@pytest.mark.parametrize("damage", [b"", b"not marshal data", b"\xe3" + bytes(40)])
def test_a_damaged_variant_is_compiled_again_and_replaced(monkeypatch, tmp_path, damage):
    _new_process(monkeypatch, tmp_path)
    specialise.specialised(_engine(), requests=specialise.SPECIALISE_AFTER)
    [kept] = tmp_path.iterdir()
    good = kept.read_bytes()
    kept.write_bytes(damage)
    _new_process(monkeypatch, tmp_path)
    variant = specialise.specialised(_engine(), requests=10)
    assert variant is not scheduler.process and kept.read_bytes() == good


def test_a_cache_that_cannot_be_written_keeps_nothing(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _new_process(monkeypatch, blocker / "cache")  # (a folder under a file: mkdir fails)
    variant = specialise.specialised(_engine(), requests=specialise.SPECIALISE_AFTER)
    assert variant is not scheduler.process and not (blocker / "cache").exists()


def test_a_loaded_variant_runs_the_same_records(monkeypatch, tmp_path):
    """Records of a small run by ``process`` itself and by the variant loaded from disk."""
    scenario = {"name": "s", "model": "qwen3-0.6b", "gpu": "l4",
                "engine": {"max_num_seqs": 8, "max_num_batched_tokens": 512},
                "workload": {"seed": 3, "classes": {"c": {
                    "input_tokens": {"dist": "uniform", "low": 50, "high": 900},
                    "output_tokens": {"dist": "uniform", "low": 5, "high": 200}}},
                    "arrivals": {"kind": "poisson", "rate_per_s": 20, "num_requests": 300}}}
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 10**18)  # (the scheduler, not the core)
    runs = []
    for warm in (False, True):
        _new_process(monkeypatch, tmp_path)
        if warm:  # a variant for the run's engine kept by an earlier process
            specialise._compiled((*scheduler.features(_engine(max_num_seqs=8,
                                  max_num_batched_tokens=512)), False))
            assert list(tmp_path.iterdir())
            _new_process(monkeypatch, tmp_path)
        built = build(Scenario.model_validate(scenario), Path("."))
        runs.append(built.simulate().records)
        assert list(specialise._warm.values()) == [warm]  # the variant found, or none
    assert runs[0].finish_s.size == 300
    for name in ("first_token_s", "finish_s", "arrival_s"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))
