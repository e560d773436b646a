"""Evaluation and preference-tuning formulas: ``napkin eval passk | ci | results | bootstrap |
bpb | dpo | grpo`` (question bank q4, q31–q34, q48, q50).

Probabilities and accuracies are fractions in [0, 1], not percent; losses are in nats.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.errors import NapkinError, require
from napkin.report.econ_views import result_doc

if TYPE_CHECKING:
    from napkin.results_files import Sample

MAX_RESAMPLES = 10_000_000
"""Bootstrap resamples one comparison may ask for."""


def _samples(results: "str | Path | Sequence[Sample]") -> tuple[list["Sample"], str, str | None]:
    """The samples, the name they are reported under, and the file path (None: given as
    samples)."""
    from napkin.results_files import read_samples

    if isinstance(results, str | Path):
        path = Path(results)
        return read_samples(path), path.name, str(path)
    samples = list(results)
    require(bool(samples), "results: no samples given")
    return samples, f"{len(samples):,} samples", None


@checked
def eval_passk(*, n: int = 10, c: int = 2, k: int = 5) -> Result:
    """The chance that at least one (pass@k) or all (pass^k) of k attempts are right, from
    ``n`` samples of which ``c`` are correct (q50; unbiased, Chen et al. 2021).

    ``pass@k = 1 − C(n−c, k)/C(n, k)``, ``pass^k = C(c, k)/C(n, k)`` (n = 10, c = 2, k = 5:
    pass@k 0.778). ``value``: dict with ``pass_at_k`` and ``pass_hat_k``.
    """
    from napkin.evaluation import pass_at_k, pass_hat_k

    data = {"pass_at_k": pass_at_k(n, c, k), "pass_hat_k": pass_hat_k(n, c, k)}
    doc = result_doc("pass@k and pass^k",
                     [["pass@k", "1 − C(n−c, k)/C(n, k)", f"{data['pass_at_k']:.4f}"],
                      ["pass^k", "C(c, k)/C(n, k)", f"{data['pass_hat_k']:.4f}"]],
                     data, {"n": n, "c": c, "k": k},
                     ["pass@k: at least one of k attempts is right; pass^k: all k are"],
                     ["metric", "formula", "value"])
    return Result(doc, dict(data))


@checked
def eval_ci(*, p: float = 0.6, n: int = 500, p2: float | None = None) -> Result:
    """How precisely an accuracy ``p`` measured on ``n`` items is known, and whether a second
    model's ``p2`` on as many items differs from it (chapter 3.1.2, q48).

    Standard error ``SE = √(p(1−p)/n)``, the 95 % interval ``p ± 1.96·SE``; with ``p2`` the
    difference ``p − p2`` and its standard error ``√(p(1−p)/n + p2(1−p2)/n)`` (independent
    items): distinguishable at 95 % when ``|p − p2| ≥ 1.96·SE``. ``value``: dict with
    ``standard_error``, ``low``, ``high``, ``half_width`` (1.96·SE) and with ``p2``
    ``difference`` and ``difference_standard_error``.
    """
    from napkin.evaluation import confidence_interval, difference_standard_error, standard_error

    se = standard_error(p, n)
    low, high = confidence_interval(p, n)
    half = (high - low) / 2
    rows = [["standard error", f"{se:.4f}"], ["95 % interval", f"[{low:.4f}, {high:.4f}]"],
            ["half-width (1.96·SE)", f"±{half:.4f} ({100 * half:.2f} pp)"]]
    data: dict[str, Any] = {"standard_error": se, "low": low, "high": high, "half_width": half}
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
        notes.append("|difference| < 1.96·SE: not distinguishable at 95 %" if z < 1.96
                     else "|difference| ≥ 1.96·SE: distinguishable at 95 %")
    doc = result_doc("Accuracy interval", rows, data, {"p": p, "n": n, "p2": p2}, notes,
                     ["quantity", "value"])
    return Result(doc, dict(data))


@checked
def eval_results(results: "str | Path | Sequence[Sample]", *, k: int = 1,
                 model: str | None = None) -> Result:
    """Score a benchmark's samples: pass@1 with its 95 % interval, pass@k, pass^k and maj@k,
    averaged over problems (each problem weighs the same).

    ``results`` is a results file (CSV with a header or JSON Lines; columns ``problem``,
    ``correct`` 1/0, optional ``answer`` and ``model``; see :mod:`napkin.results_files`) or
    the :class:`~napkin.results_files.Sample` rows themselves. Each problem's n samples with c
    correct give the unbiased pass@k and pass^k (as :func:`eval_passk`); maj@k is the first k
    answers' majority vote; the interval is ``p ± 1.96·√(p(1−p)/problems)``. ``model`` picks
    one model's samples when there are several. ``value``: the
    :class:`~napkin.results_files.SampleScores`.
    """
    from napkin.results_files import score_samples

    samples, name, path = _samples(results)
    s = score_samples(samples, k, model)
    rows = [
        ["problems", f"{s.problems:,}"],
        ["samples per problem", f"{s.samples_per_problem[0]}–{s.samples_per_problem[1]}"],
        ["pass@1", f"{s.pass_at_1:.4f} [{s.pass_at_1_low:.4f}, {s.pass_at_1_high:.4f}]"],
        [f"pass@{k}", f"{s.pass_at_k:.4f}"],
        [f"pass^{k}", f"{s.pass_hat_k:.4f}"],
        [f"maj@{k}", "— (no answer column)" if s.maj_at_k is None else f"{s.maj_at_k:.4f}"],
    ]
    doc = result_doc(f"Results of {name}", rows, {"scores": s},
                     {"results": path, "k": k, "model": model},
                     ["interval: normal approximation over problems, 1.96·√(p(1−p)/n)"],
                     ["metric", "value"])
    return Result(doc, s)


@checked
def eval_bootstrap(results: "str | Path | Sequence[Sample]", *, resamples: int = 10_000,
                   seed: int = 0, level: float = 0.95) -> Result:
    """Whether model A beats model B on the same problems: the paired bootstrap of their
    accuracy difference (q48).

    ``results`` (a file or the samples, as :func:`eval_results`) must hold exactly two
    models (the ``model`` column; A is the first by name). On the problems both answered,
    first sample of each, ``resamples`` draws of the problems with replacement (random
    ``seed``) give the difference A − B's percentile interval at ``level`` in (0, 1) and the
    share of resamples where A ≤ B. ``value``: the
    :class:`~napkin.results_files.ModelComparison`.
    """
    from napkin.results_files import compare_models

    require(isinstance(resamples, int) and 1 <= resamples <= MAX_RESAMPLES,
            f"resamples: must be an integer in [1, {MAX_RESAMPLES:,}], got {resamples!r}")
    require(isinstance(seed, int) and seed >= 0,
            f"seed: must be an integer >= 0, got {seed!r}")
    samples, name, path = _samples(results)
    c = compare_models(samples, resamples, seed, level)
    b = c.bootstrap
    rows = [
        [f"accuracy {c.model_a}", f"{c.accuracy_a:.4f}"],
        [f"accuracy {c.model_b}", f"{c.accuracy_b:.4f}"],
        ["difference A − B", f"{b.mean_difference:+.4f}"],
        [f"{b.level:.0%} interval", f"[{b.low:+.4f}, {b.high:+.4f}]"],
        ["share of resamples with A ≤ B", f"{b.share_a_not_better:.4f}"],
    ]
    doc = result_doc(f"Paired bootstrap of {name}", rows, {"comparison": c},
                     {"results": path, "resamples": resamples, "seed": seed, "level": level},
                     [f"{c.problems} problems answered by both; first sample of each"],
                     ["quantity", "value"])
    return Result(doc, c)


@checked
def eval_bpb(*, loss: float = 2.0, tokens: int = 250, n_bytes: int = 1000) -> Result:
    """Bits per byte of a text: a loss comparison that does not depend on the tokenizer (q4).

    Total loss ``= loss · tokens`` (mean loss per token in nats times the text's tokens),
    bits per byte ``= total / (ln 2 · n_bytes)`` (``n_bytes``: the text's UTF-8 bytes).
    ``value``: dict with ``total_loss_nats`` and ``bits_per_byte``.
    """
    from napkin.evaluation import bits_per_byte, total_loss_nats

    total = total_loss_nats(loss, tokens)
    value = bits_per_byte(total, n_bytes)
    data = {"total_loss_nats": total, "bits_per_byte": value}
    doc = result_doc("Bits per byte",
                     [["total loss", f"{total:,.2f} nats"], ["bits per byte", f"{value:.4f}"]],
                     data, {"loss": loss, "tokens": tokens, "bytes": n_bytes}, None,
                     ["quantity", "value"])
    return Result(doc, dict(data))


@checked
def eval_dpo(*, chosen: float = 0.0, rejected: float = 0.0, beta: float = 0.1) -> Result:
    """The DPO loss of one preference pair (q31; ln 2 ≈ 0.693 nats at step 0).

    ``−log σ(β·(chosen − rejected))`` nats, where ``chosen`` and ``rejected`` are the
    log-ratios ``log πθ/πref`` of the chosen and the rejected answer (summed over their
    tokens) and ``beta`` β > 0. ``value``: dict with ``dpo_loss``.
    """
    from napkin.evaluation import dpo_loss

    value = dpo_loss(chosen, rejected, beta)
    doc = result_doc("DPO loss",
                     [["margin β·(w − l)", f"{beta * (chosen - rejected):+.4f}"],
                      ["loss", f"{value:.4f} nats"]],
                     {"dpo_loss": value}, {"chosen": chosen, "rejected": rejected,
                                           "beta": beta}, None, ["quantity", "value"])
    return Result(doc, {"dpo_loss": value})


MAX_GROUP = 1_000_000
"""Largest GRPO group ``group`` may give (published recipes sample 4–64 answers a prompt)."""


@checked
def eval_grpo(*, rewards: Sequence[float] | None = None, std: str = "population",
              p: float | None = None, group: int | None = None) -> Result:
    """GRPO's group-relative advantages of one group's ``rewards`` (q33; default
    ``[1, 0, 0, 0]``), and with ``p`` how often a group carries any signal (q34).

    ``A_i = (r_i − mean(r))/std(r)`` with ``std`` ``population`` (÷G) or ``sample``
    (÷(G − 1)); all rewards equal: zeros (no signal). At accuracy ``p`` on the prompt a group
    of G answers is not degenerate with probability ``1 − p^G − (1 − p)^G``, and
    ``G/(1 − p^G − (1 − p)^G)`` answers are generated per group with signal. G is ``group``
    (with ``p``; without ``rewards`` only the signal is computed) or the number of
    ``rewards``. ``value``: dict with ``advantages`` (when rewards are given or defaulted) and
    with ``p`` ``group_size``, ``signal_probability`` (and ``generations_per_useful_group``
    when it is > 0).
    """
    from napkin.evaluation import (
        expected_generations_per_useful_group,
        grpo_advantages,
        grpo_signal_probability,
    )

    require(not isinstance(rewards, str),
            f"rewards: must be a sequence of numbers, not a string, got {rewards!r}")
    require(std in ("population", "sample"), f"std: must be population or sample, got {std!r}")
    require(p is None or 0 <= p <= 1, f"p: must be a probability in [0, 1], got {p}")
    if group is not None:
        require(p is not None, "group: needs --p (the accuracy on the prompt)")
        require(isinstance(group, int) and 1 <= group <= MAX_GROUP,
                f"group: must be a whole number in [1, {MAX_GROUP:,}], got {group}")
    if rewards is None and group is None:
        rewards = (1.0, 0.0, 0.0, 0.0)
    data: dict[str, Any] = {}
    rows: list[list[str]] = []
    notes: list[str] = []
    values: list[float] | None = None
    if rewards is not None:
        try:
            values = [float(r) for r in rewards]
        except (TypeError, ValueError):
            raise NapkinError(f"rewards: must be numbers, got {rewards!r}") from None
        require(group is None or group == len(values),
                f"group: must equal the number of --rewards ({len(values)}), got {group}")
        adv = grpo_advantages(values, std)  # type: ignore[arg-type]
        rows = [[f"{r:g}", f"{a:+.4f}"] for r, a in zip(values, adv, strict=True)]
        data["advantages"] = [float(a) for a in adv]
        if not adv.any():
            notes.append("all rewards equal: no signal (zero advantages)")
    if p is not None:
        g = group if group is not None else len(values or ())
        prob = grpo_signal_probability(p, g)
        data.update(group_size=g, signal_probability=prob)
        notes.append(f"at p = {p:g}, a group of {g} has signal with probability "
                     f"1 − p^G − (1 − p)^G = {prob:.4f}")
        per = expected_generations_per_useful_group(p, g) if prob > 0 else None
        if per is not None:
            data["generations_per_useful_group"] = per
            notes.append(f"{per:.2f} answers generated per group with signal (G / that)")
        if values is None:
            rows = [["group size G", f"{g:,}"], ["P(group has signal)", f"{prob:.4f}"],
                    ["answers per group with signal",
                     f"{per:.2f}" if per is not None else "— (no group has signal)"]]
    inputs = {"rewards": values, "std": std, "p": p, "group": group}
    if values is None:
        doc = result_doc("GRPO signal", rows, data, inputs, notes, ["", "value"])
    else:
        doc = result_doc("GRPO advantages", rows, data, inputs, notes, ["reward", "advantage"])
    return Result(doc, dict(data))
