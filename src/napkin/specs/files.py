"""Reading spec files (workloads, scenarios, trajectories): YAML in, one-line errors out."""

import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationError

from napkin.errors import NapkinError
from napkin.specs.yaml_text import load_yaml

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
"""Figure formats every ``--plot`` writes (matplotlib picks the format from the suffix)."""


class InputModel(BaseModel):
    """Base of every file-format model (workload, scenario, trajectory, plan): unknown keys are
    refused, values frozen, and every float finite (``.inf``, ``.nan`` refused by field)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


MAX_FILE_BYTES = 64 * 2**20
"""Largest spec file read (a scenario, plan, workload, trajectory, config.json: kilobytes)."""


def read_text(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES,
              encoding: str = "utf-8") -> str:
    """A regular file's UTF-8 text, at most ``limit`` bytes: a device, a pipe or a folder is
    refused by name (``/dev/zero`` would never end), as is a file past the cap; missing,
    unreadable and non-UTF-8 files raise as :meth:`Path.read_text` does."""
    p = Path(path)
    if p.exists() and not p.is_file():
        kind = "a folder" if p.is_dir() else "not a regular file"
        raise NapkinError(f"{what}: {str(path)!r} is {kind}")
    if p.exists() and p.stat().st_size > limit:
        raise NapkinError(f"{what}: {str(path)!r} is {p.stat().st_size:,} bytes; at most "
                          f"{limit:,} are read")
    return p.read_text(encoding=encoding)


def read_user_text(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_text` with every way a user's file can fail to read (missing, a folder,
    no permission, not UTF-8, any other OS error) as one :class:`NapkinError` naming
    ``what``."""
    name = str(path)
    try:
        return read_text(path, what, limit)
    except FileNotFoundError:
        raise NapkinError(f"{what}: no such file {name!r}") from None
    except IsADirectoryError:
        raise NapkinError(f"{what}: {name!r} is a folder, not a file") from None
    except PermissionError:
        raise NapkinError(f"{what}: {name!r} cannot be read (permission denied)") from None
    except UnicodeDecodeError:
        raise NapkinError(f"{what}: {name!r} is not UTF-8 text") from None
    except OSError as e:
        raise NapkinError(f"{what}: cannot read {name!r} ({e.strerror or e})") from None


def read_yaml(path: str | Path, what: str = "file") -> Any:
    """A YAML (or JSON) file's data; a missing or malformed file is one :class:`NapkinError`."""
    try:
        return load_yaml(read_user_text(path, what), str(path))
    except RecursionError:
        raise NapkinError(f"{path}: nested too deeply to read") from None
    except yaml.YAMLError as e:
        raise NapkinError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None


def tagged(key: str, *members: type[BaseModel]) -> Any:
    """A union of ``members`` told apart by ``key`` (each member's ``Literal`` field). A value
    without the key, or with an unknown one, is refused listing the allowed kinds."""
    tags = [get_args(m.model_fields[key].annotation)[0] for m in members]
    allowed = ", ".join(repr(t) for t in tags)

    def tag_of(value: Any) -> str | None:
        found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
        return found if found in tags else None

    union = reduce(operator.or_, (Annotated[m, Tag(t)] for m, t in zip(members, tags, strict=True)))
    return Annotated[union, Discriminator(tag_of, custom_error_type="union_tag",
                                          custom_error_message=f"{key} must be one of {allowed}")]


def _holds(data: Any, part: Any) -> bool:
    if isinstance(data, dict):
        return part in data
    return isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)


def _field_path(data: Any, err: Any) -> list[str]:
    """The parts of an error's ``loc`` that are keys (or indices) of the user's data, plus the
    missing key itself: pydantic adds union members (``str``, ``constrained-int``,
    ``Workload``) and tags that the file does not have."""
    path: list[str] = []
    for part in err["loc"]:
        if _holds(data, part):
            data = data[part]
            path.append(str(part))
    if err["type"] == "missing" and err["loc"]:
        path.append(str(err["loc"][-1]))
    return path


def _mismatch(err: Any) -> bool:
    """A union member that does not take this kind of value at all (an int member shown a
    mapping): its error loses to a member that took the value and found a real problem."""
    if err["type"] == "union_tag":
        return not isinstance(err.get("input"), dict)
    return err["type"].endswith(("_type", "_parsing"))


def validation_message(e: ValidationError, data: Any) -> str:
    """One line: the field path in the user's terms (``arrivals.windows.0.duration_s``) and
    the message. Of a union's errors, the one reaching deepest into ``data`` wins (the inline
    mapping's real error over "not a string", a distribution's bad key over "not an int"),
    then one from a member that took the value's type."""
    errors = e.errors()
    paths = [_field_path(data, x) for x in errors]
    rank = [(len(p), not _mismatch(x)) for x, p in zip(errors, paths, strict=True)]
    err, loc = next((x, p) for x, p, r in zip(errors, paths, rank, strict=True)
                    if r == max(rank))
    value = err.get("input")
    shown = f" (got {value!r})" if isinstance(value, int | float | str) else ""
    return f"field {'.'.join(loc) or '(root)'}: {err['msg']}{shown}"


def check_output(path: str | Path, suffixes: tuple[str, ...], field: str | None) -> None:
    """Refuse, before any work, an output path that cannot be written as given: a wrong
    extension, a missing or read-only folder, or an existing folder (``field`` None: the
    message starts at the path, for a CLI parser that names the flag itself)."""
    p = Path(path)
    at = f"{field}: " if field else ""
    if p.suffix.lower() not in suffixes:
        raise NapkinError(f"{at}{str(p)!r} must end in {', '.join(suffixes)}")
    if p.is_dir():
        raise NapkinError(f"{at}{str(p)!r} is a folder; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise NapkinError(f"{at}folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise NapkinError(f"{at}folder {str(folder)!r} is not writable")


def check_folder(path: str | Path, field: str) -> None:
    """Refuse, before any work, an output folder that cannot be written: an existing file, a
    missing parent (only the folder itself is created), or a read-only place."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise NapkinError(f"{field}: {str(p)!r} is a file; give a folder")
    where = p if p.is_dir() else (p.parent if str(p.parent) else Path("."))
    if not where.is_dir():
        raise NapkinError(f"{field}: folder {str(where)!r} does not exist")
    if not os.access(where, os.W_OK):
        raise NapkinError(f"{field}: folder {str(where)!r} is not writable")


def new_file_mode() -> int:
    """The mode ``open`` gives a new file: 0o666 less the process's umask (read by setting it
    and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_write(path: str | Path, what: str = "output") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename,
    on any failure (an error, Ctrl-C) it is removed: a reader never sees half a file. A folder
    that takes no files (``/proc``, a read-only mount) is one error naming ``what``. The file
    gets the mode a new file of ``open`` would (0o666 less the umask), not the temporary
    file's owner-only 0o600."""
    import tempfile  # (here: with ``random`` and ``hashlib`` ~3 ms of every start-up)

    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as e:
        raise NapkinError(f"{what}: cannot write {str(target)!r} ({e.strerror})") from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise NapkinError(f"{what}: cannot write {str(target)!r} ({e.strerror})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
