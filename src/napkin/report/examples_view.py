"""Documents for the worked-example catalog."""

from napkin.examples.commands import COMMANDS, DERIVED
from napkin.examples.row import Example, Row
from napkin.report.document import Document, Section


def examples_list_doc(examples: tuple[Example, ...] | list[Example]) -> Document:
    rows = [[e.id, e.title, e.source] for e in examples]
    data = {"examples": [{"id": e.id, "title": e.title, "source": e.source} for e in examples]}
    return Document("Worked examples", {}, {}, [Section("examples", ["id", "what", "source"],
                                                        rows)], data)


def _fmt(value: float) -> str:
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.2f}"


def _published(row: Row) -> str:
    p = row.published
    if p is None:
        return "—"
    if isinstance(p, tuple):
        return f"{_fmt(p[0])}–{_fmt(p[1])}"
    return _fmt(p)


def examples_run_doc(results: list[tuple[Example, list[Row]]]) -> Document:
    sections, data = [], []
    failed = 0
    for ex, rows in results:
        cells = []
        for r in rows:
            dev = r.deviation
            cells.append([r.label, _fmt(r.value), _published(r), r.unit,
                          "" if dev is None else f"{dev:+.2%}", r.status])
            failed += r.status == "FAIL"
        derived = DERIVED.get(ex.id, {})
        notes = [f"{r.label}: {r.note}" for r in rows if r.note]
        notes += [f"with your inputs: {c}" for c in COMMANDS.get(ex.id, ())]
        notes += [f"{label}: from the commands' figures, {how}" for label, how in derived.items()]
        sections.append(Section(f"{ex.id} — {ex.title} ({ex.source})",
                                ["quantity", "computed", "published", "unit", "deviation",
                                 "status"], cells, notes))
        data.append({"id": ex.id, "title": ex.title, "source": ex.source, "rows": rows,
                     "commands": list(COMMANDS.get(ex.id, ())), "derived": derived})
    n = sum(len(rows) for _, rows in results)
    title = f"Worked examples: {n - failed}/{n} rows pass" if not failed else (
        f"Worked examples: {failed} of {n} rows FAIL")
    return Document(title, {}, {}, sections, {"examples": data, "failed_rows": failed})
