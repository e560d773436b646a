"""docs/python.md shows every command of the README's Use section as a ``napkin.*`` call (the
page's blocks run in test_docs_examples)."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "api"))
from test_public_surface import EXCEPTIONS  # noqa: E402

GROUPS = {"context", "media", "examples", "serve", "cost", "scaling", "eval"}


def _readme_commands() -> set[tuple[str, ...]]:
    text = (ROOT / "README.md").read_text()
    use = text[text.index("## Use"):text.index("### Workloads and scenarios")]
    paths = set()
    for block in re.findall(r"```sh\n(.*?)```", use, re.S):
        for line in block.splitlines():
            words = line.split("#")[0].replace("&&", " ").split()
            for i, w in enumerate(words):
                if w == "napkin" and i + 1 < len(words) and not words[i + 1].startswith("-"):
                    head = words[i + 1]
                    sub = words[i + 2] if head in GROUPS and i + 2 < len(words) else None
                    paths.add((head, sub) if sub and not sub.startswith("-") else (head,))
    return paths


def test_every_readme_command_is_shown_in_python():
    page = (ROOT / "docs" / "python.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
    commands = _readme_commands()
    assert len(commands) > 40
    missing = []
    for path in sorted(commands):
        name = EXCEPTIONS.get(path, "_".join(path).replace("-", "_"))
        if name is not None and f"napkin.{name}(" not in code:
            missing.append(f"napkin {' '.join(path)} → napkin.{name}(")
    assert not missing, missing
