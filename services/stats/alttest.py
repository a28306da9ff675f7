"""The Alternative Annotator Test: may a metric replace one of the raters?

Calderon, Reichart & Dror, "The Alternative Annotator Test for LLM-as-a-Judge: How to Statistically Justify
Replacing Human Annotators with LLMs" (ACL 2025). For each rater j, left out in turn, the reference of an
item is the mean of the remaining raters. On a continuous or ordinal scale the alignment of a score s with
that reference is -|s - ref|; per item, W^f = 1 when the metric's alignment is at least the rater's, W^h = 1
when the rater's is at least the metric's (a tie counts for both). With rho^f_j = mean(W^f) and
rho^h_j = mean(W^h):

    H0_j: rho^h_j - rho^f_j >= eps    against    H1_j: rho^h_j - rho^f_j < eps,

a one-sided paired t-test, ``scipy.stats.ttest_rel(W^h - eps, W^f, alternative='less')`` (the mean of
(W^h - eps) - W^f below 0; computed by the same arithmetic in ``paired_t_less``, which the tests hold equal
to scipy's). eps is the cost-benefit margin (0.2 by default, the paper's guidance
for skilled raters; 0.1 for experts, 0.15-0.2 for crowd workers). The p-values of the m raters are adjusted
by Benjamini-Yekutieli (``scipy.stats.false_discovery_control(method='by')``); the winning rate omega is the
share of raters whose H0 is rejected at alpha (0.05), and the metric may replace the raters when
omega >= 0.5. The average advantage probability rho = mean over raters of rho^f_j compares judges.

The test needs at least 3 raters (a reference of at least 2 others for every rater left out) and, per
rater, at least ``MIN_SHARED_ITEMS`` (10) items rated by that rater and 2 others with a metric value: a
t-test on fewer is decided by a handful of items. Items are treated as independent; a metric's values
should be held-out calibrated ones (``services.stats.calibration``) so that -|pred - ref| is on the
rubric's scale and no item's own ratings shaped its prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats import special
from services.stats.calibration import Questions, jackknife_t_interval, question_codes
from services.stats.core import FloatArray, as_vector, check_confidence
from services.stats.resampling import JackknifeCI

DEFAULT_EPSILON = 0.2
DEFAULT_ALPHA = 0.05
MIN_RATERS = 3
MIN_SHARED_ITEMS = 10
REPLACE_OMEGA = 0.5


@dataclass(frozen=True, slots=True)
class RaterTest:
    """One rater left out: items, rho^f (metric's advantage), rho^h (rater's), the one-sided p, adjusted."""

    rater: str
    n_items: int
    rho_metric: float
    rho_rater: float
    t_statistic: float
    p_value: float
    p_adjusted: float
    rejected: bool


@dataclass(frozen=True, slots=True)
class AltTestResult:
    """The test over all raters; every number None when undefined, with what is missing."""

    epsilon: float
    alpha: float
    n_raters: int
    n_items: int
    raters: tuple[RaterTest, ...]
    omega: float | None
    rho: float | None
    replace: bool | None
    undefined_reason: str | None = None
    raters_needed: int = MIN_RATERS
    items_needed: int = MIN_SHARED_ITEMS
    rho_interval: JackknifeCI | None = None


def _rho_interval(
    w_fs: list[FloatArray], masks: list[NDArray[np.bool_]], questions: Questions | None, confidence: float
) -> JackknifeCI:
    """Jackknife-t of rho by question: leave a question out, every rater's mean(W^f) on the rest, averaged."""
    n = masks[0].size
    codes, g = question_codes(questions if questions is not None else [str(i) for i in range(n)])
    sums = np.array([np.bincount(codes[m], weights=w, minlength=g) for w, m in zip(w_fs, masks, strict=True)])
    counts = np.array([np.bincount(codes[m], minlength=g) for m in masks], dtype=np.float64)
    present = np.flatnonzero(counts.sum(axis=0) > 0)
    rest = counts.sum(axis=1, keepdims=True) - counts[:, present]
    rho = float(np.mean(sums.sum(axis=1) / counts.sum(axis=1)))
    used = int(np.any(masks, axis=0).sum())
    if np.any(rest <= 0):
        reason = "a rater's every item is in one question: nothing left when it is left out"
        return JackknifeCI(None, None, None, 0, confidence, used, present.size, None, reason, rho)
    leave_out = np.mean((sums.sum(axis=1, keepdims=True) - sums[:, present]) / rest, axis=0)
    return jackknife_t_interval(rho, leave_out, used, confidence)[0]


