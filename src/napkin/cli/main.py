"""The ``napkin`` entry point: one line on bad input, exit status 2."""

import sys
from typing import Annotated, Any

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from napkin import __version__
from napkin.cli import (
    agent_cmds,
    calib_cmds,
    catalog_cmds,
    cost_cmds,
    decision_cmds,
    eval_cmds,
    examples_cmd,
    inference_cmds,
    media_cmds,
    plan_cmds,
    rule_cmds,
    scaling_cmds,
    serve_cmds,
    train_cmds,
    web_cmd,
)
from napkin.errors import NapkinError

app = typer.Typer(
    name="napkin",
    help="Napkin math for LLM systems: FLOPs, bytes, memory and seconds, from config.json "
         "and accelerator specs, with every assumption printed.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},
)


def _print_version(value: bool) -> None:
    if value:
        print(f"napkin {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print napkin's version and exit.")] = False) -> None:
    pass


app.command("models")(catalog_cmds.models)
app.command("gpus")(catalog_cmds.gpus)
app.command("model")(catalog_cmds.model)
app.command("call")(inference_cmds.call)
app.command("decode")(inference_cmds.decode)
app.command("capacity")(inference_cmds.capacity)
app.command("moe")(inference_cmds.moe)
app.command("train")(train_cmds.train)
app.command("rl")(train_cmds.rl)
app.command("pretrain")(scaling_cmds.pretrain)
app.command("lifecycle")(scaling_cmds.lifecycle)
app.command("decision")(decision_cmds.decision)
app.command("ced")(decision_cmds.ced)
app.command("agent")(agent_cmds.agent)
app.command("calibrate")(calib_cmds.calibrate)
app.command("validate")(calib_cmds.validate)
app.command("plan")(plan_cmds.plan)
app.command("flops")(rule_cmds.flops)
app.command("speculative")(rule_cmds.speculative)
app.command("attention-matrix")(rule_cmds.attention_matrix)
app.command("loss-mask")(rule_cmds.loss_mask)
app.command("gpu-hours")(rule_cmds.gpu_hours)
app.command("web")(web_cmd.web)
app.add_typer(agent_cmds.context_app, name="context")
app.add_typer(media_cmds.app, name="media")
app.add_typer(examples_cmd.app, name="examples")
app.add_typer(serve_cmds.app, name="serve")
app.add_typer(cost_cmds.app, name="cost")
app.add_typer(scaling_cmds.app, name="scaling")
app.add_typer(eval_cmds.app, name="eval")


def _full_short_help(command: Any) -> None:
    """Show each command's whole first paragraph in the listing (click cuts it at 45
    characters)."""
    for sub in getattr(command, "commands", {}).values():
        if sub.help and not sub.short_help:
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
        _full_short_help(sub)


def command() -> Any:
    """The click command of the app, with full descriptions in ``--help``."""
    cmd = typer.main.get_command(app)
    _full_short_help(cmd)
    return cmd


def main() -> None:
    """Run the CLI; library errors and usage errors print one line and exit 2."""
    try:
        code = command()(standalone_mode=False)
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
