"""The same plan twice prints the same bytes: JSON, tables and every export format (wall-clock
figures only in the ``timing`` block, shown on request)."""

import pytest

import napkin
from napkin.report.render import render

PLAN = {
    "name": "toy", "model": "qwen3-0.6b", "calibration": "vllm",
    "workload": {"seed": 0, "classes": {"a": {"input_tokens": 256, "output_tokens": 16}},
                 "arrivals": {"kind": "poisson", "rate_per_s": 8, "duration_s": 10}},
    "slo": {"ttft_s": 0.5, "tpot_s": 0.05, "share": 0.9},
    "search": {"gpus": ["h100-sxm", "h200"], "tensor_parallel": [1], "replicas": [1, 2],
               "max_num_seqs": [16]},
    "seeds": 2}


@pytest.mark.parametrize("suffix", [".json", ".csv", ".parquet"])
def test_a_plan_twice_gives_the_same_bytes(tmp_path, suffix):
    first, second = (napkin.plan(PLAN, jobs=1, export=tmp_path / f"{k}{suffix}")
                     for k in ("a", "b"))
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    assert first.to_json() == second.to_json()
    assert render(first.document, "table", width=200) == render(second.document, "table",
                                                                width=200)
    assert "timing" not in first.data and "wall" not in first.to_json()
    timed = render(first.document, "json", timing=True)
    assert '"timing"' in timed and '"wall_s"' in timed
