"""The fuzz profiles of issue 11: odd and bad values in CLI options and in every file format
(config.json, workload and trajectory YAML, Azure/CSV/Mooncake traces), run in-process. Every
case exits 2 with one line naming a field, or 0 with finite, non-negative sizes in its JSON; no
traceback, no case over :data:`CASE_S`, no file left behind by a refused export.

The quick profile runs by default (a few seconds); the long one (``pytest -m slow``, >= 10,000
inputs) is the issue's acceptance run. ``NAPKIN_FUZZ_LOG=path`` appends its figures as JSON.
"""

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

CASE_S = 20
"""Wall-clock bound of one case (the slowest accepted inputs take a few seconds)."""
QUICK, LONG = 3, 600
"""Examples per target in the quick and the long profile."""

ODD = ["nan", "inf", "-inf", "-1", "0", "1e400", "5e-324", "1e-308", "1e308", "-0", "x", "",
       "99999999999999999999", "2147483648", "9223372036854775808", "1.0000001", "0.5", "3",
       "1e9", "1,2", "0x10", " 1 "]

OPTIONS = [
    (["scaling", "optimum", "--flops", "1e20"], ["--flops"]),
    (["rl", "qwen3-0.6b"], ["--keep-rate", "--keep", "--prompt-len", "--gen-len", "--replicas"]),
    (["media", "diffusion"], ["--vae-factor", "--steps", "--text-tokens", "--size", "--mfu"]),
    (["media", "jitter"], ["--blocks", "--block-ms", "--buffer-ms", "--clock-ratio",
                           "--sample-rate", "--process-ms"]),
    (["media", "audio"], ["--codebooks", "--sample-rate", "--hop", "--context"]),
    (["media", "drain"], ["--buffered-s", "--arrival-rate"]),
    (["context", "growth", "--system", "100", "--step", "10", "--steps", "5"],
     ["--steps", "--system", "--step"]),
    (["capacity", "qwen3-8b", "--gpu", "h100-sxm"], ["--reserve-gb", "--count", "--context",
                                                     "--avg-context", "--gpu-mem-gb"]),
    (["decode", "qwen3-0.6b", "--gpu", "h100-sxm"], ["--context", "--reserve-gb", "--batch",
                                                     "--mfu", "--mbu", "--overhead-ms",
                                                     "--gpu-tflops", "--gpu-bw-gbs"]),
    (["cost", "price", "--price-ratio", "1", "--tokens-ratio", "1", "--success-old", "0.5",
      "--success-new", "0.6"], ["--price-ratio", "--tokens-ratio", "--success-old",
                                "--success-new"]),
    (["pretrain"], ["--mfu", "--days", "--count", "--alt", "--gpu-tflops"]),
    (["lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9"],
     ["--target-loss", "--sizes", "--mfu"]),
    (["agent", "examples/agent-dag.yaml"], ["--mfu", "--mbu", "--weights"]),
]

CONFIG = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
          "vocab_size": 1000, "max_position_embeddings": 4096}
WORKLOADS = [
    {"classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
     "arrivals": {"kind": "windows", "windows": [{"duration_s": 20, "rate_per_s": 0.5}]}},
    {"classes": {"a": {"input_tokens": {"dist": "lognormal", "median": 100, "sigma": 1},
                       "output_tokens": {"dist": "uniform", "low": 1, "high": 20}}},
     "arrivals": {"kind": "gamma", "rate_per_s": 2, "cv": 2, "num_requests": 20}},
    {"classes": {"a": {"input_tokens": 8, "output_tokens": 4}},
     "arrivals": {"kind": "schedule", "segments": [{"duration_s": 10, "rate_per_s": 1}]}},
]
TRAJECTORY = yaml.safe_load(Path("examples/agent-dag.yaml").read_text())
TRACE_HEADERS = {"azure": "TIMESTAMP,ContextTokens,GeneratedTokens",
                 "csv": "t,i,o"}
TRACE_WORKLOAD = {"azure": {"kind": "trace", "format": "azure", "path": "t.csv"},
                  "csv": {"kind": "trace", "format": "csv", "path": "t.csv",
                          "arrival_column": "t", "input_column": "i", "output_column": "o"},
                  "mooncake": {"kind": "trace", "format": "mooncake", "path": "t.jsonl"}}

