"""``napkin examples [list | run ID | run --all]`` (over :mod:`napkin.api.examples`)."""

from typing import Annotated

import typer

from napkin.api import examples as api
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
    emit(api.list_examples(), fmt)


@app.command()
def run(
    example_id: Annotated[str | None, typer.Argument(help="Example id (§ may be typed s).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Run every example.")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Compute examples through the library; exit 1 if any row misses its published value."""
    if all_ == (example_id is not None):
        raise NapkinError("examples run: give one example id or --all")
    result = api.run_examples(None if all_ else example_id)
    emit(result, fmt)
    if result.data["failed_rows"]:
        raise typer.Exit(1)
