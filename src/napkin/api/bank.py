"""The question bank's small formulas: ``napkin tokens | attention-scale | objectives |
balance-loss | rounding`` (q1–q3, q5–q6, q12, q17, q20)."""

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import ModelRef, load_model
from napkin.errors import require
from napkin.report.econ_views import result_doc

MAX_TEXT_BYTES = 16 * 2**20
"""Largest text ``tokens`` encodes (a document, not a corpus)."""


@checked
def tokens(text: str | None = None, *, file: str | Path | None = None,
           tokenizer: str | Path = "gpt2") -> Result:
    """Tokens, characters and UTF-8 bytes of a text under a real tokenizer (q1, q3).

    ``text``, or the UTF-8 text of ``file`` (give one), encoded offline by the ``tokenizers``
    library (extra ``napkin[tokenize]``) with ``tokenizer``: a shipped id (``gpt2``: GPT-2's
    byte-level BPE, 50,257 tokens) or the path of a Hugging Face ``tokenizer.json``; no special
    tokens added. Characters per token ``chars / tokens``, bytes per token ``bytes / tokens``,
    and the English rule of thumb ``chars / 4`` tokens beside the real count. ``value``: the
    :class:`~napkin.specs.tokenizer.TokenCount`.
    """
    from napkin.catalog.tokenizer_files import tokenizer_path
    from napkin.specs.files import read_user_text
    from napkin.specs.tokenizer import CHARS_PER_TOKEN_RULE, count_tokens

    require((text is None) != (file is None), "text: give a TEXT or --file, not both and not "
                                              "neither")
    source = "text"
    if file is not None:
        text = read_user_text(file, "file", MAX_TEXT_BYTES)
        source = str(file)
    assert text is not None
    require(len(text.encode("utf-8")) <= MAX_TEXT_BYTES,
            f"text: at most {MAX_TEXT_BYTES:,} bytes are encoded")
    path = tokenizer_path(str(tokenizer))
    c = count_tokens(text, path)
    name = str(tokenizer)
    rule_error = (c.rule_tokens / c.num_tokens - 1) if c.num_tokens else 0.0
    rows = [["tokens", f"{c.num_tokens:,}"], ["characters", f"{c.num_chars:,}"],
            ["UTF-8 bytes", f"{c.num_bytes:,}"],
            ["characters per token", f"{c.chars_per_token:.2f}"],
            ["bytes per token", f"{c.bytes_per_token:.2f}"],
            [f"tokens by the {CHARS_PER_TOKEN_RULE:g}-characters rule",
             f"{c.rule_tokens:,.1f} ({rule_error:+.0%})" if c.num_tokens else
             f"{c.rule_tokens:,.1f}"],
            ["vocabulary", f"{c.vocab_size:,} tokens"]]
    data = {"tokens": c.num_tokens, "chars": c.num_chars, "bytes": c.num_bytes,
            "chars_per_token": c.chars_per_token, "bytes_per_token": c.bytes_per_token,
            "rule_tokens": c.rule_tokens, "vocab_size": c.vocab_size}
    notes = ["the 4-characters rule was made for English; a vocabulary learnt on little "
             "Russian splits Cyrillic (2 bytes a letter) into more tokens (q3)"]
    return Result(result_doc(f"Tokens under {Path(name).name}", rows, data,
                             {"source": source, "tokenizer": name}, notes), c)


@checked
def attention_scale(model: ModelRef | None = None, *, d_k: int | None = None,
                    var_q: float = 1.0, var_k: float = 1.0) -> Result:
    """Variance of attention scores before and after the ``1/√d_k`` scale (q6).

    For q, k with ``d_k`` independent zero-mean components of variances ``var_q``, ``var_k``:
    ``Var(q·k) = d_k·var_q·var_k`` (its standard deviation the square root), and
    ``Var(q·k/√d_k) = var_q·var_k`` (1 for unit variances). ``d_k`` is given, or the query/key
    head size of ``model`` (``head_dim``; for MLA ``qk_nope_head_dim + qk_rope_head_dim``).
    ``value``: the :class:`~napkin.accounting.attention_scale.ScoreScale`.
    """
    from napkin.accounting.attention_scale import score_scale

    require((model is None) != (d_k is None), "d-k: give a MODEL or --d-k, not both and not "
                                               "neither")
    label: str | None = None
    if model is not None:
        spec = load_model(model)
        dims = sorted({g.block.attention.qk_head_dim for g in spec.layer_groups
                       if g.block.attention is not None and g.block.linear_attention is None})
        require(bool(dims), f"model: {spec.name} has no softmax-attention layer")
        d_k, label = dims[-1], model if isinstance(model, str) else spec.name
    assert d_k is not None
    s = score_scale(d_k, var_q, var_k)
    rows = [["d_k", f"{s.head_dim:,}"], ["Var(q·k) = d_k·σ_q²·σ_k²", f"{s.score_var:,.4g}"],
            ["std of q·k", f"{s.score_std:,.4g}"], ["scale 1/√d_k", f"{s.scale:.6g}"],
            ["Var(q·k/√d_k)", f"{s.scaled_var:.4g}"]]
    data = {"d_k": s.head_dim, "score_var": s.score_var, "score_std": s.score_std,
            "scale": s.scale, "scaled_score_var": s.scaled_var}
    notes = ["unscaled, a softmax over scores this spread is nearly one-hot and its "
             "derivatives p(1 − p) nearly zero; the scale returns the variance to σ_q²·σ_k²"]
    return Result(result_doc("Attention score scale", rows, data,
                             {"model": label, "d_k": s.head_dim, "var_q": var_q,
                              "var_k": var_k}, notes), s)


