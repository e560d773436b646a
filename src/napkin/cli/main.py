"""The ``napkin`` entry point: one line on bad input, exit status 2."""

import os
import sys
from importlib import import_module
from typing import Annotated, Any

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from napkin import __version__
from napkin.cli import output
from napkin.errors import NapkinError, state

COMMANDS: dict[str, tuple[str, str]] = {
    "models": ("catalog_cmds", "models"), "gpus": ("catalog_cmds", "gpus"),
    "model": ("catalog_cmds", "model"), "call": ("inference_cmds", "call"),
    "decode": ("inference_cmds", "decode"), "capacity": ("inference_cmds", "capacity"),
    "moe": ("inference_cmds", "moe"), "train": ("train_cmds", "train"),
    "rl": ("train_cmds", "rl"), "pretrain": ("scaling_cmds", "pretrain"),
    "lifecycle": ("scaling_cmds", "lifecycle"), "decision": ("decision_cmds", "decision"),
    "ced": ("decision_cmds", "ced"), "agent": ("agent_cmds", "agent"),
    "calibrate": ("calib_cmds", "calibrate"), "validate": ("calib_cmds", "validate"),
    "plan": ("plan_cmds", "plan"), "flops": ("rule_cmds", "flops"),
    "speculative": ("rule_cmds", "speculative"),
    "attention-matrix": ("rule_cmds", "attention_matrix"),
    "loss-mask": ("rule_cmds", "loss_mask"), "gpu-hours": ("rule_cmds", "gpu_hours"),
    "loss-norm": ("rule_cmds", "loss_norm"), "lora": ("rule_cmds", "lora"),
    "tokens": ("bank_cmds", "tokens"), "attention-scale": ("bank_cmds", "attention_scale"),
    "objectives": ("bank_cmds", "objectives"), "balance-loss": ("bank_cmds", "balance_loss"),
    "rounding": ("bank_cmds", "rounding"),
    "web": ("web_cmd", "web"),
}
"""Command → (module under ``napkin.cli``, function), in ``--help`` order."""
GROUPS: dict[str, tuple[str, str]] = {
    "context": ("agent_cmds", "context_app"), "media": ("media_cmds", "app"),
    "examples": ("examples_cmd", "app"), "serve": ("serve_cmds", "app"),
    "cost": ("cost_cmds", "app"), "scaling": ("scaling_cmds", "app"),
    "eval": ("eval_cmds", "app"),
}
"""Command group → (module, its ``typer.Typer``)."""


def _print_version(value: bool) -> None:
    if value:
        print(f"napkin {__version__}")
        raise typer.Exit()


def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print napkin's version and exit.")] = False) -> None:
    pass


def build(only: str | None = None) -> typer.Typer:
    """The app with every command, or with the one command or group ``only`` (a run imports
    just the module of the command it runs)."""
    app = typer.Typer(
        name="napkin",
        help="Napkin math for LLM systems: FLOPs, bytes, memory and seconds, from config.json "
             "and accelerator specs, with every assumption printed. Tables fit the terminal "
             "by leaving columns out (a note names them); --wide, anywhere on a command line, "
             "prints every column; --timing adds the run's wall-clock figures, which are "
             "otherwise left out so that the same inputs print the same bytes.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"max_content_width": 120},
    )
    app.callback()(_root)
    for name, (module, attr) in COMMANDS.items():
        if only in (None, name):
            app.command(name)(getattr(import_module(f"napkin.cli.{module}"), attr))
    for name, (module, attr) in GROUPS.items():
        if only in (None, name):
            app.add_typer(getattr(import_module(f"napkin.cli.{module}"), attr), name=name)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # every command (introspection, tests)
        return build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _full_short_help(command: Any) -> None:
    """Show each command's whole first paragraph in the listing (click cuts it at 45
    characters)."""
    for sub in getattr(command, "commands", {}).values():
        if sub.help and not sub.short_help:
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
        _full_short_help(sub)


def command(only: str | None = None) -> Any:
    """The click command of the app (see :func:`build`), with full descriptions in
    ``--help``."""
    cmd = typer.main.get_command(build(only))
    _full_short_help(cmd)
    return cmd


def _invoked(argv: list[str]) -> str | None:
    """The command or group a command line runs, when it names one; ``--version`` alone needs
    none (it matches no command, so none is built); else None: help or an unknown command need
    every command."""
    first = argv[0] if argv else ""
    return first if first in COMMANDS or first in GROUPS or argv == ["--version"] else None


def main() -> None:
    """Run the CLI; library errors and usage errors print one line and exit 2. The output
    options and the boundary's naming hold for this run only (tests run many in one
    process)."""
    # napkin registers no pydantic plugins; looking for any scans every installed package's
    # entry points before the first model is built (~10 ms a run). A user's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    saved = (state.flag_names, output.wide, output.timing)
    try:
        _main()
    finally:
        state.flag_names, output.wide, output.timing = saved


def _main() -> None:
    state.flag_names = True  # errors of the API name the flags the user typed
    argv = sys.argv[1:]
    end = argv.index("--") if "--" in argv else len(argv)
    for flag in ("--wide", "--timing"):  # output options of every command, anywhere on the line
        if flag in argv[:end]:
            argv = [a for i, a in enumerate(argv) if i >= end or a != flag]
            end = argv.index("--") if "--" in argv else len(argv)
            setattr(output, flag[2:], True)
    try:
        code = command(_invoked(argv))(args=argv, prog_name="napkin", standalone_mode=False)
    except NapkinError as e:
        _fail(str(e))
    except NoArgsIsHelpError as e:  # bare `napkin`: the help text, as asked
        print(e.format_message())
        sys.exit(0)
    except TyperException as e:  # usage errors: unknown option, bad value, missing argument
        message = e.format_message() if hasattr(e, "format_message") else "aborted"
        _fail(" ".join(message.replace("Value error, ", "").split()))
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> None:
    print(f"napkin: error: {message}", file=sys.stderr)
    sys.exit(2)
