"""YAML text to data with a safe loader: libyaml's C parser when PyYAML was built with it (the
accelerator catalog parses in 9.5 ms instead of 44 ms), else PyYAML's pure-Python one. Both
build the same plain data (dicts, lists, strings, numbers, booleans, None).

Before parsing, the text's nesting is measured and refused past :data:`MAX_DEPTH` levels: the
C parser recurses once per level and a document nested tens of thousands deep kills the
interpreter (a segmentation fault, no exception to catch). The depth counts flow brackets
(``[`` ``{``, open minus closed: JSON's nesting too) plus block nesting (indentation levels
and ``- `` items started on one line); a bracket inside a quoted string counts as well, so the
measure can only err high.
"""

import json
import re
from typing import Any

import yaml

from napkin.errors import NapkinError

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DEPTH = 200
"""Deepest nesting read (napkin's own files nest under 10 levels)."""

_BRACKETS = re.compile(r"[\[\]{}]")
_LINE = re.compile(r"^([ \t]*)((?:-[ \t]+)*)(\S?)", re.M)


def nesting_depth(text: str) -> int:
    """An upper bound of ``text``'s YAML/JSON nesting (module docstring)."""
    depth = flow = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "[{":
            depth += 1
            flow = max(flow, depth)
        else:
            depth = max(depth - 1, 0)
    stack: list[int] = []
    block = 0
    for m in _LINE.finditer(text):
        if not m.group(3) or m.group(3) == "#":
            continue  # blank or comment lines do not nest
        indent = len(m.group(1))
        while stack and stack[-1] >= indent:
            stack.pop()
        stack.append(indent)
        block = max(block, len(stack) + m.group(2).count("-"))
    return flow + block


def check_nesting(text: str, what: str) -> None:
    """Refuse ``text`` nested past :data:`MAX_DEPTH` levels, naming ``what``."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise NapkinError(f"{what}: nested about {depth:,} levels deep; at most {MAX_DEPTH} "
                          "are read")


def load_yaml(text: str, what: str = "YAML") -> Any:
    """The data of YAML (or JSON) ``text``; malformed text raises :class:`yaml.YAMLError`,
    text nested past :data:`MAX_DEPTH` a :class:`NapkinError` naming ``what``."""
    check_nesting(text, what)
    return yaml.load(text, Loader=_LOADER)


def load_json(text: str, what: str = "JSON") -> Any:
    """The data of JSON ``text`` (nesting checked as for YAML); malformed text raises
    :class:`json.JSONDecodeError`."""
    check_nesting(text, what)
    return json.loads(text)
