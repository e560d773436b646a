"""Dataclass methods compiled once per install, not once per process.

Python writes a dataclass's methods (``__init__``, ``__repr__``, ``__eq__`` and, for a frozen
class, ``__setattr__``, ``__delattr__`` and ``__hash__``) as source text when the class is
defined and compiles each text with :func:`exec` (3.11 and 3.12 one text a method, 3.13 one a
class): about 4M machine instructions a frozen class on 3.11. A ``napkin serve simulate``
process defines about 100 dataclasses (57 of them napkin's, the rest pydantic's and its helpers'):
290M instructions, a fifth of a 10-request run. A text depends only on the class's fields and
options, and the same text compiles to the same code. So the console script gives
:mod:`dataclasses` an ``exec`` of its own, :class:`Methods`, which runs the code compiled before
from the same text and compiles a text it has not seen as :func:`exec` would (file
``<string>``, no ``__future__`` flags inherited, the interpreter's optimisation level); at the
end of the run :meth:`Methods.save` adds what it compiled to the command's file in
:data:`napkin.code_cache.FOLDER` (keyed by the command, the bytecode's magic number and the
optimisation level). Only the console script installs it, in its own process: a program that
imports napkin keeps the standard library as it is.
"""

import builtins
import dataclasses
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from napkin import code_cache

MAX_TEXTS = 2048
"""Most method texts a command's file keeps (napkin's widest command, ``plan``, uses ~700);
past it, a save keeps only the texts its own run used, so that texts of classes since edited
do not pile up."""


def _table(value: object) -> dict[str, CodeType]:
    """``value`` if it is a table of method texts to their code, else an empty one (a damaged
    or foreign file is compiled afresh and replaced)."""
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, CodeType)
                                       for k, v in value.items()):
        return value
    return {}


class Methods:
    """An ``exec`` for :mod:`dataclasses` that compiles each method text once: the code of
    every text seen (read from ``path``, else compiled here), the texts this run used, and how
    many it compiled."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.code = _table(code_cache.read(path))
        self.used: set[str] = set()
        self.compiled = 0

    def __call__(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """:func:`exec` of ``source``, a text compiled once, as :mod:`dataclasses` runs it
        (no ``globals``: that module's own)."""
        if isinstance(source, str):
            code = self.code.get(source)
            if code is None:
                code = self.code[source] = compile(source, "<string>", "exec",
                                                   dont_inherit=True)
                self.compiled += 1
            self.used.add(source)
            source = code
        builtins.exec(source, vars(dataclasses) if globals is None else globals, locals)

    def save(self) -> None:
        """Write the table to ``path`` if this process compiled a text it did not have: all of
        it, or past :data:`MAX_TEXTS` only the texts this run used."""
        if self.compiled:
            if len(self.code) > MAX_TEXTS:
                self.code = {text: self.code[text] for text in self.used}
            code_cache.write(self.path, self.code)
            self.compiled = 0


def install(command: str) -> Methods:
    """Give :mod:`dataclasses` a :class:`Methods` as its ``exec`` for the rest of the process,
    with the table of ``command`` (a command or group name: each command defines its own set
    of classes)."""
    optimize = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"dataclass-methods.{command}.{MAGIC_NUMBER.hex()}{optimize}.marshal"
    methods = Methods(code_cache.FOLDER / name)
    dataclasses.exec = methods  # type: ignore[attr-defined]  # (shadows the builtin there)
    return methods
