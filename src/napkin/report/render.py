"""Render a :class:`Document` as a rich table, markdown or JSON."""

import html
import json
import sys
from typing import Literal

from napkin.report.document import Document

Format = Literal["table", "md", "json", "html"]


def render(doc: Document, fmt: Format) -> str:
    """The whole output of a command, as one string."""
    if fmt == "json":
        return json.dumps(doc.payload(), indent=2)
    if fmt == "md":
        return _markdown(doc)
    if fmt == "html":
        return _html(doc)
    return _table(doc)


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


def _table(doc: Document) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(record=True, width=None if sys.stdout.isatty() else 140,
                      force_terminal=False, highlight=False)
    with console.capture() as capture:
        console.print(f"[bold]{doc.title}[/bold]")
        if line := _assumption_line(doc):
            console.print(line, style="dim", markup=False)
        for s in doc.sections:
            table = Table(title=s.title, title_justify="left", show_lines=False)
            for i, col in enumerate(s.columns):
                numeric = i > 0 and all(_numeric(row[i]) for row in s.rows)
                table.add_column(col, justify="right" if numeric else "left")
            for row in s.rows:
                table.add_row(*row)
            console.print(table)
            for note in s.notes:
                console.print(f"  {note}", style="dim", markup=False)
    return capture.get()


def _numeric(cell: str) -> bool:
    """Right-align columns of numbers (and blanks, dashes, signs)."""
    return cell in ("", "—", "yes", "no") or cell.lstrip("+-−")[:1].isdigit()
