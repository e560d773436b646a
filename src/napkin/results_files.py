"""Benchmark results files scored with the metrics of :mod:`napkin.evaluation` (q48, q50, q4).

A results file holds one row per sample: CSV with a header, or JSON Lines (one object per
line). Columns:

``problem``
    the item id (samples of one problem share it);
``correct``
    1/0 (also ``true``/``false``): whether the sample passed;
``answer`` (optional)
    the extracted final answer, for maj@k; empty means an abstention;
``model`` (optional)
    which model produced the sample, for a paired comparison of two models on the same items.

:func:`score_samples` gives per-problem pass@k, pass^k and maj@k averaged over problems,
and the pass@1 accuracy with its normal-approximation 95 % interval over problems;
:func:`compare_models` runs the paired bootstrap of two models' per-problem pass@1.
"""

import csv
import json
import math
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from napkin.errors import NapkinError, require
from napkin.evaluation import (
    PairedBootstrap,
    confidence_interval,
    maj_at_k,
    paired_bootstrap,
    pass_at_k,
    pass_hat_k,
)

MAX_SAMPLES = 10_000_000
"""Rows a results file may hold (beyond it the file is refused before it is scored)."""


@dataclass(frozen=True)
class Sample:
    """One scored sample of one problem."""

    problem: str
    correct: bool
    answer: str | None = None
    model: str = ""


_TRUE = {"1", "true", "yes", "1.0"}
_FALSE = {"0", "false", "no", "0.0"}


def _bool(value: object, where: str) -> bool:
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise NapkinError(f"{where}: correct: must be 1/0 or true/false, got {value!r}")


def _sample(record: dict, where: str) -> Sample:
    require(isinstance(record, dict), f"{where}: must be an object with problem and correct")
    for key in ("problem", "correct"):
        require(key in record and record[key] not in (None, ""),
                f"{where}: {key}: missing (columns: problem, correct, answer, model)")
    answer = record.get("answer")
    answer = None if answer is None or str(answer).strip() == "" else str(answer).strip()
    return Sample(str(record["problem"]), _bool(record["correct"], where), answer,
                  str(record.get("model") or ""))


def read_samples(path: str | Path) -> list[Sample]:
    """Samples from a CSV (header row) or JSON Lines results file (module docstring)."""
    path = Path(path)
    require(path.is_file(), f"results: no such file {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise NapkinError(f"results: {path.name} is not UTF-8 text") from None
    out: list[Sample] = []
    if path.suffix.lower() in (".jsonl", ".json"):
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                raise NapkinError(f"results: {path.name} line {n}: not a JSON object") from None
            out.append(_sample(record, f"results: {path.name} line {n}"))
            require(len(out) <= MAX_SAMPLES, f"results: more than {MAX_SAMPLES:,} samples")
    else:
        reader = csv.DictReader(text.splitlines())
        for n, row in enumerate(reader, start=2):
            out.append(_sample(row, f"results: {path.name} line {n}"))
            require(len(out) <= MAX_SAMPLES, f"results: more than {MAX_SAMPLES:,} samples")
    require(bool(out), f"results: {path.name} has no samples")
    return out


@dataclass(frozen=True)
class SampleScores:
    """Metrics averaged over problems (each problem weighs the same)."""

    problems: int
    samples_per_problem: tuple[int, int]
    """Fewest and most samples of one problem."""
    k: int
    pass_at_1: float
    pass_at_1_low: float
    pass_at_1_high: float
    """Normal-approximation 95 % interval of pass@1 over problems (``p ± 1.96·√(p(1−p)/n)``)."""
    pass_at_k: float
    pass_hat_k: float
    maj_at_k: float | None
    """None when the file has no ``answer`` column values."""


def _by_problem(samples: list[Sample]) -> dict[str, list[Sample]]:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.problem].append(s)
    return groups


def score_samples(samples: list[Sample], k: int, model: str | None = None) -> SampleScores:
    """pass@1, pass@k, pass^k (unbiased, from each problem's n and c) and maj@k (the first k
    answers' majority against the answers of that problem's correct samples), of ``model``'s
    samples (needed when the file holds several models)."""
    require(isinstance(k, int) and k >= 1, f"k: must be an integer >= 1, got {k!r}")
    models = sorted({s.model for s in samples})
    if model is not None:
        require(model in models, f"model: {model!r} not in the file; it has "
                                 f"{', '.join(repr(m) for m in models)}")
        samples = [s for s in samples if s.model == model]
    else:
        require(len(models) == 1, f"model: the file holds {len(models)} models "
                                  f"({', '.join(models)}); pick one with --model")
    groups = _by_problem(samples)
    sizes = [len(g) for g in groups.values()]
    require(k <= min(sizes), f"k: must be <= the fewest samples of a problem ({min(sizes)}), "
                             f"got {k}")
    p1, pk, phk, maj = [], [], [], []
    for group in groups.values():
        n, c = len(group), sum(s.correct for s in group)
        p1.append(c / n)
        pk.append(pass_at_k(n, c, k))
        phk.append(pass_hat_k(n, c, k))
        if any(s.answer is not None for s in group):
            # every answer some correct sample gave is right; summing maj@k over them is the
            # chance that the (tie-broken) leader is one of them (0 when none is right)
            right = {s.answer for s in group if s.correct and s.answer is not None}
            answers = [s.answer for s in group]
            maj.append(sum(maj_at_k(answers, r, k) for r in right))
    acc = float(np.mean(p1))
    low, high = confidence_interval(acc, len(groups))
    has_answers = any(s.answer is not None for s in samples)
    return SampleScores(len(groups), (min(sizes), max(sizes)), k, acc, max(0.0, low),
                        min(1.0, high), float(np.mean(pk)), float(np.mean(phk)),
                        float(np.mean(maj)) if has_answers and maj else None)


@dataclass(frozen=True)
class ModelComparison:
    """Paired bootstrap of two models' per-problem pass@1 (A − B)."""

    model_a: str
    model_b: str
    problems: int
    accuracy_a: float
    accuracy_b: float
    bootstrap: PairedBootstrap


def compare_models(samples: list[Sample], resamples: int = 10_000, seed: int = 0,
                   level: float = 0.95) -> ModelComparison:
    """The two models of the file on the problems both answered, first sample of each (q48)."""
    models = sorted({s.model for s in samples})
    require(len(models) == 2, f"model: the file must hold exactly two models for a paired "
                              f"comparison, found {len(models)} ({', '.join(models) or '—'})")
    first: dict[str, dict[Hashable, bool]] = {m: {} for m in models}
    for s in samples:
        first[s.model].setdefault(s.problem, s.correct)
    shared = sorted(set(first[models[0]]) & set(first[models[1]]))
    require(len(shared) >= 2, "problem: the two models share fewer than 2 problems")
    a = np.array([float(first[models[0]][p]) for p in shared])
    b = np.array([float(first[models[1]][p]) for p in shared])
    require(math.isfinite(level) and 0 < level < 1, f"level: must be in (0, 1), got {level}")
    boot = paired_bootstrap(a, b, resamples=resamples, rng=np.random.default_rng(seed),
                            level=level)
    return ModelComparison(models[0], models[1], len(shared), float(a.mean()), float(b.mean()),
                           boot)
