"""How stable a judge metric is: test-retest over repeated judge askings, and agreement with the humans
corrected for the noise of both sides.

Inputs are an outputs x repeats matrix of one metric's scores (each row one output, each column one
independent asking of the judge), the question of each output (the resampling unit), and for the corrected
agreement a raters x outputs matrix of human ratings on the same outputs.

- ICC(A,1) of the repeats (two-way, absolute agreement, one asking; McGraw & Wong 1996): how much one asking
  of the judge agrees with another on the same output. The point estimate is pingouin's
  (``services.stats.interrater.icc_results``); resamples use the same two-way ANOVA formula, vectorised.
- Within-output SD: sqrt of the mean over outputs of the variance of its repeats (ddof 1), in the metric's
  own units: the typical swing of one asking around the output's mean.
- Spearman-Brown reliability of the k-mean: k r / (1 + (k - 1) r), r = ICC(A,1): how reliable the mean of k
  repeats (what reports use) is.
- Corrected agreement (Spearman's disattenuation): r / sqrt(rel_human * rel_metric), with r the Pearson
  correlation of the k-mean with the mean rating, rel_human = ICC(A,k) of the raters and rel_metric the
  Spearman-Brown reliability above. Capped at 1 and flagged when the correction exceeds it (sampling error in
  the reliabilities can push it there).

Every interval is a percentile interval of a bootstrap by question (draw questions with replacement, keep
all their outputs), each resample recomputing every figure it needs; a figure undefined in more than 5 % of
the resamples has no interval. Failure modes: a figure that cannot be computed (fewer than 3 complete
outputs, one repeat only, constant scores, a non-positive reliability) is None with an
``undefined_reason``; nothing raises for data, only for bad arguments (ValueError).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from services.stats.core import FloatArray
from services.stats.interrater import icc_results
from services.stats.passfail import Interval

# A figure undefined in more resamples than this fraction has no interval.
MAX_UNDEFINED_FRACTION = 0.05
DISATTENUATION_RULE = (
    "corrected r = r / sqrt(rel_human * rel_metric), rel_human = ICC(A,k) of the raters, rel_metric = "
    "k * ICC(A,1) / (1 + (k - 1) * ICC(A,1)) of the judge repeats (Spearman-Brown); capped at 1"
)


@dataclass(frozen=True, slots=True)
class RetestResult:
    """A judge metric's test-retest figures over ``repeats`` askings of ``n_outputs`` outputs."""

    n_outputs: int
    n_questions: int
    repeats: int
    n_incomplete: int  # outputs left out: a repeat without a value
    icc_a1: Interval
    within_sd: Interval
    reliability_of_mean: Interval  # Spearman-Brown at k = repeats
    n_resamples: int
    undefined_reason: str | None = None


@dataclass(frozen=True, slots=True)
class CorrectedAgreement:
    """Pearson r of the repeat mean with the mean rating, and the same disattenuated for both sides."""

    n_outputs: int
    n_questions: int
    raw_r: Interval
    rel_human: float | None
    rel_metric: float | None
    corrected_r: Interval
    capped: bool  # the correction exceeded 1 and is shown as 1
    uncapped: float | None
    rule: str
    n_resamples: int
    undefined_reason: str | None = None


def spearman_brown(reliability: float, k: float) -> float:
    """The reliability of the mean of k parallel measurements whose single reliability is ``reliability``."""
    if k <= 0:
        raise ValueError("k must be positive")
    return k * reliability / (1 + (k - 1) * reliability)


def disattenuate(r: float, rel_a: float, rel_b: float) -> float | None:
    """r / sqrt(rel_a rel_b), uncapped; None when a reliability is not positive."""
    if not (rel_a > 0 and rel_b > 0):
        return None
    return r / math.sqrt(rel_a * rel_b)