@checked
def objectives(*, seq: int = 1000, mask_rate: float = 0.15, bos: bool = False) -> Result:
    """Loss terms per sequence: causal (decoder-only) LM against masked LM (q5, q12).

    A causal LM predicts each next token of a ``seq``-token sequence: ``T − 1`` targets (``T``
    with ``bos``, a BOS token in front); a masked LM (BERT) only its masked share
    ``mask_rate·T`` (15 %). ``value``: the
    :class:`~napkin.training.objectives.ObjectiveTargets`.
    """
    from napkin.training.objectives import objective_targets

    o = objective_targets(seq, mask_rate, bos)
    rows = [["causal LM (decoder-only)", "T − 1" if not bos else "T (BOS in front)",
             f"{o.causal_targets:,}"],
            ["masked LM (BERT)", "mask rate · T", f"{o.masked_targets:,.1f}"],
            ["causal / masked", "", f"{o.ratio:,.2f}×"]]
    data = {"causal_targets": o.causal_targets, "masked_targets": o.masked_targets,
            "causal_per_masked": o.ratio}
    notes = ["every position of a causal LM is a training example in one pass (the causal "
             "mask); BERT learns only from the tokens it masked"]
    return Result(result_doc("Prediction targets per sequence", rows, data,
                             {"seq": seq, "mask_rate": mask_rate, "bos": bos}, notes,
                             ["objective", "targets", "count"]), o)


@checked
def balance_loss(f: list[float], *, p: list[float] | None = None,
                 alpha: Annotated[float, Field(ge=0)] = 0.01) -> Result:
    """The Switch Transformer's load-balancing loss ``α·N·Σ_i f_i·P_i`` (Fedus et al. 2021;
    q17).

    ``f``: the share of tokens dispatched to each of N experts; ``p``: each expert's mean
    router probability (default: ``f``); both sum to 1. Uniform routing gives ``α`` (the
    minimum), collapse onto one expert ``α·N``. ``value``: dict with ``loss``,
    ``loss_over_alpha`` (``N·Σ f_i·P_i``), ``uniform_loss`` and ``collapsed_loss``.
    """
    from napkin.accounting.balance_loss import switch_balance_loss

    probs = list(f) if p is None else p
    loss = switch_balance_loss(f, probs, alpha)
    n = len(f)
    ratio = n * sum(a * b for a, b in zip(f, probs, strict=True))
    data: dict[str, Any] = {"loss": loss, "loss_over_alpha": ratio, "uniform_loss": alpha,
                            "collapsed_loss": alpha * n, "experts": n}
    rows = [["experts N", f"{n}"], ["N·Σ f_i·P_i", f"{ratio:.4f}"],
            ["loss α·N·Σ f_i·P_i", f"{loss:.6g}"],
            ["at uniform routing (1/N each)", f"{alpha:.6g} (= α)"],
            ["collapsed onto one expert", f"{alpha * n:.6g} (= α·N)"]]
    notes = ["the gradient flows through the router probabilities P, not the counts f"]
    return Result(result_doc("Switch load-balancing loss", rows, data,
                             {"f": list(f), "p": probs, "alpha": alpha}, notes), dict(data))


@checked
def rounding(value: float, *, add: float | None = None) -> Result:
    """``value`` rounded to BF16, FP16 and FP32 (round to nearest, ties to even), each format's
    spacing (ulp) there, and with ``add`` the sum ``value + add`` computed in each format
    (operands rounded, then the exact sum rounded): 1 + 0.001 = 1 in BF16 (q20).

    BF16 has 8 significand bits (7 stored) and FP32's exponent range; FP16 11 bits (10 stored)
    up to 65504; FP32 24 bits. ``value``: dict format → ``{"rounded", "ulp",
    "relative_error", "sum"}`` (``sum`` with ``add``; ``null`` past the format's range).
    """
    from napkin.specs.rounding import FORMATS, round_to, ulp

    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    out: dict[str, dict[str, float | None]] = {}
    rows = []
    for name, fmt in FORMATS.items():
        r = round_to(value, fmt)
        entry: dict[str, float | None] = {
            "significand_bits": fmt.significand_bits, "rounded": finite(r),
            "ulp": ulp(value, fmt) if math.isfinite(r) else None,
            "relative_error": (finite((r - value) / value) if math.isfinite(r) else None)
            if value else 0.0}
        row = [name, f"{fmt.significand_bits} ({fmt.stored_significand_bits} stored)",
               f"{r:.10g}", "—" if entry["ulp"] is None else f"{entry['ulp']:.4g}"]
        if add is not None:
            a = round_to(add, fmt)
            # the double sum of two such numbers, rounded again, is the correctly rounded sum
            # (53 ≥ 2·24 + 2 bits: double rounding is innocuous for +; Figueroa 1995)
            s = round_to(r + a, fmt) if math.isfinite(r + a) else r + a
            entry["sum"] = finite(s)
            row.append(f"{s:.10g}" + (" (= value: the addend is lost)"
                                       if s == r and a and math.isfinite(r) else ""))
        out[name] = entry
        rows.append(row)
    columns = ["format", "significand bits", "value", "ulp at value"]
    if add is not None:
        columns.append(f"value + {add:g}")
    notes = ["round to nearest, ties to even; past the largest finite value: inf (null in "
             "JSON)", "an addend below half the ulp of the value is lost"]
    return Result(result_doc("Rounding to BF16, FP16, FP32", rows, {"formats": out},
                             {"value": value, "add": add}, notes, columns), out)
