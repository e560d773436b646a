"""The README's Python example runs as written (from the repository root)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_python_blocks_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), scope)
    r = scope["r"]
    assert r.data["compute_bound_batch"] == r.value.compute_bound_batch
    assert [row.batch for row in r.value.rows] == [1, 8, 16, 32]