def _mean_squares(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Two-way ANOVA mean squares (rows, columns, error) of ``x`` shaped (..., n rows, k columns)."""
    n, k = x.shape[-2], x.shape[-1]
    grand = x.mean(axis=(-2, -1), keepdims=True)
    rows = x.mean(axis=-1, keepdims=True)
    cols = x.mean(axis=-2, keepdims=True)
    ssr = k * ((rows - grand) ** 2).sum(axis=(-2, -1))
    ssc = n * ((cols - grand) ** 2).sum(axis=(-2, -1))
    sse = ((x - grand) ** 2).sum(axis=(-2, -1)) - ssr - ssc
    return ssr / (n - 1), ssc / (k - 1), sse / ((n - 1) * (k - 1))


def icc_a1_value(x: FloatArray) -> float | None:
    """ICC(A,1) of an items x raters (outputs x repeats) matrix; None when undefined."""
    n, k = x.shape
    msr, msc, mse = (float(v) for v in _mean_squares(x))
    den = msr + (k - 1) * mse + k * (msc - mse) / n
    return (msr - mse) / den if den > 0 and math.isfinite(den) else None


def icc_ak_value(x: FloatArray) -> float | None:
    """ICC(A,k) of an items x raters matrix (the reliability of the raters' mean); None when undefined."""
    n = x.shape[0]
    msr, msc, mse = (float(v) for v in _mean_squares(x))
    den = msr + (msc - mse) / n
    return (msr - mse) / den if den > 0 and math.isfinite(den) else None


def within_sd_value(x: FloatArray) -> float:
    """sqrt(mean over rows of the variance of the row, ddof 1)."""
    return float(np.sqrt(np.var(x, axis=1, ddof=1).mean()))


def _pearson(a: FloatArray, b: FloatArray) -> float | None:
    if a.size < 3 or float(np.ptp(a)) == 0.0 or float(np.ptp(b)) == 0.0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def question_resamples(groups: Sequence[object], n_resamples: int, seed: int) -> list[np.ndarray]:
    """Row indices of each bootstrap resample by question: ``rng.integers(0, G, G)`` questions drawn (in
    the order questions first appear), all their rows kept, for ``rng = np.random.default_rng(seed)``."""
    order: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        order.setdefault(g, []).append(i)
    members = [np.asarray(v, dtype=np.intp) for v in order.values()]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_resamples):
        pick = rng.integers(0, len(members), len(members))
        out.append(np.concatenate([members[j] for j in pick]))
    return out


def _interval(estimate: float | None, draws: list[float | None], reason: str | None = None) -> Interval:
    if estimate is None:
        return Interval(None, None, None, None, reason or "undefined on the data")
    finite = np.asarray([d for d in draws if d is not None and math.isfinite(d)], dtype=float)
    undefined = len(draws) - finite.size
    if not draws or undefined > MAX_UNDEFINED_FRACTION * len(draws):
        return Interval(
            estimate, None, None, None, f"undefined in {undefined} of {len(draws)} resamples", undefined
        )
    low, high = np.quantile(finite, [0.025, 0.975])
    return Interval(estimate, float(low), float(high), "percentile", None, undefined)


def _check(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")


def _complete(scores: ArrayLike, groups: Sequence[object]) -> tuple[FloatArray, list[object], int]:
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2:
        raise ValueError("scores must be an outputs x repeats matrix")
    if len(groups) != x.shape[0]:
        raise ValueError("groups must name the question of every output (one per row)")
    keep = np.isfinite(x).all(axis=1)
    return x[keep], [g for g, k in zip(groups, keep, strict=True) if k], int((~keep).sum())


def retest(
    scores: ArrayLike, groups: Sequence[object], n_resamples: int = 2000, seed: int = 0
) -> RetestResult:
    """ICC(A,1), within-output SD and the Spearman-Brown reliability of the k-mean of an outputs x repeats
    matrix (NaN: a repeat without a value; such outputs are left out and counted), intervals by question."""
    _check(n_resamples)
    x, kept, incomplete = _complete(scores, groups)
    n, k = x.shape
    questions = len(set(kept))
    reason = None
    if k < 2:
        reason = "one repeat only: score with repeats >= 2"
    elif n < 3:
        reason = f"fewer than 3 outputs with every repeat scored (n = {n})"
    elif float(np.ptp(x)) == 0.0:
        reason = "every repeat of every output has the same value"
    if reason is not None:
        none = Interval(None, None, None, None, reason)
        return RetestResult(n, questions, k, incomplete, none, none, none, 0, reason)
    table, why = icc_results(x.T, [f"r{j}" for j in range(k)])
    icc = table["ICC(A,1)"].estimate if "ICC(A,1)" in table else None
    sd = within_sd_value(x)
    icc_draws: list[float | None] = []
    sd_draws: list[float | None] = []
    sb_draws: list[float | None] = []
    for idx in question_resamples(kept, n_resamples, seed):
        xb = x[idx]
        ib = icc_a1_value(xb)
        icc_draws.append(ib)
        sd_draws.append(within_sd_value(xb))
        sb_draws.append(spearman_brown(ib, k) if ib is not None and ib > -1 / (k - 1) else None)
    sb = spearman_brown(icc, k) if icc is not None else None
    return RetestResult(
        n,
        questions,
        k,
        incomplete,
        _interval(icc, icc_draws, why),
        _interval(sd, sd_draws),
        _interval(sb, sb_draws, why),
        n_resamples,
    )


def corrected_agreement(
    scores: ArrayLike,
    ratings: ArrayLike,
    groups: Sequence[object],
    n_resamples: int = 2000,
    seed: int = 0,
) -> CorrectedAgreement:
    """Pearson r of the repeat mean (``scores``: outputs x repeats) with the mean rating (``ratings``: raters
    x outputs, the same outputs in the same order) and r / sqrt(ICC(A,k) of raters * Spearman-Brown of the
    repeats), each with an interval by question that recomputes r and both reliabilities per resample.
    Outputs missing a repeat or a rating are left out."""
    _check(n_resamples)
    x = np.asarray(scores, dtype=float)
    h = np.asarray(ratings, dtype=float)
    if x.ndim != 2 or h.ndim != 2 or h.shape[1] != x.shape[0]:
        raise ValueError("ratings must be raters x outputs, on the outputs of the scores matrix")
    if len(groups) != x.shape[0]:
        raise ValueError("groups must name the question of every output (one per row)")
    keep = np.isfinite(x).all(axis=1) & np.isfinite(h).all(axis=0)
    x, hr = x[keep], h[:, keep].T  # outputs x raters
    kept = [g for g, ok in zip(groups, keep, strict=True) if ok]
    n, k = x.shape
    questions = len(set(kept))

    def figures(xs: FloatArray, hs: FloatArray) -> tuple[float | None, float | None, float | None]:
        r = _pearson(xs.mean(axis=1), hs.mean(axis=1))
        icc = icc_a1_value(xs)
        rel_m = spearman_brown(icc, k) if icc is not None and icc > -1 / (k - 1) else None
        return r, icc_ak_value(hs), rel_m

    reason = None
    if k < 2:
        reason = "one repeat only: score with repeats >= 2"
    elif hr.shape[1] < 2:
        reason = "fewer than 2 raters: the human reference's reliability is unknown"
    elif n < 3:
        reason = f"fewer than 3 outputs with every repeat and every rating (n = {n})"
    if reason is not None:
        none = Interval(None, None, None, None, reason)
        return CorrectedAgreement(n, questions, none, None, None, none, False, None,
                                  DISATTENUATION_RULE, 0, reason)  # fmt: skip
    r, rel_h, rel_m = figures(x, hr)
    uncapped = disattenuate(r, rel_h, rel_m) if None not in (r, rel_h, rel_m) else None  # type: ignore[arg-type]
    r_draws: list[float | None] = []
    c_draws: list[float | None] = []
    for idx in question_resamples(kept, n_resamples, seed):
        rb, hb, mb = figures(x[idx], hr[idx])
        r_draws.append(rb)
        cb = disattenuate(rb, hb, mb) if rb is not None and hb is not None and mb is not None else None
        c_draws.append(min(cb, 1.0) if cb is not None else None)
    why = None
    if r is None:
        why = "the repeat mean or the mean rating is constant"
    elif uncapped is None:
        why = "a reliability is not positive (rel_human or rel_metric <= 0): no correction"
    corrected = min(uncapped, 1.0) if uncapped is not None else None
    return CorrectedAgreement(
        n,
        questions,
        _interval(r, r_draws, why if r is None else None),
        rel_h,
        rel_m,
        _interval(corrected, c_draws, why),
        uncapped is not None and uncapped > 1.0,
        uncapped,
        DISATTENUATION_RULE,
        n_resamples,
        why,
    )
