"""Boxed text tables drawn exactly as rich draws them, without importing rich.

rich's console and table cost a table command 45–53 ms (importing them, and laying out a
serving report's four tables), a sixth of a 1,000-request ``napkin serve simulate``; this
module draws the same report in about 1 ms.
:func:`napkin.report.render.render` draws with this module whenever the page is one it can
draw the same, byte for byte, and with rich otherwise: every character one cell wide (ASCII,
rich's own single-cell ranges, and :data:`NARROW`), the output's encoding UTF-8, not
Windows, every column at least one cell and the widest table within the page.
``tests/report/test_boxed.py`` pins it to rich over random pages.

The layout is rich 15's (the version ``pyproject.toml`` pins):

- Text wraps between words (a word: its leading spaces, its characters and its trailing
  spaces, regex ``\\s*\\S+\\s*``): a word goes to a new line when its width without
  trailing spaces exceeds what is left; a word wider than the line folds into chunks of the
  width. A line keeps its trailing spaces unless they run past the width. Newlines split
  first.
- A cell is its column's width plus one space either side; left-justified cells are padded
  on the right, right-justified ones stripped of trailing spaces and padded on the left. A row
  is as tall as its tallest cell: body cells sit at the top, header cells at the bottom.
- ``HEAVY_HEAD`` box: ``┏━┳┓`` above, ``┃`` around the header, ``┡━╇┩`` under it, ``│``
  around the body, ``└─┴┘`` below. A table's title wraps at the table's width, left-justified
  (padded to it).
"""

import re
import sys
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Literal

Justify = Literal["default", "left", "right"]

_WORD = re.compile(r"\s*\S+\s*")
_TRAILING = re.compile(r"\s+$")

NARROW = frozenset("≤≥≈≠±×÷·•…–—−‐‑→←↑↓↔⇒∞√∑∏∆∂∫‰′″€£¥©®™°µ§¶")
"""Characters outside rich's single-cell ranges that rich measures one cell wide (tested
against ``rich.cells.cell_len``): the signs napkin's own reports print."""

_SINGLE_RANGES = ((0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482),
                  (0x2500, 0x25FC), (0x2800, 0x28FF))
"""rich's ``_SINGLE_CELL_UNICODE_RANGES``: characters it measures as one cell without its
tables."""

_SINGLE = frozenset(chr(c) for lo, hi in _SINGLE_RANGES for c in range(lo, hi + 1)) | NARROW


def single_cell(texts: Iterable[str]) -> bool:
    """Every character of ``texts`` one cell wide (newlines aside): widths are lengths."""
    return all(_SINGLE.issuperset(t.replace("\n", "")) for t in texts)


def drawable() -> bool:
    """The output is one rich draws with the box characters and no Windows substitutions:
    UTF-8 (rich falls back to ASCII boxes otherwise), not Windows."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    return encoding.startswith("utf") and sys.platform != "win32"


def _breaks(line: str, width: int) -> list[int]:
    """Where rich breaks ``line`` to fit ``width`` cells (its ``divide_line``, folding)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            chunks = [word[i:i + width] for i in range(0, len(word), width)]
            for i, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if i == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def wrap(text: str, width: int, justify: Justify = "default") -> list[str]:
    """``text`` as lines of at most ``width`` cells (``justify``: ``left`` pads each line to
    the width, ``right`` strips trailing spaces and pads on the left)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        cuts = [0, *_breaks(paragraph, width), len(paragraph)]
        for a, b in pairwise(cuts):
            line = paragraph[a:b]
            if len(line) > width and (space := _TRAILING.search(line)):
                line = line[:len(line) - min(len(space.group(0)), len(line) - width)]
            if justify == "left":
                line = line[:width].ljust(width)
            elif justify == "right":
                line = line.rstrip()[:width].rjust(width)
            lines.append(line[:width])
    return lines


def _rule(left: str, line: str, cross: str, right: str, widths: Sequence[int]) -> str:
    """A box rule across columns of these widths (each with its two cells of padding)."""
    return left + cross.join(line * (w + 2) for w in widths) + right


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
          widths: Sequence[int], justify: Sequence[Justify]) -> list[str]:
    """A rich ``Table(title=title, title_justify="left")`` whose columns have these widths
    (without padding) and justifications, drawn in ``HEAVY_HEAD`` box lines."""
    outer = sum(widths) + 3 * len(widths) + 1
    lines = wrap(title, outer, "left") if title else []
    lines.append(_rule("┏", "━", "┳", "┓", widths))
    for i, row in enumerate([header, *rows]):
        cells = [wrap(c, w, j) for c, w, j in zip(row, widths, justify, strict=True)]
        height = max(len(c) for c in cells)
        blank = [[" " * w] * (height - len(c)) for c, w in zip(cells, widths, strict=True)]
        cells = [b + c if i == 0 else c + b for c, b in zip(cells, blank, strict=True)]
        bar = "┃" if i == 0 else "│"
        lines += [bar + bar.join(f" {c[k]} " for c in cells) + bar for k in range(height)]
        if i == 0:
            lines.append(_rule("┡", "━", "╇", "┩", widths))
    lines.append(_rule("└", "─", "┴", "┘", widths))
    return lines
