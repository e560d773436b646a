"""``napkin eval``: sampling metrics, intervals, the paired bootstrap, bits per byte, DPO and
GRPO (question bank q4, q31–q34, q48, q50) from numbers or a results file."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.cli.common import FiniteOption, Format, FormatOpt, emit
from napkin.report.econ_views import result_doc

app = typer.Typer(
    help="Evaluation and preference-tuning formulas: pass@k, pass^k, maj@k, "
    "intervals, paired bootstrap, bits per byte, DPO loss, GRPO signal.",
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
    from napkin.evaluation import pass_at_k, pass_hat_k

    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    emit(
        result_doc(
            "pass@k and pass^k",
            [
                ["pass@k", "1 − C(n−c, k)/C(n, k)", f"{at:.4f}"],
                ["pass^k", "C(c, k)/C(n, k)", f"{hat:.4f}"],
            ],
            {"pass_at_k": at, "pass_hat_k": hat},
            {"n": n, "c": c, "k": k},
            ["pass@k: at least one of k attempts is right; pass^k: all k are"],
            ["metric", "formula", "value"],
        ),
        fmt,
    )


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
    from napkin.evaluation import (
        confidence_interval,
        difference_standard_error,
        standard_error,
    )

    se = standard_error(p, n)
    low, high = confidence_interval(p, n)
    rows = [["standard error", f"{se:.4f}"], ["95 % interval", f"[{low:.4f}, {high:.4f}]"]]
    data: dict = {"standard_error": se, "low": low, "high": high}
    notes = []
    if p2 is not None:
        d_se = difference_standard_error(p, p2, n)
        z = abs(p - p2) / d_se if d_se > 0 else float("inf")
        rows += [
            ["difference p − p2", f"{p - p2:+.4f}"],
            ["SE of the difference (independent items)", f"{d_se:.4f}"],
            ["difference / SE", f"{z:.2f}" if d_se > 0 else "—"],
        ]
        data.update(difference=p - p2, difference_standard_error=d_se)
        notes.append(
            "|difference| < 1.96·SE: not distinguishable at 95 %"
            if z < 1.96
            else "|difference| ≥ 1.96·SE: distinguishable at 95 %"
        )
    emit(
        result_doc(
            "Accuracy interval",
            rows,
            data,
            {"p": p, "n": n, "p2": p2},
            notes,
            ["quantity", "value"],
        ),
        fmt,
    )


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
    from napkin.eval_results import read_samples, score_samples

    s = score_samples(read_samples(path), k, model)
    rows = [
        ["problems", f"{s.problems:,}"],
        ["samples per problem", f"{s.samples_per_problem[0]}–{s.samples_per_problem[1]}"],
        ["pass@1", f"{s.pass_at_1:.4f} [{s.pass_at_1_low:.4f}, {s.pass_at_1_high:.4f}]"],
        [f"pass@{k}", f"{s.pass_at_k:.4f}"],
        [f"pass^{k}", f"{s.pass_hat_k:.4f}"],
        [f"maj@{k}", "— (no answer column)" if s.maj_at_k is None else f"{s.maj_at_k:.4f}"],
    ]
    emit(
        result_doc(
            f"Results of {path.name}",
            rows,
            {"scores": s},
            {"results": str(path), "k": k, "model": model},
            ["interval: normal approximation over problems, 1.96·√(p(1−p)/n)"],
            ["metric", "value"],
        ),
        fmt,
    )


@app.command("bootstrap")
def bootstrap(
    path: ResultsArg,
    resamples: Annotated[
        int, typer.Option("--resamples", min=1, max=10_000_000, help="Bootstrap resamples.")
    ] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Random seed.")] = 0,
    level: Annotated[float, FiniteOption("--level", help="Interval coverage in (0, 1).")] = 0.95,
    fmt: FormatOpt = Format.table,
) -> None:
    """Paired bootstrap of two models' accuracy on the same problems (the file's ``model``
    column names both): the difference's percentile interval and the share of resamples where
    A is not better (q48)."""
    from napkin.eval_results import compare_models, read_samples

    c = compare_models(read_samples(path), resamples, seed, level)
    b = c.bootstrap
    rows = [
        [f"accuracy {c.model_a}", f"{c.accuracy_a:.4f}"],
        [f"accuracy {c.model_b}", f"{c.accuracy_b:.4f}"],
        ["difference A − B", f"{b.mean_difference:+.4f}"],
        [f"{b.level:.0%} interval", f"[{b.low:+.4f}, {b.high:+.4f}]"],
        ["share of resamples with A ≤ B", f"{b.share_a_not_better:.4f}"],
    ]
    emit(
        result_doc(
            f"Paired bootstrap of {path.name}",
            rows,
            {"comparison": c},
            {"results": str(path), "resamples": resamples, "seed": seed, "level": level},
            [f"{c.problems} problems answered by both; first sample of each"],
            ["quantity", "value"],
        ),
        fmt,
    )


@app.command("bpb")
def bpb(
    loss: Annotated[float, FiniteOption("--loss", help="Mean loss per token, nats.")] = 2.0,
    tokens: Annotated[int, typer.Option("--tokens", help="Tokens of the text.")] = 250,
    bytes_: Annotated[int, typer.Option("--bytes", help="UTF-8 bytes of the text.")] = 1000,
    fmt: FormatOpt = Format.table,
) -> None:
    """Total loss = mean loss × tokens (nats) and bits per byte = total / (ln 2 · bytes): a
    tokenizer-independent comparison (q4)."""
    from napkin.evaluation import bits_per_byte, total_loss_nats

    total = total_loss_nats(loss, tokens)
    value = bits_per_byte(total, bytes_)
    emit(
        result_doc(
            "Bits per byte",
            [["total loss", f"{total:,.2f} nats"], ["bits per byte", f"{value:.4f}"]],
            {"total_loss_nats": total, "bits_per_byte": value},
            {"loss": loss, "tokens": tokens, "bytes": bytes_},
            None,
            ["quantity", "value"],
        ),
        fmt,
    )


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
    from napkin.evaluation import dpo_loss

    value = dpo_loss(chosen, rejected, beta)
    emit(
        result_doc(
            "DPO loss",
            [
                ["margin β·(w − l)", f"{beta * (chosen - rejected):+.4f}"],
                ["loss", f"{value:.4f} nats"],
            ],
            {"dpo_loss": value},
            {"chosen": chosen, "rejected": rejected, "beta": beta},
            None,
            ["quantity", "value"],
        ),
        fmt,
    )


@app.command("grpo")
def grpo(
    rewards: Annotated[
        str, typer.Option("--rewards", help="One group's rewards, comma-separated.")
    ] = "1,0,0,0",
    std: Annotated[
        str, typer.Option("--std", help="population (÷G) or sample (÷(G−1)).")
    ] = "population",
    p: Annotated[
        float | None,
        FiniteOption("--p", help="Accuracy on the prompt, for the chance a group has signal."),
    ] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """GRPO advantages (r − mean)/std of one group (q33); with --p, the chance a group of G is
    not degenerate, 1 − p^G − (1−p)^G, and the answers generated per useful group (q34)."""
    from napkin.errors import NapkinError
    from napkin.evaluation import (
        expected_generations_per_useful_group,
        grpo_advantages,
        grpo_signal_probability,
    )

    try:
        values = [float(x) for x in rewards.split(",") if x.strip()]
    except ValueError:
        raise NapkinError(f"rewards: must be comma-separated numbers, got {rewards!r}") from None
    if std not in ("population", "sample"):
        raise NapkinError(f"std: must be population or sample, got {std!r}")
    adv = grpo_advantages(values, std)  # type: ignore[arg-type]
    rows = [[f"{r:g}", f"{a:+.4f}"] for r, a in zip(values, adv, strict=True)]
    data: dict = {"advantages": [float(a) for a in adv]}
    notes = ["all rewards equal: no signal (zero advantages)"] if not adv.any() else []
    if p is not None:
        g = len(values)
        prob = grpo_signal_probability(p, g)
        data["signal_probability"] = prob
        notes.append(f"at p = {p:g}, a group of {g} has signal with probability {prob:.4f}")
        if prob > 0:
            per = expected_generations_per_useful_group(p, g)
            data["generations_per_useful_group"] = per
            notes.append(f"{per:.2f} answers generated per group with signal")
    emit(
        result_doc(
            "GRPO advantages",
            rows,
            data,
            {"rewards": values, "std": std, "p": p},
            notes,
            ["reward", "advantage"],
        ),
        fmt,
    )
