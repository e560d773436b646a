"""The shipped example files the pages offer as presets: scenarios, plans, trajectories and
workloads (``examples/``)."""

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from napkin.errors import NapkinError


def presets_dir() -> Path:
    """The shipped scenario, workload, plan and trajectory files (``examples/``)."""
    return Path(str(resources.files("napkin.catalog").joinpath("scenarios")))


def _preset_kind(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    if "steps" in data:
        return "trajectory"
    if "search" in data:
        return "plan"
    if "arrivals" in data:
        return "workload"
    if "workload" in data:
        return "scenario"
    return None


def list_presets() -> dict[str, list[str]]:
    """Shipped files by kind: scenario, plan, trajectory, workload."""
    out: dict[str, list[str]] = {"scenario": [], "plan": [], "trajectory": [], "workload": []}
    for path in sorted(presets_dir().glob("*.yaml")):
        kind = _preset_kind(yaml.safe_load(path.read_text()))
        if kind is not None:
            out[kind].append(path.name)
    return out


def read_preset(name: str) -> dict[str, Any]:
    """A shipped file's text; a scenario's workload file's text with it when it names one."""
    names = {n for names in list_presets().values() for n in names}
    if name not in names:
        raise NapkinError(f"preset: no shipped file {name!r}; allowed: {', '.join(sorted(names))}")
    path = presets_dir() / name
    text = path.read_text()
    data = yaml.safe_load(text)
    out: dict[str, Any] = {"name": name, "kind": _preset_kind(data), "text": text,
                           "workload": None}
    ref = data.get("workload")
    if isinstance(ref, str) and (path.parent / ref).is_file():
        out["workload"] = {"name": ref, "text": (path.parent / ref).read_text()}
    return out
