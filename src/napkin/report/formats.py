"""The file-format reference, generated from the pydantic models that validate the files.

:func:`formats_markdown` renders every model reachable from the root of each format (workload,
scenario, trajectory, plan, and the ``config.json`` keys napkin reads) as one markdown table:
field, type (with its bounds), default and description. Descriptions are the fields'
``Field(description=...)`` or, as napkin writes them, the attribute docstrings under the field.
The documentation site builds its format page from it at build time (``docs/hooks.py``), so the
page cannot drift from the code.
"""

import ast
import inspect
import json
import math
import re
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class Format:
    """One file format: its title, the model at its root, and what reads it."""

    title: str
    root: type[BaseModel]
    intro: str


def formats() -> tuple[Format, ...]:
    """The documented formats, in page order."""
    from napkin.agents.trajectory import Trajectory
    from napkin.planning.spec import PlanFile
    from napkin.serving.scenario import Scenario
    from napkin.serving.workload import Workload
    from napkin.specs.hf_keys import HFConfig
    from napkin.training.record import RLRecord, TrainRecord

    return (
        Format("Workload file", Workload,
               "Request classes and one arrival process (`napkin serve demand | fluid`; the "
               "`workload` of a scenario or plan). Read by `napkin.serving.workload."
               "load_workload`."),
        Format("Scenario file", Scenario,
               "A workload on a model, GPU and engine, with an SLO (`napkin serve simulate | "
               "sweep`). Every field can be overridden with `--set key.sub=value`. Read by "
               "`napkin.serving.scenario.load_scenario`."),
        Format("Trajectory file", Trajectory,
               "One agent task as a DAG of steps, hand-written or logged (`napkin agent`). "
               "Read by `napkin.agents.trajectory.load_trajectory`."),
        Format("Plan file", PlanFile,
               "A model, a workload at its offered load, an SLO, a search space and prices "
               "(`napkin plan`). Read by `napkin.planning.spec.load_plan`."),
        Format("Model config.json", HFConfig,
               "The Hugging Face `config.json` keys napkin reads (`napkin model PATH`, and "
               "every `model` argument that is a path); other keys are kept but ignored."),
        Format("Training run record", TrainRecord,
               "A training run's inputs, replayed by `napkin train --run FILE` (options on the "
               "command line override the file). Read by `napkin.run_record`."),
        Format("RL run record", RLRecord,
               "An RL cycle's inputs, replayed by `napkin rl --run FILE`. Read by "
               "`napkin.run_record(path, kind='rl')`."),
    )


# ---------------------------------------------------------------- attribute docstrings


