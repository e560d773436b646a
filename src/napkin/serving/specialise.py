"""The scheduler compiled for one engine's features: :func:`napkin.serving.scheduler.process`
with its feature switches as constants.

The scheduler is written once, each feature (prefix caching, recording, windows, static
batching, batch waiting, the receive interval, a host KV tier …) tested where it acts, so a
plain run pays those tests on every unit: about 2 % of its time. :func:`specialised` takes
``process``'s own source, replaces every read of a switch (:data:`FEATURES`, and ``sync``) with
the engine's value and compiles it under the same file name and line numbers (tracebacks and
coverage point at ``scheduler.py``), so that Python's compiler drops the branches of features
that are off. Reading, parsing and compiling the source takes about 15 ms, more than a small run
gains, so a process compiles variants only once it has simulated :data:`SPECIALISE_AFTER`
requests (a large run, or a plan's or sweep's many small ones), and keeps each. A variant it
compiles is also written to :data:`CACHE` (napkin's ``__pycache__``, as numba's machine
code is; keyed by the source, its path, the Python version and the switches), so that later
processes load it (~0.2 ms) and run it from their first request. Where the source cannot be
read (a source-less install) ``process`` itself runs: the same algorithm at the tests' cost.
``tests/serving/test_pinned_runs.py`` runs every pinned run both ways.
"""

import ast
import hashlib
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import CodeType
from typing import Any

from napkin import code_cache
from napkin.serving import scheduler
from napkin.serving.engine import Engine
from napkin.serving.scheduler import FEATURES, features

SPECIALISE_AFTER = 20_000
"""Requests a process simulates with :func:`~napkin.serving.scheduler.process` itself before it
compiles variants (about 0.6 s of simulation, whose 2 % is the ~15 ms a first variant costs)."""
_simulated = [0]  # requests simulated in this process so far
CACHE: Path | None = code_cache.FOLDER
"""Where compiled variants are kept between processes (None: nowhere; a folder that cannot be
written keeps none)."""
_warm: dict[tuple[Path | None, tuple[bool, ...]], bool] = {}  # a variant on disk, by switches


class _Constants(ast.NodeTransformer):
    """Every read of a name in ``values`` as that constant."""

    def __init__(self, values: dict[str, bool]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(ast.Constant(self.values[node.id]), node)
        return node


@cache
def _source_key() -> str | None:
    """A digest of ``scheduler.py`` (its bytes and path) and the interpreter's version: a
    cached variant is this source compiled by this Python (None: no source to read)."""
    try:
        source = Path(scheduler.__file__).read_bytes()
    except OSError:
        return None
    tag = f"{scheduler.__file__}|{sys.implementation.cache_tag}".encode()
    return hashlib.sha256(source + b"\0" + tag).hexdigest()[:20]


def _cached(switches: tuple[bool, ...]) -> Path | None:
    """The file of the variant for ``switches`` in :data:`CACHE` (None: no cache, no source)."""
    key = _source_key()
    if CACHE is None or key is None:
        return None
    return CACHE / f"scheduler-process.{key}.{''.join('01'[s] for s in switches)}.marshal"


@cache
def _compiled(switches: tuple[bool, ...]) -> Callable[..., Any]:
    """``process`` with :data:`FEATURES` and ``sync`` (the last switch) as constants, loaded
    from :data:`CACHE` or compiled (and stored there)."""
    path = _cached(switches)
    code = code_cache.read(path)
    if not isinstance(code, CodeType):
        code = _compile(switches)
        if code is None:
            return scheduler.process
        code_cache.write(path, code)
    namespace = dict(vars(scheduler))
    exec(code, namespace)
    return namespace["process"]


def _compile(switches: tuple[bool, ...]) -> CodeType | None:
    """The module that defines ``process`` with the switches' values (None: no source)."""
    path = scheduler.__file__
    try:
        module = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, SyntaxError, ValueError):
        return None
    found = [node for node in module.body
             if isinstance(node, ast.FunctionDef) and node.name == "process"]
    if len(found) != 1:
        return None
    values = dict(zip((*FEATURES, "sync"), switches, strict=True))
    tree = ast.Module(body=[_Constants(values).visit(found[0])], type_ignores=[])
    return compile(ast.fix_missing_locations(tree), path, "exec")


def specialised(engine: Engine, sync: bool = False, requests: int = 0) -> Callable[..., Any]:
    """:func:`~napkin.serving.scheduler.process` for ``engine`` (and ``sync``), called with
    ``process``'s arguments: compiled for its features where a variant for them is in
    :data:`CACHE` or once this process has simulated :data:`SPECIALISE_AFTER` requests counting
    these ``requests``, else ``process`` itself."""
    _simulated[0] += requests
    switches = (*features(engine), sync)
    if _simulated[0] < SPECIALISE_AFTER:
        key = (CACHE, switches)
        warm = _warm.get(key)
        if warm is None:
            path = _cached(switches)
            warm = _warm[key] = path is not None and path.is_file()
        if not warm:
            return scheduler.process
    return _compiled(switches)
