"""The API's validation boundary: every public function checks its arguments against its own
signature before any work.

:func:`checked` wraps a function of :mod:`napkin.api`; on each call its arguments are bound to
the signature (an unknown keyword is refused by name) and each is validated by a pydantic
``TypeAdapter`` of its annotation in strict mode: no coercion (``"16"`` is not an ``int``,
``True`` is not a number), floats finite, ``Literal`` values among those listed, the bounds of
``Annotated[…, Field(ge=…, le=…)]`` held, objects of napkin's own types by ``isinstance``.
Integers are bounded by :data:`MAX_INT` in magnitude (beyond it float arithmetic overflows).
A failure is one :class:`~napkin.errors.NapkinError` naming the keyword argument, what is
allowed and what was given. The arguments are passed on unchanged; the function's own checks
(ranges that depend on other arguments, files) follow.

The annotations are resolved on first call (``import napkin`` stays fast), in the function's
module with its ``if TYPE_CHECKING:`` block run, so the aliases written only for type checkers
(``PlanRef``, ``ModelRef``) are checked too. The CLI and the web server call these same
functions, so their bounds are this boundary's.
"""

import ast
import functools
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

from napkin import errors
from napkin.errors import NapkinError

MAX_INT = 2**53
"""Largest integer magnitude accepted (every integer below it is exact as a float)."""

def _field(name: str) -> str:
    """An argument's name as the caller wrote it: the CLI's flag (``prompt-len``) in a command
    line run (:data:`napkin.errors.state`), else the keyword (``prompt_len``)."""
    return name.replace("_", "-") if errors.state.flag_names else name

F = TypeVar("F", bound=Callable[..., Any])


def checked(fn: F) -> F:
    """``fn`` behind the boundary of the module docstring (signature and docs kept)."""
    sig = inspect.signature(fn)
    adapters: dict[str, Any] | None = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal adapters
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise NapkinError(_binding_error(fn, sig, e, kwargs)) from None
        if adapters is None:
            adapters = _adapters(fn, sig)
        for name, value in bound.arguments.items():
            check(name, value, adapters.get(name))
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def check(name: str, value: Any, adapter: Any) -> None:
    """Refuse ``value`` of argument ``name`` unless ``adapter`` (None: any type) accepts it and
    its integers are within :data:`MAX_INT`."""
    from pydantic import ValidationError

    if (big := _too_big(value)) is not None:
        raise NapkinError(f"{_field(name)}: integers must be at most {MAX_INT:,} in magnitude, "
                          f"got {_shown(big)}")
    if adapter is None:
        return
    try:
        adapter.validate_python(value)
    except ValidationError as e:
        raise NapkinError(_message(_field(name), value, adapter, e)) from None


def _too_big(value: Any, depth: int = 0) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) > MAX_INT else None
    if depth < 3 and isinstance(value, list | tuple):
        for v in value[:10_000]:
            if (big := _too_big(v, depth + 1)) is not None:
                return big
    return None


def _shown(value: Any) -> str:
    """A given value as an error quotes it: its repr cut to 40 characters, and its type."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        text = f"an integer of {len(str(abs(value))):,} digits"
    else:
        text = repr(value)
        text = text if len(text) <= 40 else text[:37] + "..."
    return f"{text} ({type(value).__name__})"


def _message(name: str, value: Any, adapter: Any, e: Any) -> str:
    errors = e.errors(include_url=False)
    first = errors[0]
    where = "".join(f"[{p}]" for p in first["loc"] if isinstance(p, int))
    members = {str(err["loc"][0]) for err in errors if err["loc"]}
    if len(errors) > 1 and len(members) > 1:  # a union: every member refused it
        allowed = _type_text(getattr(adapter, "_annotation", None))
        return f"{name}: must be {allowed}, got {_shown(value)}"
    msg = first["msg"].replace("Input should be", "must be").replace("Value error, ", "")
    given = first.get("input", value)
    item = f" (item {where})" if where else ""
    return f"{name}: {msg}{item}, got {_shown(given)}"


def _type_text(annotation: Any) -> str:
    """A readable list of what a union allows: ``a str, a Path or a ModelSpec``."""
    names = []
    for member in get_args(annotation) or (annotation,):
        origin = get_origin(member)
        base = origin if origin is not None else member
        if member is type(None):
            names.append("None")
        elif isinstance(base, type):
            names.append(getattr(base, "__name__", str(base)))
        else:
            names.append(str(member).replace("typing.", ""))
    names = list(dict.fromkeys(names))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _binding_error(fn: Callable, sig: inspect.Signature, e: TypeError,
                   kwargs: Mapping[str, Any]) -> str:
    allowed = [p for p in sig.parameters if not p.startswith("_")]
    unknown = [k for k in kwargs if k not in sig.parameters]
    if unknown:
        return (f"{unknown[0]}: not an argument of napkin.{fn.__name__}; allowed: "
                f"{', '.join(allowed)}")
    text = str(e)
    missing = [p for p in allowed if f"'{p}'" in text]
    if "missing" in text and missing:
        return f"{missing[0]}: required by napkin.{fn.__name__}"
    return f"{fn.__name__}: {text}"


def _adapters(fn: Callable, sig: inspect.Signature) -> dict[str, Any]:
    """A strict TypeAdapter per annotated parameter (None where the annotation cannot be
    resolved or checked: the function's own checks apply)."""
    from pydantic import ConfigDict, TypeAdapter

    config = ConfigDict(strict=True, arbitrary_types_allowed=True, allow_inf_nan=False)
    names = _namespace(fn.__module__)
    out: dict[str, Any] = {}
    for name, p in sig.parameters.items():
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            continue
        try:
            resolved = eval(ann, names) if isinstance(ann, str) else ann
            adapter = TypeAdapter(resolved, config=config)
            if adapter.rebuild(_types_namespace=names) is False:  # forward refs unresolved
                continue
        except Exception:  # an annotation pydantic cannot check: left to the function
            continue
        adapter._annotation = resolved  # what a union's error lists
        out[name] = adapter
    return out


_TYPE_CHECKING = re.compile(r"^if TYPE_CHECKING:[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.M)
"""A module's top-level ``if TYPE_CHECKING:`` line and its indented body (group 1)."""


@cache
def _namespace(module_name: str) -> dict[str, Any]:
    """The module's globals with its top-level ``if TYPE_CHECKING:`` blocks run (their imports
    and the aliases they define). Only the blocks are parsed, not the whole module (a serve
    run's start-up)."""
    module = sys.modules[module_name]
    names = dict(vars(module))
    for block in _TYPE_CHECKING.finditer(inspect.getsource(module)):
        for stmt in ast.parse(textwrap.dedent(block.group(1))).body:
            # each alone: one stale import does not hide the rest
            one = ast.Module(body=[stmt], type_ignores=[])
            try:
                exec(compile(one, module.__file__ or module_name, "exec"), names)
            except Exception:
                continue
    return names
