"""Choosing a profile's frontend queue among candidates, held out by group
(:mod:`napkin.validation.frontend_fit`): it recovers a frontend the rows were made with, and
picks none where the rows show no frontend."""

from dataclasses import replace

import pytest

from napkin.calibration.profile import load_profile
from napkin.errors import NapkinError
from napkin.timing.frontend import Frontend
from napkin.validation.calibrate import assumed
from napkin.validation.fit import predict
from napkin.validation.frontend_fit import fit_frontend, objective
from napkin.validation.sets import load_set

TRUTH = Frontend(response_s=0.05)
"""50 ms a response: a 20 requests/s ceiling, below what the engine serves at 64–128 clients."""


def _rows() -> list:
    """Four vLLM rows of Qwen3-32B at 64 and 128 clients, two tensor-parallel groups."""
    rows = [m for m in load_set("h100") if m.backend == "vllm" and m.model == "qwen3-32b"
            and m.harness.concurrency in (64, 128) and m.input_tokens == 1024
            and m.output_tokens == 128 and m.tensor_parallel in (4, 8)]
    assert len({m.tensor_parallel for m in rows}) == 2 and len(rows) == 4
    return rows


def test_it_recovers_the_frontend_the_rows_were_made_with():
    """Rows whose TTFT and TPOT are napkin's own replay under TRUTH: among none, 20 ms and
    TRUTH it picks TRUTH, whose error is 0, on every row and on each held-out group; the rows'
    TTFTs under TRUTH are longer than without a frontend (the ceiling binds)."""
    profile = load_profile("vllm")
    rows = assumed(_rows(), profile)
    made = predict(rows, replace(profile.model, frontend=TRUTH))
    measured = [replace(m, mean_ttft_s=p.ttft_s, mean_tpot_s=p.tpot_s)
                for m, p in zip(rows, made, strict=True)]
    plain = predict(rows, profile.model)
    assert all(p.ttft_s > 1.2 * q.ttft_s for p, q in zip(made, plain, strict=True))
    fit = fit_frontend(measured, profile, [None, Frontend(response_s=0.02), TRUTH])
    assert fit.chosen == TRUTH
    assert fit.errors[2] == 0.0 < fit.errors[1] < fit.errors[0]
    assert [p.ttft_s for p in fit.holdout] == [p.ttft_s for p in made]
    assert objective(fit.holdout) == 0.0


def test_it_needs_a_candidate():
    with pytest.raises(NapkinError, match="candidates"):
        fit_frontend(_rows(), load_profile("vllm"), [])