@cache
def _attribute_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` of the string literals written right under annotated fields."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    if not isinstance(body, ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    for stmt, following in zip(body.body, [*body.body[1:], None], strict=True):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


def description(model: type[BaseModel], name: str) -> str:
    """A field's description: ``Field(description=...)``, else its attribute docstring
    (looked up along the class's bases), else ``""``."""
    info = model.model_fields[name]
    if info.description:
        return inspect.cleandoc(info.description)
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and name in _attribute_docs(cls):
            return _attribute_docs(cls)[name]
    tags = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
    if len(tags) == 1 and info.is_required():  # the tag of a tagged union
        return f"`{name}: {tags[0]}` selects {model.__name__}."
    return ""


# ---------------------------------------------------------------- types


_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean",
            type(None): "null"}
_BOUNDS = ((annotated_types.Ge, "ge", "≥"), (annotated_types.Gt, "gt", ">"),
           (annotated_types.Le, "le", "≤"), (annotated_types.Lt, "lt", "<"))


def anchor(model: type[BaseModel]) -> str:
    """The heading id of a model's section."""
    return model.__name__.lower()


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, float) and 0 < value < 1e-3:
        exponent = round(math.log10(value))
        if value == 10.0**exponent:
            return f"10^{exponent}"
    if isinstance(value, int) and abs(value) >= 10_000:
        exponent = len(str(abs(value))) - 1
        if value == 10**exponent:
            return f"10^{exponent}"
        return f"{value:,}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _constraints(metadata: list[Any]) -> list[str]:
    found: list[str] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            found += _constraints(item.metadata)
            continue
        for kind, attr, sign in _BOUNDS:
            if isinstance(item, kind):
                found.append(f"{sign} {_number(getattr(item, attr))}")
        if isinstance(item, annotated_types.MinLen) and item.min_length:
            found.append(f"at least {item.min_length}")
        if isinstance(item, annotated_types.MaxLen):
            found.append(f"at most {item.max_length}")
    return found


def _members(annotation: Any) -> list[Any] | None:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return list(get_args(annotation))
    return None


def type_text(annotation: Any, metadata: list[Any] | None = None,
              link: bool = True) -> str:
    """Markdown for a field's type: scalars by their YAML names, bounds in parentheses,
    nested models as links to their sections."""
    bounds = _constraints(metadata or [])
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = get_args(annotation)
        return type_text(inner, [*extra, *(metadata or [])], link)
    members = _members(annotation)
    if members is not None:
        parts = [type_text(m, None, link) for m in members if m is not type(None)]
        text = " or ".join(parts)
        if bounds:
            text = f"{text} ({', '.join(bounds)})"
        return text + (" or null" if type(None) in members else "")
    if origin is Literal:
        text = " or ".join(f"`{json.dumps(v)}`" for v in get_args(annotation))
    elif origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        text = "list of " + (type_text(args[0], None, link) if args else "values")
    elif origin is dict:
        key, value = get_args(annotation)
        text = f"map of {type_text(key, None, link)} to {type_text(value, None, link)}"
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        text = (f"[{annotation.__name__}](#{anchor(annotation)})" if link
                else annotation.__name__)
    elif annotation in _SCALARS:
        text = _SCALARS[annotation]
    else:
        text = getattr(annotation, "__name__", str(annotation))
    return f"{text} ({', '.join(bounds)})" if bounds else text


def nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The models a field's type refers to, in order of appearance."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in get_args(annotation):
        if not isinstance(arg, FieldInfo):
            yield from nested_models(arg)


# ---------------------------------------------------------------- defaults


def default_text(info: FieldInfo) -> str:
    """The default as written in a file (``null``, ``true``, ``"auto"``, ``[1, 2]``), or
    *required*."""
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "*required*"
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "its defaults"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"`{_number(value)}`"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _aliases(info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(c) for c in alias.choices]
    return [alias] if isinstance(alias, str) else []


# ---------------------------------------------------------------- pages


def reachable(root: type[BaseModel],
              skip: frozenset[type[BaseModel]] = frozenset()) -> list[type[BaseModel]]:
    """``root`` and every model its fields refer to, depth first in field order, leaving out
    ``skip`` (models documented already) and what only they refer to."""
    seen: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in seen or model in skip:
            return
        seen.append(model)
        for info in model.model_fields.values():
            for nested in nested_models(info.annotation):
                visit(nested)

    visit(root)
    return seen


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def model_markdown(model: type[BaseModel], level: int = 3) -> str:
    """One model: a heading, its docstring, and a table of its fields."""
    lines = [f"{'#' * level} {model.__name__} {{#{anchor(model)}}}", ""]
    if model.__doc__:  # its own docstring, not an inherited one
        lines += [_rst(inspect.cleandoc(model.__doc__)), ""]
    lines += [f"`{model.__module__}.{model.__name__}`", ""]
    if model.model_config.get("extra") == "forbid":
        lines += ["Unknown keys are refused.", ""]
    lines += ["| field | type | default | description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        text = description(model, name)
        aliases = [a for a in _aliases(info) if a != name]
        if aliases:
            text = f"{text} Also read from: {', '.join(f'`{a}`' for a in aliases)}.".strip()
        lines.append(f"| `{name}` | {_cell(type_text(info.annotation, info.metadata))} | "
                     f"{default_text(info)} | {_cell(_rst(text))} |")
    return "\n".join(lines) + "\n"


def documented() -> list[tuple[Format, list[type[BaseModel]]]]:
    """Each format with the models its section documents: its root, then the models it refers
    to that no earlier section documents (those are linked)."""
    done: set[type[BaseModel]] = set()
    sections = []
    for fmt in formats():
        models = reachable(fmt.root, frozenset(done))
        done |= set(models)
        sections.append((fmt, models))
    return sections


def format_markdown(fmt: Format, models: list[type[BaseModel]]) -> str:
    """One format: its root model first, then the models it refers to."""
    parts = [f"## {fmt.title}", "", fmt.intro, ""]
    parts += [model_markdown(m) for m in models]
    return "\n".join(parts)


def trace_formats_markdown() -> str:
    """The trace formats a ``trace`` arrival process reads, from the docstring of
    :mod:`napkin.serving.traces` (a definition list of formats, then notes)."""
    from napkin.serving import traces

    paragraphs = (inspect.getdoc(traces) or "").split("\n\n")
    lines = ["## Trace files", "",
             "A workload's `arrivals: {kind: trace, format: ..., path: ...}` "
             "([TraceArrivals](#tracearrivals)) replays a public trace. The formats, as "
             "`napkin.serving.traces` reads them:", ""]
    listing = next((i for i, p in enumerate(paragraphs)
                    if any(line[:1].isspace() for line in p.splitlines())), len(paragraphs))
    entries: list[list[str]] = []
    for line in paragraphs[listing].splitlines() if listing < len(paragraphs) else []:
        if line and not line[0].isspace():
            entries.append([_rst(line.strip()) + ":"])
        elif entries:
            entries[-1].append(line.strip())
    lines += [f"- {_rst(' '.join(entry))}" for entry in entries]
    lines += [""] + [_rst(_cell(p)) + "\n" for p in paragraphs[listing + 1:]]
    return "\n".join(lines)


def _rst(text: str) -> str:
    """reStructuredText inline markup to markdown: ``code`` and :role:`target`."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


HEADER = """# File formats

Generated from the pydantic models that validate each file when the site is built
(`napkin.report.formats`), so it cannot drift from the code. Every file is YAML (or JSON);
bad input is refused with one line naming the field (see [Input limits](../input-limits.md)).
Sizes are validated at the boundary: *(≥ 0)* and the like are the bounds a value must meet.
"""


def formats_markdown() -> str:
    """The whole reference page."""
    parts = [HEADER]
    for fmt, models in documented():
        parts.append(format_markdown(fmt, models))
        if fmt.title == "Workload file":
            parts.append(trace_formats_markdown())
    return "\n".join(parts)


def undocumented_models() -> list[str]:
    """Public file-format models (``InputModel`` subclasses) no format reaches; a model added
    to a file format shows up here until a format refers to it."""
    from napkin.specs.files import InputModel

    covered = {m for _, models in documented() for m in models}

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    return sorted({f"{c.__module__}.{c.__name__}" for c in subclasses(InputModel)
                   if not c.__name__.startswith("_") and c not in covered})


def missing_descriptions() -> list[str]:
    """``Model.field`` of every documented field without a description."""
    return [f"{m.__name__}.{name}" for _, models in documented() for m in models
            for name in m.model_fields if not description(m, name)]