FIGURES: Counter[str] = Counter()


class Hang(BaseException):
    """Raised by the alarm in a case that runs past :data:`CASE_S` (no handler catches it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang


def _odd_number() -> st.SearchStrategy[Any]:
    return st.one_of(st.floats(), st.integers(-2**70, 2**70), st.sampled_from(
        [0, -1, 2**63, 10**20, 1e-300, 5e-324, 1e308, float("inf"), float("nan"), True]))


def _odd_value() -> st.SearchStrategy[Any]:
    return st.one_of(_odd_number(), st.text(max_size=4), st.none(), st.just([]), st.just({}),
                     st.lists(st.integers(-3, 3), max_size=3))


def _leaves(data: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every value of a nested mapping/list (each a place to mutate)."""
    found = [path] if path else []
    if isinstance(data, dict):
        for k, v in data.items():
            found += _leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found += _leaves(v, (*path, i))
    return found


def _mutate(data: Any, draw: Any) -> Any:
    """A deep copy of ``data`` with one value replaced by an odd one, or one key dropped."""
    data = json.loads(json.dumps(data))
    path = draw(st.sampled_from(_leaves(data)))
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(_odd_value())
    return data


def _sizes_ok(doc: Any) -> None:
    """No negative byte or FLOP count is printed."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, int | float) and str(k).endswith(("_bytes", "_flops")):
                assert v >= 0, (k, v)
            _sizes_ok(v)
    elif isinstance(doc, list):
        for v in doc:
            _sizes_ok(v)


def _run(cli: Any, args: list[str], names: list[str]) -> tuple[int, str, str]:
    """One case under the alarm: exit 2 with one line naming one of ``names`` (or a file),
    or exit 0 with finite JSON; figures counted."""
    FIGURES["inputs"] += 1
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_S)
    start = time.perf_counter()
    try:
        code, out, err = cli(*args, "--format", "json")
    except Hang:
        FIGURES["hangs"] += 1
        raise AssertionError(f"hang: {args}") from None
    finally:
        signal.alarm(0)
    FIGURES["slowest_ms"] = max(FIGURES["slowest_ms"],
                                round((time.perf_counter() - start) * 1e3))
    if "Traceback" in err:
        FIGURES["tracebacks"] += 1
    assert "Traceback" not in err, (args, err)
    if code == 0:
        doc = json.loads(out)
        try:
            assert_finite(doc)
            _sizes_ok(doc)
        except AssertionError:
            FIGURES["non_finite"] += 1
            raise
        FIGURES["accepted"] += 1
    else:
        assert code == 2 and out == "" and err.count("\n") == 1, (args, code, err)
        assert err.startswith("napkin: error:"), (args, err)
        assert any(n in err for n in names), (args, names, err)
        FIGURES["refused"] += 1
    return code, out, err


def _profile(n: int) -> Any:
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _option_case(cli: Any, data: Any, base: list[str], options: list[str]) -> None:
    option = data.draw(st.sampled_from(options))
    value = data.draw(st.one_of(st.sampled_from(ODD), _odd_number().map(str)))
    # a value can clash with another option (less memory than the weights need names
    # --count, the fix; a tiny --sizes cannot reach --target-loss): any of the command's
    # options is the user's field
    names = [option, *(o.lstrip("-") + ":" for o in options), "count:"]
    _run(cli, [*base, option, value], names)


def _file_case(cli: Any, data: Any, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / f"case{FIGURES['inputs']}"
    folder.mkdir()
    if kind == "config":
        path = folder / "config.json"
        path.write_text(json.dumps(_mutate(CONFIG, data.draw)))
        _run(cli, ["model", str(path)], ["model", str(path)])
    elif kind == "workload":
        path = folder / "w.yaml"
        path.write_text(yaml.safe_dump(_mutate(data.draw(st.sampled_from(WORKLOADS)),
                                               data.draw)))
        _run(cli, ["serve", "demand", str(path)], [str(path), "field", "arrivals:"])
    elif kind == "trajectory":
        path = folder / "t.yaml"
        path.write_text(yaml.safe_dump(_mutate(TRAJECTORY, data.draw)))
        _run(cli, ["agent", str(path)], [str(path), "field", "step", "state"])
    else:
        fmt = data.draw(st.sampled_from(sorted(TRACE_WORKLOAD)))
        cell = st.one_of(st.sampled_from(ODD), _odd_number().map(str),
                         st.sampled_from(["2023-11-16 18:15:46.68", "2024-05-10 00:00:00+00:00",
                                          "2024-05-10 00:00:00-99:99", "2024-02-30 00:00:00",
                                          "2024-05-10T25:00:00"]))
        rows = data.draw(st.lists(st.tuples(cell, cell, cell), min_size=1, max_size=4))
        if fmt == "mooncake":
            (folder / "t.jsonl").write_text("".join(
                json.dumps({"timestamp": data.draw(_odd_number()), "input_length":
                            data.draw(_odd_number()), "output_length": 4, "hash_ids": []},
                           allow_nan=True) + "\n" for _ in rows))
        else:
            (folder / "t.csv").write_text("\n".join(
                [TRACE_HEADERS[fmt], "0,10,20", *(",".join(r) for r in rows)]) + "\n")
        path = folder / "w.yaml"
        path.write_text(yaml.safe_dump({"arrivals": TRACE_WORKLOAD[fmt]}))
        _run(cli, ["serve", "demand", str(path)], ["trace", "field", "window-s", "arrivals"])


def _export_case(cli: Any, data: Any, tmp_path: Path) -> None:
    """A scenario with one mutated ``--set``: refused ones leave no export folder, accepted
    ones no temporary file."""
    out = tmp_path / f"export{FIGURES['inputs']}"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "toy", "model": "qwen3-0.6b", "gpu": "h100-sxm", "calibration": "roofline",
        "engine": {"max_num_seqs": 2, "kv_pool_gib": 1}, "workload": WORKLOADS[0]}))
    key = data.draw(st.sampled_from(["engine.max_num_seqs", "engine.kv_pool_gib", "mfu",
                                     "step_overhead_ms", "workload.arrivals.windows",
                                     "engine.block_size", "slo.ttft_s"]))
    value = data.draw(st.sampled_from(ODD))
    code, _, _ = _run(cli, ["serve", "simulate", str(scenario), "--set", f"{key}={value}",
                            "--export", str(out)], [key.split(".")[-1], "set"])
    left = [p.name for p in out.rglob("*")] if out.exists() else []
    partial = [n for n in left if n.endswith(".part")] if code == 0 else left
    FIGURES["partial_files"] += len(partial)
    assert partial == [], partial


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Any:
    """Start the figures at zero; after the module, append them to ``NAPKIN_FUZZ_LOG``."""
    FIGURES.clear()
    yield
    target = os.environ.get("NAPKIN_FUZZ_LOG")
    if target:
        with open(target, "a") as f:
            f.write(json.dumps(dict(FIGURES)) + "\n")


def _targets() -> list[Any]:
    return ([pytest.param("option", i, id="option-" + "-".join(base[:2]))
             for i, (base, _) in enumerate(OPTIONS)]
            + [pytest.param("file", k, id=f"file-{k}")
               for k in ("config", "workload", "trajectory", "trace")]
            + [pytest.param("export", None, id="export")])


def _case(cli: Any, data: Any, tmp_path: Path, what: str, which: Any) -> None:
    if what == "option":
        _option_case(cli, data, *OPTIONS[which])
    elif what == "file":
        _file_case(cli, data, tmp_path, which)
    else:
        _export_case(cli, data, tmp_path)


@pytest.mark.parametrize(("what", "which"), _targets())
@_profile(QUICK)
@given(data=st.data())
def test_quick_profile(cli, tmp_path, what, which, data):
    _case(cli, data, tmp_path, what, which)


@pytest.mark.slow
@pytest.mark.parametrize(("what", "which"), _targets())
@_profile(LONG)
@given(data=st.data())
def test_long_profile(cli, tmp_path_factory, what, which, data):
    _case(cli, data, tmp_path_factory.mktemp("fuzz"), what, which)
