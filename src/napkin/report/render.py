"""Render a :class:`Document` as boxed text tables, markdown or JSON."""

import json
import shutil
import sys
from dataclasses import replace
from typing import Literal

from napkin.report import boxed
from napkin.report.document import Document, Section

Format = Literal["table", "md", "json", "html"]


def render(doc: Document, fmt: Format, width: int | None = None, wide: bool = False,
           timing: bool = False) -> str:
    """The whole output of a command, as one string (``width``, ``wide``: of tables, see
    :func:`_table`; ``timing``: with the document's wall-clock figures, which are otherwise
    left out so that the same inputs print the same bytes)."""
    if fmt == "json":
        return json.dumps(doc.payload(timing), indent=2)
    if timing and doc.timing:
        doc = replace(doc, sections=[*doc.sections, Section(
            "timing (wall clock)", ["", ""],
            [[k, f"{v:,.4g}" if isinstance(v, float) else str(v)]
             for k, v in doc.timing.items()])])
    if fmt == "md":
        return _markdown(doc)
    if fmt == "html":
        return _html(doc)
    return _table(doc, width, wide)


def _assumption_line(doc: Document) -> str:
    parts = [f"{k}={v}" for k, v in {**doc.inputs, **doc.assumptions}.items() if v is not None]
    return "; ".join(parts)


