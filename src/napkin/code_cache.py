"""Compiled Python code kept between processes: :mod:`marshal` files in napkin's own
``__pycache__`` folder, next to the ``.pyc`` files Python keeps there (numba keeps its machine
code the same way).

A file is read whole or not at all (absent, unreadable or damaged: None, and the caller compiles
again) and written whole: to a temporary file in the same folder, renamed over the old one, so
that a process reading it meanwhile sees the old file or the new one, never half of one. A
folder that cannot be written (a read-only install) keeps nothing. Files are readable by every
user of the install (mode 0644), as ``.pyc`` files are.
"""

import marshal
import os
from pathlib import Path

FOLDER = Path(__file__).parent / "__pycache__"
"""napkin's own ``__pycache__``, where the files are kept."""


def read(path: Path | None) -> object | None:
    """The value marshalled in ``path`` (None: no path, or a file absent, unreadable or not a
    marshalled value)."""
    if path is None:
        return None
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def write(path: Path | None, value: object) -> None:
    """Marshal ``value`` (code objects and the plain values holding them) to ``path`` whole, or
    write nothing where its folder cannot be written."""
    if path is None:
        return
    import tempfile  # (only a process that compiled something writes)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(value))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except (OSError, ValueError):
        Path(tmp).unlink(missing_ok=True)
