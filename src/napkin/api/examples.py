"""The worked-example catalog: ``napkin examples list`` and ``napkin examples run``."""

from collections.abc import Sequence

from napkin.api.boundary import checked
from napkin.api.result import Result


@checked
def list_examples() -> Result:
    """The worked examples (chapter examples, question-bank tasks, self-checks): id, what it
    computes, where it is published. ``value``: tuple of Example."""
    from napkin.examples.catalog import EXAMPLES
    from napkin.report.examples_view import examples_list_doc

    return Result(examples_list_doc(EXAMPLES), EXAMPLES)


@checked
def run_examples(ids: str | Sequence[str] | None = None) -> Result:
    """Compute worked examples through the library and compare each row with its published
    value: deviation = computed/published − 1 (0 inside a published range), ``FAIL`` beyond the
    row's tolerance (0.5 % unless its note explains a wider one), ``computed`` where nothing
    is published. ``ids``: one example id or several (``§`` may be typed ``s``); None: every
    example. ``data["failed_rows"]`` counts the failing rows.
    ``value``: tuple of (Example, tuple of Row).
    """
    from napkin.examples.catalog import EXAMPLES, find_example
    from napkin.report.examples_view import examples_run_doc

    if ids is None:
        chosen = list(EXAMPLES)
    else:
        chosen = [find_example(i) for i in ([ids] if isinstance(ids, str) else ids)]
    results = [(e, e.rows()) for e in chosen]
    return Result(examples_run_doc(results), tuple((e, tuple(rows)) for e, rows in results))
