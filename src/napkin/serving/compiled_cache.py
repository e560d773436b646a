"""numba's on-disk caches of the compiled core, kept consistent across its modules.

numba keys a function's cache on its own source file, but a cached function holds the machine
code of the compiled functions it calls from other modules: after one of those changed (an edit,
or a napkin whose ``compiled_core`` moved on while ``compiled_routing`` did not), the caller's
cache would still load, and run the old callee over the new state's layout — a crash, not an
error. So the caches of every compiled function the core uses are dropped together whenever
any of their sources differs from the sources they were written for: a digest of those sources
is kept beside the caches (``napkin-compiled.sha256`` in each cache folder), checked once a
process before the core first runs.
"""

import hashlib
import inspect
from pathlib import Path
from types import ModuleType

MARKER = "napkin-compiled.sha256"
"""The file in each cache folder that names the sources its caches were written for."""
_checked = [False]


def check() -> None:
    """Drop the core's cached machine code where it was compiled from other sources (once a
    process; a cache folder that cannot be read or written is left alone)."""
    if _checked[0]:
        return
    _checked[0] = True
    from numba.core.registry import CPUDispatcher

    from napkin.serving import compiled_core, compiled_heap, compiled_routing, compiled_timing

    modules: tuple[ModuleType, ...] = (compiled_core, compiled_heap, compiled_routing,
                                       compiled_timing)
    dispatchers = [v for m in modules for v in vars(m).values() if isinstance(v, CPUDispatcher)]
    sources = sorted({Path(inspect.getfile(d.py_func)) for d in dispatchers})
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    stems: dict[Path, set[str]] = {}
    for d in dispatchers:
        folder = getattr(getattr(d, "_cache", None), "_cache_path", None)
        if folder is not None:
            stems.setdefault(Path(folder), set()).add(Path(inspect.getfile(d.py_func)).stem)
    for folder, names in stems.items():
        _refresh(folder, names, digest.hexdigest())


def _refresh(folder: Path, stems: set[str], digest: str) -> None:
    """In ``folder``, the cache files of the modules ``stems`` deleted unless the folder's
    marker names ``digest``; the marker then written."""
    marker = folder / MARKER
    try:
        if marker.is_file() and marker.read_text() == digest:
            return
        for stem in stems:
            for stale in (*folder.glob(f"{stem}.*.nbi"), *folder.glob(f"{stem}.*.nbc")):
                stale.unlink(missing_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        marker.write_text(digest)
    except OSError:
        return
