"""Per-request and time-series exports of a simulation (CSV; Parquet with pyarrow)."""

import importlib.util
import re
from pathlib import Path

import numpy as np

from napkin.errors import NapkinError
from napkin.serving.simulate import SimRun
from napkin.specs.files import atomic_write

REQUEST_COLUMNS = ("rid", "label", "engine", "arrival_s", "first_scheduled_s", "first_token_s",
                   "finish_s", "input_tokens", "output_tokens", "preemptions", "queue_wait_s",
                   "cached_tokens")


def request_columns(run: SimRun) -> dict[str, np.ndarray]:
    """Columns of the per-request table, with derived latencies (seconds)."""
    r = run.records
    cols = {name: getattr(r, name) for name in REQUEST_COLUMNS}
    cols["label"] = np.asarray([run.labels[i] for i in r.label])
    cols["ttft_s"] = r.first_token_s - r.arrival_s
    cols["e2e_s"] = r.finish_s - r.arrival_s
    multi = np.maximum(r.output_tokens - 1, 1)
    cols["tpot_s"] = np.where(r.output_tokens > 1, (r.finish_s - r.first_token_s) / multi, 0.0)
    return cols


def export_paths(names: list[str], folder: Path, parquet: bool) -> dict[str, tuple[Path, Path]]:
    """Each scenario's ``<name>.requests`` and ``<name>.timeseries`` files in ``folder``,
    checked before any run: two scenarios whose names give one file name are refused."""
    ext = "parquet" if parquet else "csv"
    if parquet and importlib.util.find_spec("pyarrow") is None:
        raise NapkinError("export: Parquet needs pyarrow (pip install pyarrow)")
    paths: dict[str, tuple[Path, Path]] = {}
    seen: dict[str, str] = {}
    for name in names:
        slug = _slug(name)
        if slug in seen:
            raise NapkinError(f"export: scenarios {seen[slug]!r} and {name!r} would write the "
                              f"same files ({slug}.*); give them different names")
        seen[slug] = name
        paths[name] = (folder / f"{slug}.requests.{ext}", folder / f"{slug}.timeseries.{ext}")
    return paths


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "scenario"


def write_table(cols: dict[str, np.ndarray], path: Path) -> Path:
    """CSV, or Parquet when ``path`` ends in ``.parquet``; written whole or not at all
    (:func:`~napkin.specs.files.atomic_write`). The folder itself is created if missing."""
    path.parent.mkdir(exist_ok=True)
    with atomic_write(path, "export") as tmp:
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({k: np.asarray(v) for k, v in cols.items()}), tmp)
        else:
            import csv  # (here: a simulation that exports nothing does not import it)

            names = list(cols)
            with tmp.open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(names)
                writer.writerows(zip(*(np.asarray(cols[n]).tolist() for n in names),
                                     strict=True))
    return path


def timeseries_columns(run: SimRun) -> dict[str, np.ndarray]:
    """Per engine and simulated unit end: time, KV blocks in use, running, waiting."""
    parts = {"engine": [], "t_s": [], "kv_blocks": [], "running": [], "waiting": []}
    for i, e in enumerate(run.engines):
        parts["engine"].append(np.full(len(e.series_t), i))
        parts["t_s"].append(np.asarray(e.series_t))
        parts["kv_blocks"].append(np.asarray(e.series_blocks))
        parts["running"].append(np.asarray(e.series_running))
        parts["waiting"].append(np.asarray(e.series_waiting))
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
