"""Reading spec files (workloads, scenarios, trajectories): YAML in, one-line errors out."""

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from napkin.errors import NapkinError


def read_yaml(path: str | Path, what: str = "file") -> Any:
    """A YAML (or JSON) file's data; a missing or malformed file is one :class:`NapkinError`."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise NapkinError(f"{what}: no such file {str(path)!r}") from None
    except IsADirectoryError:
        raise NapkinError(f"{what}: {str(path)!r} is a folder, not a file") from None
    except PermissionError:
        raise NapkinError(f"{what}: {str(path)!r} cannot be read (permission denied)") from None
    except UnicodeDecodeError:
        raise NapkinError(f"{what}: {str(path)!r} is not UTF-8 text") from None
    except RecursionError:
        raise NapkinError(f"{path}: nested too deeply to read") from None
    except yaml.YAMLError as e:
        raise NapkinError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None


def validation_message(e: ValidationError) -> str:
    """One line: the first error's field path (``arrivals.windows.0.duration_s``) and message.
    Where a field takes a path or an inline mapping (``str | Workload``), the inline branch's
    error wins over "not a string"; union member names (``Workload``) leave the path."""
    errors = e.errors()
    inline = [x for x in errors if x["type"] != "string_type"]
    err = inline[0] if inline and len(errors) > 1 else errors[0]
    loc = ".".join(str(p) for p in err["loc"]
                   if not str(p).startswith(("function-", "tagged")) and not str(p)[:1].isupper())
    value = err.get("input")
    shown = f" (got {value!r})" if isinstance(value, int | float | str) else ""
    return f"field {loc or '(root)'}: {err['msg']}{shown}"


def check_output(path: str | Path, suffixes: tuple[str, ...], field: str) -> None:
    """Refuse, before any work, an output path that cannot be written as given: a wrong
    extension, a missing or read-only folder, or an existing folder."""
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise NapkinError(f"{field}: {str(p)!r} must end in {', '.join(suffixes)}")
    if p.is_dir():
        raise NapkinError(f"{field}: {str(p)!r} is a folder; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise NapkinError(f"{field}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise NapkinError(f"{field}: folder {str(folder)!r} is not writable")
