"""No module over 600 lines: a module that grows past it holds more than one concept and is
split by concept (issue 39)."""

from pathlib import Path

import napkin

SRC = Path(napkin.__file__).parent
MOST_LINES = 600


def test_no_module_over_600_lines():
    sizes = {path.relative_to(SRC): len(path.read_text(encoding="utf-8").splitlines())
             for path in SRC.rglob("*.py")}
    over = sorted((n, str(p)) for p, n in sizes.items() if n > MOST_LINES)
    assert not over, (f"modules over {MOST_LINES} lines: "
                      + ", ".join(f"{p} ({n})" for n, p in reversed(over)))
