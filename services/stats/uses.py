"""The figures behind the trust verdicts beyond the Alternative Annotator Test: a non-inferiority test of a
paired difference by the question jackknife, the questions that would decide it, and pass/fail decision
rates (TPR, TNR) of a calibrated metric beside a rater's against the others.

Non-inferiority: d is how much worse the metric is than the human yardstick (MAE_metric - MAE_human, or
TPR_human - TPR_metric), se its jackknife standard error leaving one question out (both sides recomputed
without it, so their pairing by question is kept), t_{G-1}. With margin m and one-sided level alpha:

    non-inferior when d + t_{1-alpha, G-1} se < m   (H0: d >= m rejected; p = T_{G-1}((d - m) / se)),
    inferior     when d - t_{1-alpha, G-1} se > m   (H0: d <= m rejected),
    undecided    otherwise.

Undecided, the questions needed are the normal-approximation power formula the comparisons use
(``comparisons.n_needed_to_separate``): G* = (z_{1-alpha} + z_{power})^2 sigma^2 / (m - d)^2 with
sigma^2 = G se^2 the per-question variance, for the side d lies on. None when d = m exactly (no number of
questions decides a difference at the margin).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from services.stats import special
from services.stats.calibration import Questions, jackknife_t_interval, question_index
from services.stats.core import FloatArray, as_vector
from services.stats.reference import t_quantile
from services.stats.resampling import jackknife_se

Decision = Literal["non-inferior", "inferior", "undecided"]
DEFAULT_POWER = 0.8


@dataclass(frozen=True, slots=True)
class NonInferiority:
    """The one-sided test of ``difference`` (metric worse by) against ``margin``; see the module docstring."""

    difference: float | None
    margin: float
    alpha: float
    se: float | None
    df: int
    lower: float | None
    upper: float | None
    p_value: float | None
    decision: Decision | None
    n_questions: int
    questions_needed: int | None
    undefined_reason: str | None = None


def paired_leave_out(
    a: float, a_loo: Mapping[str, float], b: float, b_loo: Mapping[str, float]
) -> tuple[float, FloatArray]:
    """a - b and its value leaving each question out, over the questions either side has (a side without
    the question keeps its full value when it is left out)."""
    n = len(a_loo)
    if list(a_loo) == list(b_loo):  # the same questions in the same order: pair the values as they come
        return a - b, np.fromiter(a_loo.values(), np.float64, n) - np.fromiter(b_loo.values(), np.float64, n)
    if a_loo.keys() == b_loo.keys():
        return a - b, np.fromiter(a_loo.values(), np.float64, n) - np.array([b_loo[q] for q in a_loo])
    names = sorted(set(a_loo) | set(b_loo))
    loo = np.array([a_loo.get(q, a) - b_loo.get(q, b) for q in names], dtype=np.float64)
    return a - b, loo


def questions_for_power(sigma2: float, gap: float, alpha: float, power: float = DEFAULT_POWER) -> int | None:
    """(z_{1-alpha} + z_power)^2 sigma^2 / gap^2, rounded up; None for a zero gap."""
    if gap == 0.0:
        return None
    z = float(special.ndtri(1 - alpha)) + float(special.ndtri(power))
    return max(math.ceil(z**2 * sigma2 / gap**2), 3)


def non_inferiority(
    difference: float,
    leave_out: ArrayLike,
    margin: float,
    *,
    alpha: float = 0.05,
    power: float = DEFAULT_POWER,
) -> NonInferiority:
    """The test of the module docstring on ``difference`` with its leave-one-question-out values.

    Undefined with fewer than 3 questions or no variance across them. ValueError for alpha or power outside
    (0, 1) or a negative margin."""
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0):
        raise ValueError("alpha and power must lie in (0, 1)")
    if not margin >= 0.0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    loo = as_vector(leave_out, "leave_out")
    g = int(loo.size)

    def undefined(reason: str) -> NonInferiority:
        return NonInferiority(
            difference, margin, alpha, None, max(g - 1, 0), None, None, None, None, g, None, reason
        )

    if g < 3:
        return undefined(f"fewer than 3 questions to leave out (G = {g})")
    se = jackknife_se(loo)
    if se == 0.0:
        return undefined("the difference is the same whichever question is left out: no standard error")
    t1 = t_quantile(1 - alpha, g - 1)
    lower, upper = difference - t1 * se, difference + t1 * se
    p = float(special.stdtr(g - 1, (difference - margin) / se))
    decision: Decision
    needed = None
    if upper < margin:
        decision = "non-inferior"
    elif lower > margin:
        decision = "inferior"
    else:
        decision = "undecided"
        needed = questions_for_power(g * se**2, margin - difference, alpha, power)
    return NonInferiority(difference, margin, alpha, se, g - 1, lower, upper, p, decision, g, needed)


@dataclass(frozen=True, slots=True)
class Rate:
    """A share (TPR or TNR) with its jackknife-t interval by question, clipped to [0, 1], and its value
    leaving each question out (``leave_out``, for a paired difference)."""

    estimate: float | None
    low: float | None
    high: float | None
    leave_out: dict[str, float]
    undefined_reason: str | None = None


@dataclass(frozen=True, slots=True)
class DecisionRates:
    """Pass (>= threshold) decisions of the calibrated metric against the reference's, and of each rater
    against the mean of the other raters (averaged over raters): true-positive and true-negative rates."""

    threshold: float
    n: int
    n_pass: int
    n_fail: int
    tpr: Rate
    tnr: Rate
    human_tpr: Rate
    human_tnr: Rate
    n_raters: int


def _rate(
    num: list[FloatArray],
    den: list[FloatArray],
    items: FloatArray,
    names: list[str],
    n: int,
    confidence: float,
    what: str,
) -> Rate:
    """Mean over sides (the metric alone, or every rater) of sum(num) / sum(den), per-question arrays;
    the jackknife leaves out every question with an item on the side (``items`` per question), as the
    held-out pass/fail figures do."""
    if not num:
        return Rate(None, None, None, {}, f"{what}: no rater compared with the others")
    nums, dens = np.array(num), np.array(den)
    tot_n, tot_d = nums.sum(axis=1), dens.sum(axis=1)
    if np.any(tot_d == 0):
        return Rate(None, None, None, {}, f"{what}: no item on that side of the threshold")
    est = float(np.mean(tot_n / tot_d))
    present = np.flatnonzero(items > 0)
    rest_d = tot_d[:, None] - dens[:, present]
    if np.any(rest_d == 0):
        why = f"{what}: every such item is in one question, nothing left when it is left out"
        return Rate(est, None, None, {}, why)
    loo = np.mean((tot_n[:, None] - nums[:, present]) / rest_d, axis=0)
    ci, reason = jackknife_t_interval(est, loo, n, confidence)
    low = None if ci.low is None else max(0.0, ci.low)
    high = None if ci.high is None else min(1.0, ci.high)
    kept = names if present.size == len(names) else [names[q] for q in present.tolist()]
    return Rate(est, low, high, dict(zip(kept, loo.tolist(), strict=True)), reason)


def decision_rates(
    calibrated: ArrayLike,
    human: ArrayLike,
    ratings: ArrayLike,
    questions: Questions,
    threshold: float,
    *,
    confidence: float = 0.95,
) -> DecisionRates:
    """TPR = share of reference passes the metric passes, TNR = share of reference fails it fails (items with
    both values), beside the same for each rater against the mean of the others (items the rater and at
    least one other rated), averaged over raters. Intervals: jackknife-t by question, the decisions fixed."""
    pred, h = as_vector(calibrated, "calibrated"), as_vector(human, "human")
    r = np.asarray(ratings, dtype=np.float64)
    if not (pred.size == h.size == len(questions)) or r.ndim != 2 or r.shape[0] != pred.size:
        raise ValueError("calibrated, human, ratings and questions must describe the same items")
    codes, names = question_index(questions)
    g = len(names)
    keep = np.isfinite(pred) & np.isfinite(h)
    hp, mp = (h >= threshold) & keep, (pred >= threshold) & keep
    hf, mf = keep & ~hp, keep & ~mp

    def per_q(mask: np.ndarray) -> FloatArray:
        return np.bincount(codes[mask], minlength=g).astype(np.float64)

    n = int(keep.sum())
    tpr = _rate([per_q(hp & mp)], [per_q(hp)], per_q(keep), names, n, confidence, "TPR")
    tnr = _rate([per_q(hf & mf)], [per_q(hf)], per_q(keep), names, n, confidence, "TNR")
    rated = np.isfinite(r)
    count, total = rated.sum(axis=1), np.where(rated, r, 0.0).sum(axis=1)
    tp_n, tp_d, tn_n, tn_d = [], [], [], []
    used = np.zeros(pred.size, dtype=np.bool_)
    for j in range(r.shape[1]):
        mask = rated[:, j] & (count >= 2)
        if not mask.any():
            continue
        ref = np.zeros(pred.size, dtype=np.bool_)
        ref[mask] = (total[mask] - r[mask, j]) / (count[mask] - 1) >= threshold
        own = np.zeros(pred.size, dtype=np.bool_)
        own[mask] = r[mask, j] >= threshold
        tp_n.append(per_q(mask & ref & own))
        tp_d.append(per_q(mask & ref))
        tn_n.append(per_q(mask & ~ref & ~own))
        tn_d.append(per_q(mask & ~ref))
        used |= mask
    n_h = int(used.sum())
    if len(tp_n) < 2:
        tp_n, tp_d, tn_n, tn_d = [], [], [], []
    return DecisionRates(
        float(threshold),
        n,
        int(hp.sum()),
        int(hf.sum()),
        tpr,
        tnr,
        _rate(tp_n, tp_d, per_q(used), names, n_h, confidence, "raters' TPR"),
        _rate(tn_n, tn_d, per_q(used), names, n_h, confidence, "raters' TNR"),
        len(tp_n),
    )
