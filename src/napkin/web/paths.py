"""Which server files a web request may name.

A request is text typed or uploaded by someone who need not be on the server's machine, so it
may name only files the server was given to serve: its uploads folder, the data folder it was
started on (``napkin web --data DIR``) and the shipped example files. Every value of a field
that holds a file — a scenario's or plan's ``workload`` and a trace's ``path`` whatever they
hold, a ``model``, ``teacher``, ``reward_model`` or ``calibration`` that looks like a path
(a separator, ``~``, a leading dot, or a file suffix) — in the parsed YAML, the form fields and
the ``--set`` overrides is resolved before the API sees it: a relative name is looked up in
those folders in turn and replaced by its absolute path there; an absolute path must lie inside
one of them (after links are followed). Anything else is refused by field, quoting only the
value given — the same refusal whether or not the file exists, and nothing of any file read.
"""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from napkin.errors import NapkinError
from napkin.specs.yaml_text import load_yaml

ALWAYS_PATHS = frozenset({"workload", "path"})
"""Keys whose string value is always a file name."""
MAYBE_PATHS = frozenset({"model", "teacher", "reward_model", "calibration"})
"""Keys whose string value is a catalog name unless it looks like a path."""
SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv", ".parquet", ".txt", ".log")


def looks_like_path(text: str) -> bool:
    t = text.strip()
    return ("/" in t or "\\" in t or t.startswith(("~", ".")) or
            t.lower().endswith(SUFFIXES))


class PathGuard:
    """Resolves file names of a request against the folders ``roots()`` gives."""

    def __init__(self, roots: Callable[[], Sequence[Path]]) -> None:
        self.roots = roots

    def resolve(self, field: str, text: str) -> str:
        """The absolute path of ``text`` inside an allowed folder (module docstring)."""
        roots = [r.resolve() for r in self.roots() if r is not None]
        given = Path(text)
        candidates = [given] if given.is_absolute() else [r / given for r in roots]
        for c in candidates:
            real = c.resolve()
            if any(real.is_relative_to(r) for r in roots) and real.is_file():
                return str(real)
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise NapkinError(f"{field}: {shown!r} is not a file this server may read: upload it, "
                          "or name a file in the data folder the server was started on "
                          "(napkin web --data DIR) or a shipped example")

    def value(self, field: str, value: Any) -> Any:
        """A form field's value: resolved when it holds a file (``field``'s last part)."""
        key = field.rsplit(".", 1)[-1]
        if isinstance(value, str) and value.strip() and (
                key in ALWAYS_PATHS or (key in MAYBE_PATHS and looks_like_path(value))):
            return self.resolve(field, value.strip())
        return value

    def walk(self, data: Any, field: str = "") -> Any:
        """``data`` (parsed YAML) with every file name resolved (a new structure)."""
        if isinstance(data, dict):
            return {k: (self.value(f"{field}.{k}".lstrip("."), v) if isinstance(v, str)
                        else self.walk(v, f"{field}.{k}".lstrip(".")))
                    for k, v in data.items()}
        if isinstance(data, list):
            return [self.walk(v, f"{field}[{i}]") for i, v in enumerate(data)]
        return data

    def overrides(self, items: list[str]) -> list[str]:
        """``--set`` items with the file names in their values resolved."""
        import json

        out = []
        for item in items:
            key, sep, raw = item.partition("=")
            if not sep:
                out.append(item)
                continue
            parsed = load_yaml(raw, f"set: {key}") if raw.strip() else raw
            resolved = (self.value(key.strip(), parsed) if isinstance(parsed, str)
                        else self.walk(parsed, key.strip()))
            out.append(item if resolved == parsed else f"{key}={json.dumps(resolved)}")
        return out
