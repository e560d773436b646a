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
requests (a large run, or a plan's or sweep's many small ones), and keeps each. Where the
source cannot be read (a source-less install) ``process`` itself runs: the same algorithm at
the tests' cost. ``tests/serving/test_pinned_runs.py`` runs every pinned run both ways.
"""

import ast
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from napkin.serving import scheduler
from napkin.serving.engine import Engine
from napkin.serving.scheduler import FEATURES, features

SPECIALISE_AFTER = 20_000
"""Requests a process simulates with :func:`~napkin.serving.scheduler.process` itself before it
compiles variants (about 0.6 s of simulation, whose 2 % is the ~15 ms a first variant costs)."""
_simulated = [0]  # requests simulated in this process so far


class _Constants(ast.NodeTransformer):
    """Every read of a name in ``values`` as that constant."""

    def __init__(self, values: dict[str, bool]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(ast.Constant(self.values[node.id]), node)
        return node


@cache
def _compiled(switches: tuple[bool, ...]) -> Callable[..., Any]:
    """``process`` with :data:`FEATURES` and ``sync`` (the last switch) as constants."""
    path = scheduler.__file__
    try:
        module = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, SyntaxError, ValueError):
        return scheduler.process
    found = [node for node in module.body
             if isinstance(node, ast.FunctionDef) and node.name == "process"]
    if len(found) != 1:
        return scheduler.process
    values = dict(zip((*FEATURES, "sync"), switches, strict=True))
    tree = ast.Module(body=[_Constants(values).visit(found[0])], type_ignores=[])
    namespace = dict(vars(scheduler))
    exec(compile(ast.fix_missing_locations(tree), path, "exec"), namespace)
    return namespace["process"]


def specialised(engine: Engine, sync: bool = False, requests: int = 0) -> Callable[..., Any]:
    """:func:`~napkin.serving.scheduler.process` for ``engine`` (and ``sync``), called with
    ``process``'s arguments: compiled for its features once this process has simulated
    :data:`SPECIALISE_AFTER` requests counting these ``requests``, else ``process`` itself."""
    _simulated[0] += requests
    if _simulated[0] < SPECIALISE_AFTER:
        return scheduler.process
    return _compiled((*features(engine), sync))