def _markdown(doc: Document) -> str:
    line = _assumption_line(doc)
    lines = [f"# {doc.title}", ""] + ([f"_{line}_", ""] if line else [])
    for s in doc.sections:
        lines += [f"## {s.title}", "", "| " + " | ".join(s.columns) + " |",
                  "|" + "---|" * len(s.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in s.rows]
        lines += [""] + [f"- {n}" for n in s.notes] + ([""] if s.notes else [])
    return "\n".join(lines).rstrip() + "\n"


def _html(doc: Document) -> str:
    """An HTML fragment (escaped): the title, the assumption line, a table per section."""
    import html  # only this view escapes: a text run does not load it

    e = html.escape
    parts = [f"<div class=\"napkin-result\"><h3>{e(doc.title)}</h3>"]
    if line := _assumption_line(doc):
        parts.append(f"<p><small>{e(line)}</small></p>")
    for s in doc.sections:
        head = "".join(f"<th>{e(c)}</th>" for c in s.columns)
        body = "".join("<tr>" + "".join(
            f"<td style=\"text-align:{'right' if i and _numeric(c) else 'left'}\">{e(c)}</td>"
            for i, c in enumerate(row)) + "</tr>" for row in s.rows)
        parts.append(f"<table><caption style=\"text-align:left\"><b>{e(s.title)}</b></caption>"
                     f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        parts += [f"<p><small>{e(n)}</small></p>" for n in s.notes]
    return "".join(parts) + "</div>"


PIPED_MIN_WIDTH = 140
"""Width of piped output's text lines (titles, notes) when every table is narrower."""


def _table(doc: Document, width: int | None = None, wide: bool = False) -> str:
    """Boxed tables fitted to ``width`` columns (None: the terminal's when output is one, else
    no limit) by leaving columns out, then wrapping cells between words — never by cutting
    a number; a note names the columns left out. ``wide``: every column at its full width.
    Drawn by :mod:`napkin.report.boxed` where it draws the page as rich would, else by rich."""
    if width is None and not wide and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    fitted = [_fit(s, None if wide else width) for s in doc.sections]
    natural = max([PIPED_MIN_WIDTH, *(_outer(w) for _, w, _ in fitted)])
    page = natural if wide or width is None else width
    texts = [doc.title, _assumption_line(doc)]
    for s in doc.sections:
        texts += [s.title, *s.columns, *(c for row in s.rows for c in row), *s.notes]
    if (boxed.drawable() and boxed.single_cell(texts)
            and all(w and min(w) >= 1 and _outer(w) <= page for _, w, _ in fitted)):
        return _boxed(doc, fitted, width, page)
    return _rich(doc, fitted, width, page)


Fitted = tuple[list[int], list[int], list[str]]
"""A section's kept column indices, their widths and the names left out (:func:`_fit`)."""


def _notes(doc: Document, fitted: list[Fitted], width: int | None
           ) -> list[tuple[Section, Fitted, list[str]]]:
    """Each section with its layout and the lines printed under its table."""
    out = []
    for s, fit in zip(doc.sections, fitted, strict=True):
        lines = [f"  {note}" for note in s.notes]
        if fit[2]:
            lines.append(f"  left out to fit {width} columns: {', '.join(fit[2])} "
                         "(--wide shows every column)")
        out.append((s, fit, lines))
    return out


def _justify(s: Section, keep: list[int]) -> list[Literal["left", "right"]]:
    """Right-align columns of numbers (never the first)."""
    return ["right" if i > 0 and all(_numeric(row[i]) for row in s.rows) else "left"
            for i in keep]


def _boxed(doc: Document, fitted: list[Fitted], width: int | None, page: int) -> str:
    """The page drawn by :mod:`napkin.report.boxed` (the same bytes as :func:`_rich`)."""
    lines = boxed.wrap(doc.title, page)
    if line := _assumption_line(doc):
        lines += boxed.wrap(line, page)
    for s, (keep, widths, _), notes in _notes(doc, fitted, width):
        lines += boxed.table(s.title, [s.columns[i] for i in keep],
                             [[row[i] for i in keep] for row in s.rows], widths,
                             _justify(s, keep))
        for note in notes:
            lines += boxed.wrap(note, page)
    return "\n".join(lines) + "\n"


def _rich(doc: Document, fitted: list[Fitted], width: int | None, page: int) -> str:
    """The page drawn by rich (characters wider than a cell, a non-UTF-8 output, a table
    wider than the page)."""
    from rich.console import Console
    from rich.table import Table

    # markup and emoji codes off: every cell, title and note is the user's text as given (a
    # scenario named "run [v2]" or ":fire:" prints so; rich's table of emoji codes, ~2 ms to
    # import, is never loaded)
    console = Console(record=True, width=page, force_terminal=False, highlight=False,
                      markup=False, emoji=False)
    with console.capture() as capture:
        console.print(doc.title, style="bold")
        if line := _assumption_line(doc):
            console.print(line, style="dim")
        for s, (keep, widths, _), notes in _notes(doc, fitted, width):
            table = Table(title=s.title, title_justify="left", show_lines=False)
            for i, w, j in zip(keep, widths, _justify(s, keep), strict=True):
                table.add_column(s.columns[i], justify=j, width=w, overflow="fold")
            for row in s.rows:
                table.add_row(*(row[i] for i in keep))
            console.print(table)
            for note in notes:
                console.print(note, style="dim")
    return capture.get()


def _outer(widths: list[int]) -> int:
    """A boxed table's width: its columns, one space of padding each side, the rules."""
    return sum(widths) + 3 * len(widths) + 1


def _cells(text: str) -> int:
    """``text``'s width in terminal cells (rich's measure where a character is not one cell:
    CJK characters take two)."""
    if boxed.single_cell([text]):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _words(text: str) -> int:
    return max((_cells(w) for w in text.split()), default=1)


def _fit(s: Section, width: int | None) -> Fitted:
    """``s``'s layout within ``width``: columns are left out (those named in ``s.drop``
    first, then from the right; never the first) until every kept column can be as wide as
    its longest word, then the widest are narrowed to that floor; returns the kept columns'
    indices, their widths and the names left out."""
    n = len(s.columns)
    cells = [[s.columns[i], *(row[i] for row in s.rows)] for i in range(n)]
    floor = [max(_words(c) for c in col) for col in cells]
    full = [max(_cells(line) for c in col for line in c.split("\n")) for col in cells]
    keep = list(range(n))
    order = [s.columns.index(c) for c in s.drop if c in s.columns]
    order += [i for i in reversed(range(1, n)) if i not in order]
    while width is not None and len(keep) > 1 and _outer([floor[i] for i in keep]) > width:
        keep.remove(next(i for i in order if i in keep))
    widths = [full[i] for i in keep]
    if width is not None:
        for _ in range(max(_outer(widths) - width, 0)):
            j = max((k for k in range(len(keep)) if widths[k] > floor[keep[k]]),
                    key=lambda k: widths[k], default=None)
            if j is None:
                break
            widths[j] -= 1
    return keep, widths, [s.columns[i] for i in range(n) if i not in keep]


def _numeric(cell: str) -> bool:
    """Right-align columns of numbers (and blanks, dashes, signs)."""
    return cell in ("", "—", "–", "yes", "no") or cell.lstrip("+-−")[:1].isdigit()
