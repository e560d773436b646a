"""Dependencies point one way: units → stats → specs → accounting → timing → calibration →
inference → serving → validation → … → planning → examples → report → cli. The core never
imports rendering or CLI libraries."""

import ast
from pathlib import Path

import napkin

SRC = Path(napkin.__file__).parent
ORDER = ["errors", "units", "stats", "evaluation", "results_files", "specs", "retrieval",
         "catalog",
         "accounting", "timing",
         "calibration", "inference", "serving", "validation", "training", "reinforcement",
         "economics", "agents", "media", "scaling", "planning",
         "examples", "report", "api", "web",
         "cli"]
CORE_FORBIDDEN = {"rich", "typer", "click", "matplotlib"}


def _layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_imports_point_one_way():
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        layer = rel.parts[0] if len(rel.parts) > 1 or rel.parts[0] != "__init__" else None
        if layer is None:
            continue
        layer = layer.removesuffix(".py")
        for name in _imports(path):
            if name.startswith("napkin."):
                target = name.split(".")[1]
                if ORDER.index(target) > ORDER.index(layer):
                    bad.append(f"{rel} imports {name}")
            elif (name.split(".")[0] in CORE_FORBIDDEN
                  and layer not in ("report", "api", "web", "cli")):
                bad.append(f"{rel} imports {name}")
    assert not bad, bad
