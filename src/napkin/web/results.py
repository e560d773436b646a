"""API results as the pages read them: the title, the JSON payload and the printed tables, and a
simulation's time series and latency CDFs thinned for plotting."""

from collections.abc import Sequence
from typing import Any

from napkin.api.result import Result

MAX_POINTS = 4000
"""Most points of one time series or CDF sent to a page (evenly thinned beyond)."""


def result_json(result: Result, **extra: Any) -> dict[str, Any]:
    """The result as the pages read it: title, the JSON payload, the printed tables."""
    tables = [{"title": s.title, "columns": list(s.columns), "rows": [list(r) for r in s.rows],
               "notes": list(s.notes)} for s in result.document.sections]
    return {"title": result.title, "data": result.data, "tables": tables,
            "timing": result.document.timing, **extra}


def _thin(n: int, most: int = MAX_POINTS) -> Any:
    """Indices of at most ``most`` evenly spread points of ``n`` (first and last kept)."""
    import numpy as np

    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(int))


def _finite(values: Any) -> list[float]:
    import numpy as np

    v = np.asarray(values, dtype=float)
    return np.where(np.isfinite(v), v, 0.0).tolist()


def _cdf(values: Any) -> dict[str, list[float]]:
    """The empirical CDF of ``values`` (sorted values, share of values ≤ each)."""
    import numpy as np

    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    if not len(v):
        return {"x": [], "y": []}
    idx = _thin(len(v))
    return {"x": v[idx].tolist(), "y": ((idx + 1) / len(v)).tolist()}


def run_series(runs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Per simulated scenario: each engine's waiting and running requests and KV blocks in use
    over time, and the CDFs of TTFT, TPOT and end-to-end latency (the figures of ``napkin serve
    simulate --plot``), thinned to at most :data:`MAX_POINTS` points each."""
    import numpy as np

    from napkin.report.export import request_columns

    out = []
    for name, run in runs:
        engines = []
        for e in run.engines:
            idx = _thin(len(e.series_t))
            engines.append({
                "name": e.name, "kv_blocks": int(e.spec.num_blocks),
                "t_s": _finite(np.asarray(e.series_t, dtype=float)[idx]),
                "waiting": np.asarray(e.series_waiting, dtype=int)[idx].tolist(),
                "running": np.asarray(e.series_running, dtype=int)[idx].tolist(),
                "kv_blocks_used": np.asarray(e.series_blocks, dtype=int)[idx].tolist()})
        cols = request_columns(run)
        multi = np.asarray(cols["output_tokens"]) > 1
        out.append({"name": name, "engines": engines,
                    "cdf": {"ttft_s": _cdf(cols["ttft_s"]),
                            "tpot_s": _cdf(np.asarray(cols["tpot_s"])[multi]),
                            "e2e_s": _cdf(cols["e2e_s"])}})
    return out
