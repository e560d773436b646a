"""No import circles: the modules of ``napkin`` import each other one way.

The graph has a node per module (a package's ``__init__`` is the package's own node) and an edge
for every napkin import a module runs when it loads: ``import``/``from`` statements outside
functions and outside ``if TYPE_CHECKING:`` blocks. ``from napkin.x import y`` points at the
submodule ``napkin.x.y`` where ``y`` is one, else at ``napkin.x``. Importing a submodule runs
its packages' ``__init__`` first, so the importer also points at each package above the target
that is not one of its own (its own are loading already when it runs).
"""

import ast
from functools import cache
from pathlib import Path

import napkin

SRC = Path(napkin.__file__).parent


def _name(path: Path) -> str:
    """The dotted module name of a source file (a package's ``__init__``: the package)."""
    parts = ("napkin", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _packages(module: str) -> set[str]:
    """The packages above ``module`` (``napkin.a.b`` → ``napkin``, ``napkin.a``)."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _type_checking(node: ast.If) -> bool:
    """Whether ``node`` is ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _load_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements among ``body`` that run when the module loads."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        elif isinstance(node, ast.If):
            if not _type_checking(node):
                found += _load_time_imports(node.body)
            found += _load_time_imports(node.orelse)
        else:  # class bodies, try/with/for blocks run at load time too
            for name in ("body", "orelse", "finalbody"):
                found += _load_time_imports(getattr(node, name, []))
            for handler in getattr(node, "handlers", []):
                found += _load_time_imports(handler.body)
    return found


@cache
def _graph() -> dict[str, set[str]]:
    """Every napkin module → the napkin modules it imports at load time."""
    files = {_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in _load_time_imports(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
                continue
            base = node.module or ""
            if node.level:  # relative: from the package, up level − 1
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names} & files.keys()
            targets |= subs or {base}
        own = _packages(module)
        graph[module] = {p for t in targets if t in files
                         for p in ({t} | _packages(t)) - own - {module} if p in files}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_graph_sees_load_time_imports_only():
    graph = _graph()
    reader = graph["napkin.calibration.measurements.aiconfigurator"]
    assert {"napkin.calibration.protocol", "napkin.calibration.measurements.records"} <= reader
    assert "napkin.calibration.measurements" in graph["napkin.calibration.protocol"]  # its package
    assert "napkin.specs.hf_keys" in graph["napkin.specs.deepseek_v4"]
    assert "napkin.specs.deepseek_v4" not in graph["napkin.specs.hf_config"]  # inside a function
    assert "napkin.agents.trajectory" not in graph["napkin.api.agents"]  # if TYPE_CHECKING


def test_cycle_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " → ".join(cycle or [])
