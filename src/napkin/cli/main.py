"""The ``napkin`` entry point: one line on bad input, exit status 2."""

import atexit
import copy
import gc
import os
import sys
import threading
import types
from importlib import import_module
from typing import Annotated, Any, NoReturn

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from napkin import __version__
from napkin.cli import dataclass_code, output
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


def build(only: str | None = None, sub: str | None = None) -> typer.Typer:
    """The app with every command, or with the one command or group ``only`` (a run imports
    just the module of the command it runs), of a group only its command ``sub`` where it has
    one by that name (:func:`_one_command`)."""
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
            group = getattr(import_module(f"napkin.cli.{module}"), attr)
            app.add_typer(_one_command(group, sub) if only == name else group, name=name)
    return app


def _one_command(group: typer.Typer, sub: str | None) -> typer.Typer:
    """``group`` with only its command ``sub``: a run builds the one command it runs (typer
    reads each command's signature and builds its parameters, ~3 ms for ``serve``'s six).
    The whole group where it has no command of that name (its ``--help``, a mistyped name,
    an option before the command: the listing and the error need every one)."""
    kept = [c for c in group.registered_commands
            if (c.name or typer.main.get_command_name(c.callback.__name__)) == sub]
    if not kept:
        return group
    one = copy.copy(group)
    one.registered_commands = kept
    return one


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


def command(only: str | None = None, sub: str | None = None) -> Any:
    """The click command of the app (see :func:`build`), with full descriptions in
    ``--help``."""
    cmd = typer.main.get_command(build(only, sub))
    _full_short_help(cmd)
    return cmd


def _invoked(argv: list[str]) -> str | None:
    """The command or group a command line runs, when it names one; ``--version`` alone needs
    none (it matches no command, so none is built); else None: help or an unknown command need
    every command."""
    first = argv[0] if argv else ""
    return first if first in COMMANDS or first in GROUPS or argv == ["--version"] else None


def main(own_process: bool = False) -> None:
    """Run the CLI; library errors and usage errors print one line and exit 2. The output
    options and the boundary's naming hold for this run only (tests run many in one
    process). With ``own_process`` (the console script, :func:`run`) the garbage collector,
    paused through start-up, is turned back on once the command is built, with every object
    start-up made frozen out of its scans."""
    # napkin registers no pydantic plugins; looking for any scans every installed package's
    # entry points before the first model is built (~10 ms a run). A user's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # napkin's arrays are small (a run's percentiles, a fit of a few terms): one BLAS thread
    # does their work, and OpenBLAS otherwise starts one a core as numpy loads, which spin on
    # the other cores (~70 ms of CPU a run on a 2-core machine; a process pool's workers each
    # start their own). Only before numpy loads (the console script); a user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _no_plugin_loader()
    saved = (state.flag_names, output.wide, output.timing)
    try:
        _main(own_process)
    finally:
        state.flag_names, output.wide, output.timing = saved


def run() -> NoReturn:
    """The ``napkin`` console script: :func:`main` in a process of its own, started and left
    the short way. Start-up (imports, the command's build) allocates objects that live as long
    as the process, so the collector is paused until the command is built (its passes over
    them find nothing: ~10 ms of a short run), then frozen out of later passes. Dataclass
    methods are compiled once per install (:mod:`napkin.cli.dataclass_code`). The exit skips
    the interpreter's teardown (:func:`leave`)."""
    gc.disable()
    methods = dataclass_code.install(_invoked(sys.argv[1:]) or "napkin")
    code: object = 0
    try:
        main(own_process=True)
    except SystemExit as e:
        code = e.code
    finally:
        methods.save()
    leave(code)


def leave(code: object) -> NoReturn:
    """End the process with ``code`` as :class:`SystemExit` would (None 0, an int itself, any
    other value printed to stderr and 1), but without the interpreter's teardown — freeing
    every module and object one by one, ~40 ms of a short run that nobody waits for: the
    exit handlers (:mod:`atexit`: logging, temporary folders, coverage) run, the standard
    streams are flushed (a closed pipe: status 120, as Python's own exit), then the process
    ends. Files napkin writes are closed where written (``with``). With another thread still
    alive it exits the usual way, which joins them."""
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        status = status or 120
    os._exit(status)


PLUGINS_OFF = ("__all__", "1", "true")
"""The ``PYDANTIC_DISABLE_PLUGINS`` values with which pydantic loads no plugin at all."""
PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugin_loader() -> None:
    """With pydantic's plugins off, stand in for its plugin loader with one that returns none,
    as pydantic's own does under that setting: importing the real one imports
    :mod:`importlib.metadata` (and :mod:`email` with it, ~10 ms of a run's start-up) only to
    read the setting and return nothing. Only before pydantic has loaded its own (a process
    that already has it keeps it) and only while the setting turns every plugin off."""
    if (os.environ.get("PYDANTIC_DISABLE_PLUGINS") in PLUGINS_OFF
            and PLUGIN_LOADER not in sys.modules):
        loader = types.ModuleType(PLUGIN_LOADER, "pydantic's plugin loader, plugins off")
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # (): no plugin
        sys.modules[PLUGIN_LOADER] = loader


def _main(own_process: bool) -> None:
    state.flag_names = True  # errors of the API name the flags the user typed
    argv = sys.argv[1:]
    end = argv.index("--") if "--" in argv else len(argv)
    for flag in ("--wide", "--timing"):  # output options of every command, anywhere on the line
        if flag in argv[:end]:
            argv = [a for i, a in enumerate(argv) if i >= end or a != flag]
            end = argv.index("--") if "--" in argv else len(argv)
            setattr(output, flag[2:], True)
    try:
        cmd = command(_invoked(argv), argv[1] if len(argv) > 1 else None)
        if own_process:
            gc.freeze()
            gc.enable()
        code = cmd(args=argv, prog_name="napkin", standalone_mode=False)
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
