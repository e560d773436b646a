"""The question bank's small formulas as commands: ``napkin tokens``, ``attention-scale``,
``objectives``, ``balance-loss``, ``rounding`` (over :mod:`napkin.api.bank`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import bank as api
from napkin.cli.common import FiniteArgument, FiniteOption, Format, FormatOpt, emit
from napkin.errors import NapkinError


def _floats(text: str, field: str) -> list[float]:
    """``"0.25,0.25,0.5"`` → ``[0.25, 0.25, 0.5]``; the library checks the range."""
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise NapkinError(f"{field}: must be comma-separated numbers, got {text!r}") from None


def tokens(
    text: Annotated[str | None, typer.Argument(help="Text to encode (or --file).",
                                               metavar="[TEXT]")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="UTF-8 text file to encode.")] = None,
    tokenizer: Annotated[str, typer.Option(
        "--tokenizer", help="Shipped tokenizer (gpt2) or a tokenizer.json path.")] = "gpt2",
    fmt: FormatOpt = Format.table,
) -> None:
    """Tokens, characters and bytes of a text under a real tokenizer (tokenizer.json, offline,
    extra napkin[tokenize]): characters and bytes per token, and the 4-characters rule beside
    the count (q1, q3)."""
    emit(api.tokens(text, file=file, tokenizer=tokenizer), fmt)


def attention_scale(
    ref: Annotated[str | None, typer.Argument(
        help="Catalog id or config.json (its query/key head size is d_k).",
        metavar="[MODEL]")] = None,
    d_k: Annotated[int | None, typer.Option("--d-k", help="Query/key head size d_k.")] = None,
    var_q: Annotated[float, FiniteOption("--var-q", help="Variance of q's components.")] = 1.0,
    var_k: Annotated[float, FiniteOption("--var-k", help="Variance of k's components.")] = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Attention score variance: Var(q·k) = d_k·σ_q²·σ_k² for iid components, and 1 after the
    1/√d_k scale (q6)."""
    emit(api.attention_scale(ref, d_k=d_k, var_q=var_q, var_k=var_k), fmt)


def objectives(
    seq: Annotated[int, typer.Option("--seq", help="Tokens T per sequence.")] = 1000,
    mask_rate: Annotated[float, FiniteOption(
        "--mask-rate", help="Masked LM's share of tokens predicted, (0, 1].")] = 0.15,
    bos: Annotated[bool, typer.Option(
        "--bos", help="A BOS token precedes the T tokens (the first is predicted too).")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Prediction targets per sequence: causal LM T − 1 against masked LM 0.15·T (q5, q12)."""
    emit(api.objectives(seq=seq, mask_rate=mask_rate, bos=bos), fmt)


def balance_loss(
    f: Annotated[str, typer.Option(
        "--f", help="Share of tokens dispatched to each expert, comma-separated, sum 1.")],
    p: Annotated[str | None, typer.Option(
        "--p", help="Mean router probability of each expert, comma-separated, sum 1 "
                    "(default: --f).")] = None,
    alpha: Annotated[float, FiniteOption("--alpha", help="Loss weight α ≥ 0.")] = 0.01,
    fmt: FormatOpt = Format.table,
) -> None:
    """Switch Transformer load-balancing loss α·N·Σ f_i·P_i: α at uniform routing, α·N
    collapsed (q17)."""
    emit(api.balance_loss(_floats(f, "f"), p=None if p is None else _floats(p, "p"),
                          alpha=alpha), fmt)


def rounding(
    value: Annotated[float, FiniteArgument(help="Number to round.", metavar="VALUE")],
    add: Annotated[float | None, FiniteOption(
        "--add", help="Add this in each format (1 + 0.001 = 1 in BF16).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """A number rounded to BF16, FP16, FP32 (nearest, ties to even), the spacing there, and
    with --add the sum in each format (q20: 1 + 0.001 = 1 in BF16)."""
    emit(api.rounding(value, add=add), fmt)
