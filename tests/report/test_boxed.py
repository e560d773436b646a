"""Text tables are drawn without rich where they come out the same, byte for byte, as rich's."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import _SINGLE_CELL_UNICODE_RANGES, cell_len

import napkin
from napkin.report import boxed
from napkin.report import render as render_module
from napkin.report.document import Document, Section
from napkin.report.render import render


def _by_rich(doc: Document, **kw) -> str:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(boxed, "drawable", lambda: False)
        return render(doc, "table", **kw)


def _drawn_by_boxed(doc: Document, **kw) -> str:
    """The page, failing if it went to rich."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(boxed, "drawable", lambda: True)
        m.setattr(render_module, "_rich", lambda *a: pytest.fail("drawn by rich"))
        return render(doc, "table", **kw)


def test_a_small_table_written_out():
    """Hand-drawn: at 14 columns the first column (9 wide) narrows to its longest word,
    "name" (4 + 3 + 3 · 2 + 1 = 14), so its words wrap one a line; the number stays whole and
    right-aligned, the title is padded to the table's width, the note wraps at the page's
    width and keeps the space it ends on ("  a note that " is 14)."""
    doc = Document("T", {}, {}, [Section("sec", ["name", "x"], [["ab cde fg", "1.5"]],
                                         ["a note that wraps"])], {})
    fitted = render_module._fit(doc.sections[0], 14)
    assert fitted == ([0, 1], [4, 3], [])
    assert render_module._boxed(doc, [fitted], 14, 14) == (
        "T\n"
        "sec           \n"
        "┏━━━━━━┳━━━━━┓\n"
        "┃ name ┃   x ┃\n"
        "┡━━━━━━╇━━━━━┩\n"
        "│ ab   │ 1.5 │\n"
        "│ cde  │     │\n"
        "│ fg   │     │\n"
        "└──────┴─────┘\n"
        "  a note that \n"
        "wraps\n")


def test_wrap_folds_a_long_word_and_keeps_trailing_spaces_within_the_width():
    # "abcdefghij" is wider than 4: chunks of 4; the line "xx " keeps its space
    assert boxed.wrap("xx abcdefghij", 4) == ["xx ", "abcd", "efgh", "ij"]
    assert boxed.wrap("a b", 2, "left") == ["a ", "b "]
    assert boxed.wrap("a  ", 2, "right") == [" a"]
    assert boxed.wrap("one\n\ntwo", 10) == ["one", "", "two"]


def test_the_narrow_signs_are_one_cell_in_rich_and_its_ranges_are_ours():
    assert all(cell_len(c) == 1 for c in boxed.NARROW)
    assert tuple(_SINGLE_CELL_UNICODE_RANGES) == boxed._SINGLE_RANGES


_ALPHABET = "abcxyz0123456789.,:;()[]%=+-_/ \n≤≥·×−—→µ±\xa0"
_text = st.text(alphabet=_ALPHABET, max_size=40)
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=60)


@st.composite
def _documents(draw) -> Document:
    sections = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 6))
        cell = st.one_of(_text, _word, st.from_regex(r"-?[0-9]{1,7}(\.[0-9]{1,3})? ms",
                                                       fullmatch=True))
        columns = draw(st.lists(st.one_of(_text, _word), min_size=n, max_size=n))
        rows = draw(st.lists(st.lists(cell, min_size=n, max_size=n), max_size=5))
        notes = draw(st.lists(st.one_of(_text, _word), max_size=2))
        drop = tuple(draw(st.lists(st.sampled_from(columns), max_size=2)))
        sections.append(Section(draw(_text), columns, rows, notes, drop=drop))
    inputs = draw(st.dictionaries(st.sampled_from("abc"), _text, max_size=3))
    return Document(draw(_text), inputs, {}, sections, {})


@settings(max_examples=300, deadline=None)
@given(doc=_documents(), width=st.one_of(st.none(), st.integers(8, 160)), wide=st.booleans())
def test_boxed_pages_are_riches_byte_for_byte(doc, width, wide):
    """Random pages — words wider than their column, newlines in cells and titles, blank
    cells, non-breaking spaces, the narrow signs, columns left out to fit — come out as rich
    draws them; a page boxed cannot draw the same (a table wider than the page) goes to rich."""
    reference = _by_rich(doc, width=width, wide=wide)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(boxed, "drawable", lambda: True)
        assert render(doc, "table", width=width, wide=wide) == reference
    fitted = [render_module._fit(s, None if wide else width) for s in doc.sections]
    fits = wide or width is None or all(render_module._outer(w) <= width for _, w, _ in fitted)
    if fits and all(min(w) >= 1 for _, w, _ in fitted):  # then boxed draws it, not rich
        assert _drawn_by_boxed(doc, width=width, wide=wide) == reference


def test_wide_characters_go_to_rich(monkeypatch):
    """A scenario named in CJK (two cells a character) is drawn by rich, whose widths know."""
    doc = Document("模型", {}, {}, [Section("s", ["名前", "x"], [["東京", "1"]], [])], {})
    assert not boxed.single_cell([doc.title])
    calls = []
    rich_page = render_module._rich
    monkeypatch.setattr(render_module, "_rich", lambda *a: calls.append(1) or rich_page(*a))
    out = render(doc, "table")
    assert calls and "┃ 名前 ┃" in out


def test_a_real_report_is_the_same_either_way():
    doc = napkin.call("llama-3.1-70b", new=2000, gen=300, gpu="h100-sxm").document
    for width in (None, 60, 100):
        assert (_drawn_by_boxed(doc, width=width)
                == _by_rich(doc, width=width))


def test_a_non_utf8_output_goes_to_rich():
    """rich draws ASCII boxes for a Latin-1 output: so does napkin (by rich)."""
    code = ("import sys; from napkin.report import boxed; print(boxed.drawable()); "
            "import napkin; from napkin.report.render import render; "
            "d = napkin.call('llama-2-7b', new=8, gen=8, gpu='h100-sxm').document; "
            "print(next(x for x in render(d, 'table').splitlines() if x[:1] in '+┏'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONIOENCODING": "latin-1", "PATH": ""}, check=True).stdout
    drawable, line = out.splitlines()[:2]
    assert drawable == "False" and line.startswith("+--")


def test_a_table_command_loads_no_rich():
    code = ("import sys; from napkin.cli.main import main; sys.argv = ['napkin', 'call', "
            "'llama-2-7b', '--new', '8', '--gen', '8', '--gpu', 'h100-sxm']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print([m for m in sys.modules if m.split('.')[0] == 'rich'], file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "┏" in proc.stdout and proc.stderr.strip() == "[]"
