"""``napkin examples [list | run ID | run --all]``."""

from typing import Annotated

import typer

from napkin.cli.common import Format, FormatOpt, emit
from napkin.errors import NapkinError

app = typer.Typer(help="The worked-example catalog: computed vs published values.",
                  invoke_without_command=True, no_args_is_help=False)


@app.callback()
def _default(ctx: typer.Context, fmt: FormatOpt = Format.table) -> None:
    if ctx.invoked_subcommand is None:
        list_(fmt)


@app.command("list")
def list_(fmt: FormatOpt = Format.table) -> None:
    """List the worked examples."""
    from napkin.examples.catalog import EXAMPLES
    from napkin.report.examples_view import examples_list_doc

    emit(examples_list_doc(EXAMPLES), fmt)


@app.command()
def run(
    example_id: Annotated[str | None, typer.Argument(help="Example id (§ may be typed s).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Run every example.")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Compute examples through the library; exit 1 if any row misses its published value."""
    from napkin.examples.catalog import EXAMPLES, find_example
    from napkin.report.examples_view import examples_run_doc

    if all_ == (example_id is not None):
        raise NapkinError("examples run: give one example id or --all")
    chosen = list(EXAMPLES) if all_ else [find_example(example_id or "")]
    results = [(e, e.rows()) for e in chosen]
    emit(examples_run_doc(results), fmt)
    if any(r.status == "FAIL" for _, rows in results for r in rows):
        raise typer.Exit(1)
