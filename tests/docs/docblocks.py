"""The fenced code blocks of the documentation pages, and what each one asks a test to do.

A page's blocks run in order, in one temporary folder holding a copy of ``examples/``:

- ```` ```python ````: executed (one namespace per page); when the next block is an output
  block, what the code printed must equal it.
- ```` ```console ````: ``$ napkin ...`` lines run in-process (exit status 0); the lines after
  a command, up to the next ``$``, are its standard output, which must equal what it printed.
- ```` ```sh ```` (also ``bash``, ``shell``): every ``napkin ...`` command runs (exit status 0),
  output unchecked; the setup commands of the README (``python3 -m venv``, ``. .venv/bin/
  activate``, ``pip install``, ``pytest``: what CI itself runs) are recognised and skipped.
- ```` ```yaml title="PATH" ```` (or ``json``, ``csv``): when PATH is a file of the repository,
  the block must equal it; otherwise the page writes it to PATH in its folder, for the commands
  after it.
- ```` ```text title="output" ```` (or ``json``): the expected output of the block before.
- ```` ```text ```` without a title: an illustration (a formula, a layout), not run.

In an expected output, a line ``...`` stands for any number of lines (an excerpt). An HTML
comment ``<!-- docs-test: slow -->`` right before a block marks it slow: it runs only under
``pytest -m slow``.
"""

import itertools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
ATTR = re.compile(r'(\w+)="([^"]*)"')
SLOW_MARK = "<!-- docs-test: slow -->"
OUTPUT_TITLE = "output"
SHELL = {"sh", "bash", "shell"}
RUN = {"python", "console"} | SHELL
OUTPUT_LANGS = {"text", "json"}
FILE_LANGS = {"yaml", "json", "csv"}
KNOWN = RUN | FILE_LANGS | {"text"}
SETUP = (re.compile(r"python3? -m venv \S+"), re.compile(r"\. \S*bin/activate"),
         re.compile(r"pip install .+"), re.compile(r"pytest(\s.*)?"))
"""Shell commands of the set-up instructions that the test environment has already done
(``pytest``: the test run itself, as CI runs it)."""


@dataclass
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    attrs: dict[str, str]
    text: str
    slow: bool = False
    end: int = 0
    """1-based line of the closing fence."""
    expected: "Block | None" = field(default=None, repr=False)
    """The output block that follows this one, if any."""

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    @property
    def is_output(self) -> bool:
        return self.lang in OUTPUT_LANGS and self.attrs.get("title") == OUTPUT_TITLE

    @property
    def file(self) -> str | None:
        """The path a file block shows or writes."""
        title = self.attrs.get("title")
        return title if self.lang in FILE_LANGS and title and not self.is_output else None


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``; output blocks attached to the block before them."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, info = m["fence"], m["indent"], m["info"].strip()
        lang = info.split()[0].strip("{}.").lower() if info else ""
        start, body = i, []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence)
                                      and set(lines[i].strip()) == {fence[0]}):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        previous = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
        found.append(Block(page, start + 1, lang, dict(ATTR.findall(info)),
                           "\n".join(body) + "\n", previous == SLOW_MARK, i + 1))
        i += 1
    for before, after in itertools.pairwise(found):
        if after.is_output:
            before.expected = after
    return found


@dataclass(frozen=True)
class Command:
    argv: list[str]
    expected: str | None
    """The output shown after the command (console blocks), else None."""
    line: int


def console_commands(block: Block) -> list[Command]:
    """``$ napkin ...`` commands of a console block (``\\`` continues a line) and the output
    lines under each."""
    commands: list[Command] = []
    current: list[str] | None = None
    output: list[str] = []
    start = 0
    lines = block.text.splitlines()
    i = 0

    def flush() -> None:
        if current is not None:
            text = "\n".join(output).strip("\n")
            commands.append(Command(current, text + "\n" if text else None, start))

    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            flush()
            start = block.line + 1 + i
            command = line[2:]
            while command.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command.rstrip()[:-1] + " " + lines[i].strip()
            current, output = shlex.split(command, comments=True), []
        else:
            output.append(line)
        i += 1
    flush()
    return commands


def shell_commands(block: Block) -> list[list[str]]:
    """The ``napkin`` commands of a shell block (lines joined at ``\\``, ``&&`` split,
    comments dropped); a command that is neither napkin nor set-up is refused."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    commands = []
    for line in joined.splitlines():
        for part in line.split("&&"):
            argv = shlex.split(part, comments=True)
            if not argv:
                continue
            text = " ".join(argv)
            if argv[0] == "napkin":
                commands.append(argv)
            elif not any(p.fullmatch(text) for p in SETUP):
                raise AssertionError(f"{block.where}: {text!r} is neither a napkin command nor "
                                     "a set-up step the docs test knows")
    return commands


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` equals ``expected``, line by line (trailing spaces and blank lines at
    either end ignored), a line ``...`` in ``expected`` standing for any lines."""
    want = [ln.rstrip() for ln in expected.strip("\n").splitlines()]
    have = [ln.rstrip() for ln in actual.strip("\n").splitlines()]

    # fits[w][h]: want[w:] matches have[h:]
    fits = [[False] * (len(have) + 1) for _ in range(len(want) + 1)]
    fits[len(want)][len(have)] = True
    for w in range(len(want) - 1, -1, -1):
        for h in range(len(have), -1, -1):
            if want[w] == "...":
                fits[w][h] = fits[w + 1][h] or (h < len(have) and fits[w][h + 1])
            else:
                fits[w][h] = h < len(have) and want[w] == have[h] and fits[w + 1][h + 1]
    return fits[0][0]
