"""The ``napkin`` entry point: one line on bad input, exit status 2."""

import sys

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

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
)
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
app.add_typer(agent_cmds.context_app, name="context")
app.add_typer(media_cmds.app, name="media")
app.add_typer(examples_cmd.app, name="examples")
app.add_typer(serve_cmds.app, name="serve")
app.add_typer(cost_cmds.app, name="cost")
app.add_typer(scaling_cmds.app, name="scaling")
app.add_typer(eval_cmds.app, name="eval")


def main() -> None:
    """Run the CLI; library errors and usage errors print one line and exit 2."""
    try:
        code = app(standalone_mode=False)
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
