"""Every code example of the documentation runs, and every output it shows is what it prints.

The rules per kind of block are in ``docblocks.py``. Each page runs in a temporary folder with a
copy of ``examples/``; its blocks run in order (python blocks share one namespace), napkin
commands in-process through the ``cli`` fixture. Blocks marked slow run with ``-m slow``.

``NAPKIN_DOCS_UPDATE=1 pytest tests/docs/test_docs_examples.py`` rewrites the outputs shown in
the pages with what the code prints now (not excerpts with ``...``, which must still match).
"""

import os
import re
import shutil
import textwrap
import traceback
from pathlib import Path

import pytest
from docblocks import (
    KNOWN,
    RUN,
    SHELL,
    Block,
    blocks,
    console_commands,
    matches,
    shell_commands,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
UPDATE = os.environ.get("NAPKIN_DOCS_UPDATE") == "1"


def _params() -> list:
    params = []
    for page in PAGES:
        found = blocks(page)
        if any(b.lang in RUN for b in found):
            name = str(page.relative_to(DOCS))
            params.append(pytest.param(page, False, id=name))
            if any(b.slow for b in found):
                params.append(pytest.param(page, True, id=f"{name}-slow",
                                           marks=pytest.mark.slow))
    return params


def _diff(where: str, expected: str, actual: str) -> str:
    return (f"{where}: the output shown differs from what it prints "
            f"(NAPKIN_DOCS_UPDATE=1 rewrites it)\n--- shown\n{expected}\n--- printed\n{actual}")


class _Page:
    """Runs one page's blocks and collects the rewrites of update mode."""

    def __init__(self, page: Path, cli, capsys):
        self.page, self.cli, self.capsys = page, cli, capsys
        self.namespace: dict = {"__name__": "__docs__"}
        self.rewrites: list[tuple[Block, str]] = []

    def napkin(self, argv: list[str], where: str) -> str:
        code, out, err = self.cli(*argv[1:])
        assert code == 0, f"{where}: `{' '.join(argv)}` exited {code}\n{err}{out}"
        return out

    def check(self, where: str, expected: str | None, actual: str) -> bool:
        """Whether ``actual`` matches; in update mode a mismatch is to be rewritten."""
        if expected is None or matches(expected, actual):
            return True
        if UPDATE and "\n...\n" not in f"\n{expected}":
            return False
        raise AssertionError(_diff(where, expected, actual))

    def python(self, block: Block) -> None:
        self.capsys.readouterr()
        try:
            code = "\n" * block.line + block.text  # tracebacks give the page's line numbers
            exec(compile(code, str(block.page), "exec"), self.namespace)
        except Exception:
            pytest.fail(f"{block.where}: the example raised\n{traceback.format_exc()}")
        out = self.capsys.readouterr().out
        expected = block.expected
        if expected is not None and not self.check(block.where, expected.text, out):
            self.rewrites.append((expected, out))

    def console(self, block: Block) -> None:
        commands = console_commands(block)
        assert commands, f"{block.where}: a console block without a `$ napkin` command"
        outputs, stale = [], False
        for command in commands:
            where = f"{block.page.name}:{command.line}"
            assert command.argv[0] == "napkin", f"{where}: console blocks run napkin only"
            outputs.append(self.napkin(command.argv, where))
            stale |= not self.check(where, command.expected, outputs[-1])
        if stale:
            self.rewrites.append((block, _console_text(block, commands, outputs)))

    def shell(self, block: Block) -> None:
        for argv in shell_commands(block):
            self.napkin(argv, block.where)

    def file(self, block: Block) -> None:
        path = block.file
        assert path is not None
        if (ROOT / path).is_file():
            shown, real = block.text.strip(), (ROOT / path).read_text().strip()
            assert shown == real, f"{block.where}: differs from the file {path}"
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(block.text)

    def run(self, slow: bool) -> None:
        for block in blocks(self.page):
            if block.slow and not slow:
                continue
            if block.lang == "python":
                self.python(block)
            elif block.lang == "console":
                self.console(block)
            elif block.lang in SHELL:
                self.shell(block)
            elif block.file is not None:
                self.file(block)
        if self.rewrites:
            _rewrite(self.page, self.rewrites)


def _console_text(block: Block, commands, outputs: list[str]) -> str:
    """The console block with each shown output replaced by the printed one."""
    lines = block.text.splitlines()
    starts = [c.line - block.line - 1 for c in commands] + [len(lines)]
    text = lines[:starts[0]]
    for i, (command, out) in enumerate(zip(commands, outputs, strict=True)):
        chunk = lines[starts[i]:starts[i + 1]]
        head = [chunk[0]]
        for line in chunk[1:]:
            if not head[-1].rstrip().endswith("\\"):
                break
            head.append(line)
        if command.expected is None or "\n...\n" in f"\n{command.expected}":
            text += chunk
        else:
            text += head + [ln.rstrip() for ln in out.rstrip("\n").splitlines()]
    return "\n".join(text) + "\n"


def _rewrite(page: Path, rewrites: list[tuple[Block, str]]) -> None:
    lines = page.read_text().splitlines()
    for block, body in sorted(rewrites, key=lambda r: -r[0].line):
        indent = re.match(r"[ \t]*", lines[block.line - 1]).group(0)
        new = [f"{indent}{ln}".rstrip() for ln in textwrap.dedent(body).rstrip("\n").split("\n")]
        lines[block.line:block.end - 1] = new
    page.write_text("\n".join(lines) + "\n")


@pytest.fixture
def docs_folder(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.parametrize(("page", "slow"), _params())
def test_page_examples_run_and_print_what_they_show(page, slow, docs_folder, cli, capsys):
    _Page(page, cli, capsys).run(slow)


def test_every_block_is_run_or_checked():
    """A block of an unknown kind would be neither run nor checked; an output block must
    follow a python block (console blocks hold their own outputs)."""
    bad = []
    for page in PAGES:
        found = blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            if block.lang not in KNOWN:
                bad.append(f"{block.where}: block of kind {block.lang!r}")
            if block.is_output and (before is None or before.lang != "python"):
                bad.append(f"{block.where}: an output block must follow a python block")
    assert not bad, bad


def test_getting_started_has_the_readme_commands_verbatim():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", setup, re.S)
    assert len(commands) == 2
    index = (DOCS / "index.md").read_text()
    for command in commands:
        assert f"```sh\n{command}```" in index, command