def paired_t_less(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """``scipy.stats.ttest_rel(a, b, alternative='less')``'s statistic and p-value, by its own arithmetic
    (mean of a - b over its standard error, variance with ddof 1, p = T_{n-1}(t) by ``scipy.special.stdtr``)
    without the array-API dispatch that costs more than the test on a few thousand items."""
    d = a - b
    n = d.size
    mean = float(d.mean())
    v = float(np.mean((d - mean) ** 2)) * (n / (n - 1))
    t = mean / math.sqrt(v / n)
    return t, float(special.stdtr(n - 1, t))


def _indicators(pred: FloatArray, rater: FloatArray, ref: FloatArray) -> tuple[FloatArray, FloatArray]:
    """W^f, W^h per item: whose alignment -|score - ref| with the others' mean is at least the other's."""
    s_metric = -np.abs(pred - ref)
    s_rater = -np.abs(rater - ref)
    return (s_metric >= s_rater).astype(np.float64), (s_rater >= s_metric).astype(np.float64)


def _too_few(raters: list[str], eligible: list[int], per_rater: NDArray[np.int64], min_items: int) -> str:
    short = [f"{raters[j]} ({int(per_rater[j])})" for j in range(len(raters)) if j not in eligible]
    missing = f"; items per rater: {', '.join(short)}" if short else ""
    return (
        f"needs {MIN_RATERS} raters each with at least {min_items} items rated by them and 2 other "
        f"raters with a metric value; {len(eligible)} of {len(raters)} raters qualify{missing}"
    )


def alt_test(
    metric: ArrayLike,
    ratings: ArrayLike,
    raters: list[str],
    *,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    min_items: int = MIN_SHARED_ITEMS,
    questions: Questions | None = None,
    confidence: float = 0.95,
) -> AltTestResult:
    """The Alternative Annotator Test of ``metric`` (items, NaN where missing; on the rubric's scale)
    against ``ratings`` (items x raters, NaN where not rated).

    Undefined, with the reason naming what is missing, when fewer than 3 raters have ``min_items`` items
    rated by them and 2 others, when the metric is constant on them, or when a rater's paired differences
    have no variance (every item the same outcome, e.g. all ties): the t-test has no standard error there.
    ``rho_interval`` is a jackknife-t by question (``questions``: one per item; None: each item its own).
    ValueError on mismatched shapes, epsilon outside [0, 1) or alpha outside (0, 1).
    """
    from scipy import stats as sps

    pred = as_vector(metric, "metric")
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape != (pred.size, len(raters)):
        raise ValueError(f"ratings must be items x raters {(pred.size, len(raters))}, got {r.shape}")
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if questions is not None and len(questions) != pred.size:
        raise ValueError(f"questions must give one id per item ({pred.size}), got {len(questions)}")
    check_confidence(confidence)
    rated = np.isfinite(r)
    count = rated.sum(axis=1)
    total = np.where(rated, r, 0.0).sum(axis=1)
    has_pred = np.isfinite(pred)

    def undefined(reason: str, n_raters: int, n_items: int) -> AltTestResult:
        return AltTestResult(
            epsilon, alpha, n_raters, n_items, (), None, None, None, reason, MIN_RATERS, min_items
        )

    per_rater = (rated & (count >= 3)[:, None] & has_pred[:, None]).sum(axis=0)
    eligible = [j for j in range(len(raters)) if int(per_rater[j]) >= min_items]
    items = has_pred & (count >= 3)
    n_items = int(items.sum())
    if len(eligible) < MIN_RATERS:
        return undefined(_too_few(raters, eligible, per_rater, min_items), len(eligible), n_items)
    if float(np.ptp(pred[items])) == 0.0:
        return undefined("constant metric: its value is the same on every item", len(eligible), n_items)
    rows: list[tuple[str, int, float, float, float, float]] = []
    flat: list[str] = []
    w_fs, masks = [], []
    for j in eligible:
        mask = rated[:, j] & (count >= 3) & has_pred
        w_f, w_h = _indicators(pred[mask], r[mask, j], (total[mask] - r[mask, j]) / (count[mask] - 1))
        w_fs.append(w_f)
        masks.append(mask)
        if float(np.ptp((w_h - epsilon) - w_f)) == 0.0:
            flat.append(raters[j])
            continue
        statistic, p_value = paired_t_less(w_h - epsilon, w_f)
        rows.append((raters[j], int(mask.sum()), float(w_f.mean()), float(w_h.mean()), statistic, p_value))
    if flat:
        return undefined(
            "the paired t-test has no variance for rater(s) "
            + ", ".join(flat)
            + ": the metric and the rater compare the same way on every item (e.g. all ties)",
            len(eligible),
            n_items,
        )
    adjusted = sps.false_discovery_control([row[5] for row in rows], method="by")
    tests = tuple(
        RaterTest(name, n, rho_f, rho_h, float(t), float(p), float(q), bool(q < alpha))
        for (name, n, rho_f, rho_h, t, p), q in zip(rows, adjusted, strict=True)
    )
    omega = sum(t.rejected for t in tests) / len(tests)
    rho = float(np.mean([t.rho_metric for t in tests]))
    return AltTestResult(
        epsilon,
        alpha,
        len(tests),
        n_items,
        tests,
        omega,
        rho,
        omega >= REPLACE_OMEGA,
        None,
        MIN_RATERS,
        min_items,
        _rho_interval(w_fs, masks, questions, confidence),
    )
