"""The public API of ``napkin plan``: the CLI's answer, the typed result, a hand derivation."""

import csv
import json

import pytest
import yaml

from napkin.api import planning
from napkin.errors import NapkinError

# one sequence at a time, every step ≈ 100.4 ms (a 100 ms overhead plus the 0.6B model's
# roofline time on an H100): a replica serves a 10-token request in ≈ 1.004 s, μ ≈ 0.996/s
PLAN = {"name": "toy", "model": "qwen3-0.6b", "calibration": "roofline",
        "step_overhead_ms": 100,
        "workload": {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                     "arrivals": {"kind": "windows", "spacing": "even",
                                  "windows": [{"duration_s": 60, "rate_per_s": 1.5}]}},
        "slo": {"ttft_s": 2.0, "tpot_s": 1.0, "share": 0.9},
        "search": {"gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2, 3],
                   "max_num_seqs": [1]}, "seeds": 1}


def _timeless(data: object) -> object:
    """The payload without the wall-clock seconds (``wall_s``, each evaluation's ``sim_s``)."""
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if k not in ("wall_s", "sim_s")}
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    return data


def test_plan_of_a_mapping_matches_the_cli_on_its_file(cli, tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    seen = []
    r = planning.plan(PLAN, jobs=1, export=tmp_path / "all.csv",
                      progress=lambda done, total: seen.append((done, total)))
    _, out, _ = cli("plan", str(path), "--jobs", "1", "--format", "json")
    assert _timeless(r.data) == _timeless(json.loads(out))
    assert seen[-1][0] == seen[-1][1]
    # 1.5 requests/s overloads one replica (μ ≈ 0.996/s), two carry it: 2 H100s at the
    # catalog's $3.00 per GPU-hour (tests/cli/test_plan_cli.py)
    best = r.value.cheapest
    assert best.candidate.replicas == 2 and best.usd_per_hour == pytest.approx(6.0)
    assert r.data["cheapest"]["replicas"] == 2
    rows = list(csv.DictReader((tmp_path / "all.csv").open()))
    assert len(rows) == len(r.value.evaluations) == 3


def test_plan_exports_json_and_draws(tmp_path):
    r = planning.plan(PLAN, jobs=1, top=1, export=tmp_path / "all.json")
    assert len(json.loads((tmp_path / "all.json").read_text())) == 3
    assert r.plot(tmp_path / "pareto.png").stat().st_size > 10_000


def test_plan_errors_name_the_field(tmp_path):
    with pytest.raises(NapkinError, match=r"^plan: field slo.share"):
        planning.plan({**PLAN, "slo": {"share": 2}}, jobs=1)
    with pytest.raises(NapkinError, match=r"^export:"):
        planning.plan(PLAN, jobs=1, export=tmp_path / "all.txt")
    with pytest.raises(NapkinError, match=r"^executor:"):
        planning.plan(PLAN, jobs=1, executor="dask")  # type: ignore[arg-type]
    with pytest.raises(NapkinError, match=r"^ray-address:"):
        planning.plan(PLAN, jobs=1, ray_address="x:1")
    with pytest.raises(NapkinError, match=r"^top:"):
        planning.plan(PLAN, jobs=1, top=0)
