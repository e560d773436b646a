"""``napkin eval``: sampling metrics, intervals, the paired bootstrap, bits per byte, DPO and
GRPO (question bank q4, q31–q34, q48, q50) from numbers or a results file (over
:mod:`napkin.api.evaluation`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import evaluation as api
from napkin.cli.common import FiniteOption, Format, FormatOpt, emit
from napkin.errors import NapkinError

app = typer.Typer(
    help="Evaluation and preference-tuning formulas: pass@k, pass^k, maj@k, "
    "intervals, paired bootstrap, bits per byte, DPO loss, GRPO signal, retrieval metrics "
    "(recall@k, MRR, RRF).",
    no_args_is_help=True,
)


@app.command("passk")
def passk(
    n: Annotated[int, typer.Option("--n", help="Samples drawn per problem.")] = 10,
    c: Annotated[int, typer.Option("--c", help="Correct samples among them.")] = 2,
    k: Annotated[int, typer.Option("--k", help="Attempts k.")] = 5,
    fmt: FormatOpt = Format.table,
) -> None:
    """Unbiased pass@k = 1 − C(n−c, k)/C(n, k) and pass^k = C(c, k)/C(n, k) (q50)."""
    emit(api.eval_passk(n=n, c=c, k=k), fmt)


@app.command("ci")
def ci(
    p: Annotated[float, FiniteOption("--p", help="Measured accuracy in [0, 1].")] = 0.6,
    n: Annotated[int, typer.Option("--n", help="Items it was measured on.")] = 500,
    p2: Annotated[
        float | None,
        FiniteOption("--p2", help="A second model's accuracy on the same number of items."),
    ] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Standard error √(p(1−p)/n), the 95 % interval p ± 1.96·SE, and with --p2 the standard
    error of the difference √(p1(1−p1)/n + p2(1−p2)/n) (chapter 3.1.2, q48)."""
    emit(api.eval_ci(p=p, n=n, p2=p2), fmt)


ResultsArg = Annotated[
    Path,
    typer.Argument(
        help="Results file, CSV or JSON Lines: problem, correct (1/0)[, answer][, model]."
    ),
]


@app.command("results")
def results(
    path: ResultsArg,
    k: Annotated[int, typer.Option("--k", help="Attempts k for pass@k, pass^k, maj@k.")] = 1,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Which model's samples, when the file holds several."),
    ] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Score a results file: pass@1 with its 95 % interval, pass@k, pass^k and maj@k averaged
    over problems (unbiased estimators from each problem's n samples, c correct)."""
    emit(api.eval_results(path, k=k, model=model), fmt)


@app.command("bootstrap")
def bootstrap(
    path: ResultsArg,
    resamples: Annotated[
        int, typer.Option("--resamples", min=1, max=api.MAX_RESAMPLES,
                          help="Bootstrap resamples.")
    ] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Random seed.")] = 0,
    level: Annotated[float, FiniteOption("--level", help="Interval coverage in (0, 1).")] = 0.95,
    fmt: FormatOpt = Format.table,
) -> None:
    """Paired bootstrap of two models' accuracy on the same problems (the file's ``model``
    column names both): the difference's percentile interval and the share of resamples where
    A is not better (q48)."""
    emit(api.eval_bootstrap(path, resamples=resamples, seed=seed, level=level), fmt)


@app.command("bpb")
def bpb(
    loss: Annotated[float, FiniteOption("--loss", help="Mean loss per token, nats.")] = 2.0,
    tokens: Annotated[int, typer.Option("--tokens", help="Tokens of the text.")] = 250,
    bytes_: Annotated[int, typer.Option("--bytes", help="UTF-8 bytes of the text.")] = 1000,
    fmt: FormatOpt = Format.table,
) -> None:
    """Total loss = mean loss × tokens (nats) and bits per byte = total / (ln 2 · bytes): a
    tokenizer-independent comparison (q4)."""
    emit(api.eval_bpb(loss=loss, tokens=tokens, n_bytes=bytes_), fmt)


@app.command("dpo")
def dpo(
    chosen: Annotated[
        float,
        FiniteOption("--chosen", help="log πθ/πref of the chosen answer (summed over its tokens)."),
    ] = 0.0,
    rejected: Annotated[
        float, FiniteOption("--rejected", help="log πθ/πref of the rejected answer.")
    ] = 0.0,
    beta: Annotated[float, FiniteOption("--beta", help="DPO β > 0.")] = 0.1,
    fmt: FormatOpt = Format.table,
) -> None:
    """DPO loss −log σ(β[(log πθ/πref)_w − (log πθ/πref)_l]) of one pair (q31; ln 2 at step 0)."""
    emit(api.eval_dpo(chosen=chosen, rejected=rejected, beta=beta), fmt)


@app.command("grpo")
def grpo(
    rewards: Annotated[
        str | None, typer.Option("--rewards", help="One group's rewards, comma-separated "
                                                   "(default 1,0,0,0 without --group).")
    ] = None,
    std: Annotated[
        str, typer.Option("--std", help="population (÷G) or sample (÷(G−1)).")
    ] = "population",
    p: Annotated[
        float | None,
        FiniteOption("--p", help="Accuracy on the prompt, for the chance a group has signal."),
    ] = None,
    group: Annotated[
        int | None,
        typer.Option("--group", help="Group size G, with --p (default: the number of "
                                     "--rewards)."),
    ] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """GRPO advantages (r − mean)/std of one group (q33); with --p, the chance a group of G
    (--group, or the number of --rewards) is not degenerate, 1 − p^G − (1−p)^G, and the answers
    generated per useful group (q34)."""
    values = None
    if rewards is not None:
        try:
            values = [float(x) for x in rewards.split(",") if x.strip()]
        except ValueError:
            raise NapkinError(
                f"rewards: must be comma-separated numbers, got {rewards!r}") from None
    emit(api.eval_grpo(rewards=values, std=std, p=p, group=group), fmt)


def _ids(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


@app.command("retrieval")
def retrieval(
    queries: Annotated[Path | None, typer.Argument(
        help="JSON Lines, one query a line: {\"query\": …, \"ranked\": [ids, best first], "
             "\"relevant\": [ids]}.", metavar="[QUERIES]")] = None,
    ranked: Annotated[str | None, typer.Option(
        "--ranked", help="One query's retrieved ids, best first, comma-separated.")] = None,
    relevant: Annotated[str | None, typer.Option(
        "--relevant", help="That query's relevant ids, comma-separated.")] = None,
    k: Annotated[int, typer.Option("--k", help="Results that reach the context.")] = 5,
    fmt: FormatOpt = Format.table,
) -> None:
    """recall@k (share of the relevant documents in the first k) and MRR (mean 1/rank of the
    first relevant one) of a retriever, from a queries file or one query (q45)."""
    from napkin.api import retrieval as rapi

    emit(rapi.eval_retrieval(queries, ranked=_ids(ranked), relevant=_ids(relevant), k=k), fmt)


@app.command("rrf")
def rrf(
    lists: Annotated[list[str], typer.Option(
        "--list", help="One ranked list of ids, best first, comma-separated (repeat per "
                       "retriever).")],
    k: Annotated[int, typer.Option("--k", help="Rank offset k of 1/(k + rank).")] = 60,
    top: Annotated[int, typer.Option("--top", help="Fused results shown.")] = 10,
    fmt: FormatOpt = Format.table,
) -> None:
    """Reciprocal-rank fusion: each document's Σ 1/(k + rank) over the lists, k = 60 (q44)."""
    from napkin.api import retrieval as rapi

    emit(rapi.eval_rrf([_ids(x) for x in lists], k=k, top=top), fmt)
