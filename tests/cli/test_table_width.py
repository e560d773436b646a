"""Tables fit the terminal by leaving columns out and wrapping between words, never by cutting
a number; piped output keeps every column at full width; ``--wide`` too."""

import json
import re

import pytest

import napkin
from napkin.report.document import Document, Section
from napkin.report.render import render


def _doc() -> Document:
    cols = ["#", "configuration", *(f"figure_{i}" for i in range(14))]
    rows = [[str(r), f"{r}× h100-sxm tp{2 ** r}",
             *(f"{(r + 1) * 123456.789 * (i + 1):,.3f} ms" for i in range(14))]
            for r in range(3)]
    return Document("Wide", {}, {}, [Section("many numbers", cols, rows, ["a note"],
                                             drop=("figure_3",))], {})


def _words(text: str) -> set[str]:
    """The words inside the tables' rows (not titles or notes)."""
    rows = [line for line in text.splitlines() if line[:1] in "│┃"]
    return set(re.split(r"[\s│┃]+", "\n".join(rows)))


@pytest.mark.parametrize("width", [60, 100, 140])
def test_a_narrow_terminal_shows_every_number_whole(width):
    doc = _doc()
    out = render(doc, "table", width=width)
    assert max(len(line) for line in out.splitlines()) <= width
    assert "…" not in out
    shown = _words(out)
    section = doc.sections[0]
    kept = [c for c in section.columns if all(w in shown for w in c.split())]
    assert len(kept) < len(section.columns)  # 16 columns of ~14 characters do not fit
    for row in section.rows:
        for col in kept:
            cell = row[section.columns.index(col)]
            assert all(w in shown for w in cell.split()), (col, cell)
    left_out = [c for c in section.columns if c not in kept]
    note = next(line for line in out.splitlines() if "left out to fit" in line)
    assert f"left out to fit {width} columns" in note
    assert "figure_3" in left_out  # the section's own order first, then from the right
    assert section.columns[0] in kept and section.columns[1] in kept


def test_piped_and_wide_output_keep_every_column_whole():
    doc = _doc()
    for out in (render(doc, "table"), render(doc, "table", width=80, wide=True)):
        assert "…" not in out and "left out" not in out
        for row in doc.sections[0].rows:
            assert all(cell in out for cell in row)  # each cell whole, on one line


def test_a_real_result_at_100_columns():
    doc = napkin.call("llama-3.1-70b", new=2000, gen=300, gpu="h100-sxm").document
    out = render(doc, "table", width=100)
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 100
    shown = _words(out)
    for s in doc.sections:
        for row in s.rows:
            for i, cell in enumerate(row):
                if all(w in shown for w in s.columns[i].split()):
                    assert all(w in shown for w in cell.split()), (s.title, cell)


def test_wide_and_timing_on_the_command_line(cli):
    """``--wide`` and ``--timing`` are taken anywhere on a command line, for that run only."""
    from napkin.cli import output

    code, out, err = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--timing",
                         "--wide", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["timing"]["chapter 3-1 uniform: wall_s"] > 0
    assert (output.wide, output.timing) == (False, False)  # restored after the run
    code, out, _ = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--format",
                       "json")
    assert code == 0 and "timing" not in json.loads(out)


def test_users_text_prints_as_given_not_as_rich_markup_or_emoji_codes():
    # a scenario or model name is the user's text: "[red]x[/red]", "[v2]" and ":fire:" are
    # not styles or emoji (rich had eaten the brackets and drawn a flame)
    names = ["run [red]x[/red] [v2]", "vidur :fire: 10", "a [b"]
    doc = Document("Title [bold]x[/bold] :fire:", {}, {},
                   [Section("section [dim]y[/dim]", ["metric", "scenario [v2]"],
                            [["TTFT", n] for n in names], ["note [i]z[/i] :fire:"])], {})
    out = render(doc, "table")
    for text in [*names, "Title [bold]x[/bold] :fire:", "section [dim]y[/dim]",
                 "scenario [v2]", "note [i]z[/i] :fire:"]:
        assert text in out
    assert "🔥" not in out


def test_the_progress_bar_shows_a_scenario_name_as_given():
    from rich.console import Console

    from napkin.cli.serve_cmds import _ProgressBar

    bar = _ProgressBar()
    bar.start("run [red]x[/red] [v2]", 10)
    try:
        task = bar.bar.tasks[0]
        shown = Console(width=200).render_str(task.description, markup=True).plain
    finally:
        bar.stop()
    assert shown == "simulating run [red]x[/red] [v2]"
