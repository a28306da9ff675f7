"""How stable a judge metric is: test-retest over repeated judge askings, and agreement with the humans
corrected for the noise of both sides.

Inputs are an outputs x repeats matrix of one metric's scores (each row one output, each column one
independent asking of the judge), the question of each output (the resampling unit), and for the corrected
agreement a raters x outputs matrix of human ratings on the same outputs.

- ICC(A,1) of the repeats (two-way, absolute agreement, one asking; McGraw & Wong 1996): how much one asking
  of the judge agrees with another on the same output. The point estimate is
  ``services.stats.interrater.icc_results``'s (pingouin's to the last bit); resamples use the same two-way
  ANOVA formula, vectorised.
- Within-output SD: sqrt of the mean over outputs of the variance of its repeats (ddof 1), in the metric's
  own units: the typical swing of one asking around the output's mean.
- Spearman-Brown reliability of the k-mean: k r / (1 + (k - 1) r), r = ICC(A,1): how reliable the mean of k
  repeats (what reports use) is.
- Corrected agreement (Spearman's disattenuation): r / sqrt(rel_human * rel_metric), with r the Pearson
  correlation of the k-mean with the mean rating, rel_human = ICC(A,k) of the raters and rel_metric the
  Spearman-Brown reliability above. Capped at 1 and flagged when the correction exceeds it (sampling error in
  the reliabilities can push it there).

Intervals resample by question (the outputs of one question are one unit), chosen by measured coverage
(bench/stability_coverage.py; the percentile bootstrap of ICC(A,1) covered 0.93 at n = 50):

- ICC(A,1): jackknife-t on Fisher's intraclass z, z = 1/2 ln((1 + (k - 1) r) / (1 - r)): z -+ t_{G-1} se,
  se the leave-one-question-out jackknife standard error of z, G the number of questions, mapped back
  (``retest_interval``). The reliability of the k-mean is the Spearman-Brown map of those limits (it is
  increasing in r).
- Within-output SD: jackknife-t on log SD, the same way.
- Raw and corrected r: BCa bootstrap by question (draw questions with replacement, keep all their outputs;
  scipy's BCa formulas via ``services.stats.resampling.bootstrap_limits``, the acceleration from the
  leave-one-question-out values), every resample recomputing r and both reliabilities, the limits read at
  the small-sample expanded level 2 Phi(sqrt(G / (G - 1)) t_{G-1}) - 1 (Hesterberg 2015; the main
  report's Pearson reads its limits there too: the plain BCa fell short with few questions, see
  docs/statistics.md); the corrected limits are capped at 1 after. A figure undefined in more than 5 % of
  the resamples has no interval; the rest are dropped.

Failure modes: a figure that cannot be computed (fewer than 3 complete outputs, one repeat only, constant
scores, a non-positive reliability) is None with an ``undefined_reason``; an interval that cannot (fewer
than 3 questions, a leave-one-out value undefined or at the bound) has limits None with its reason;
nothing raises for data, only for bad arguments (ValueError).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from services.stats.core import FloatArray, check_confidence
from services.stats.interrater import icc_results
from services.stats.passfail import Interval
from services.stats.resampling import bootstrap_limits, expanded_confidence, jackknife_se

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
    confidence: float = 0.95
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


def question_members(groups: Sequence[object]) -> list[np.ndarray]:
    """Row indices of each question, questions in the order they first appear."""
    order: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        order.setdefault(g, []).append(i)
    return [np.asarray(v, dtype=np.intp) for v in order.values()]


def question_resamples(groups: Sequence[object], n_resamples: int, seed: int) -> list[np.ndarray]:
    """Row indices of each bootstrap resample by question: ``rng.integers(0, G, G)`` questions drawn (in
    the order questions first appear), all their rows kept, for ``rng = np.random.default_rng(seed)``."""
    members = question_members(groups)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_resamples):
        pick = rng.integers(0, len(members), len(members))
        out.append(np.concatenate([members[j] for j in pick]))
    return out


def question_leave_outs(groups: Sequence[object]) -> list[np.ndarray]:
    """Row indices with one question left out, one array per question (in order of first appearance)."""
    members = question_members(groups)
    rows = np.arange(len(groups))
    out = []
    for m in members:
        keep = np.ones(len(groups), dtype=bool)
        keep[m] = False
        out.append(rows[keep])
    return out


def intraclass_z(r: float, k: int) -> float:
    """Fisher's z of an intraclass correlation over k columns: 1/2 ln((1 + (k - 1) r) / (1 - r));
    inf at r = 1, -inf at r = -1 / (k - 1), NaN beyond."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(0.5 * np.log(np.float64(1 + (k - 1) * r) / np.float64(1 - r)))


def intraclass_r(z: float, k: int) -> float:
    """The inverse of ``intraclass_z``: (e^{2z} - 1) / (e^{2z} + k - 1)."""
    if z > 350:
        return 1.0
    e = math.exp(2 * z)
    return (e - 1) / (e + k - 1)


def _jackknife_t(
    estimate: float,
    loo: list[float | None],
    to_z: Callable[[float], float],
    from_z: Callable[[float], float],
    confidence: float,
) -> tuple[float, float] | str:
    """z(est) -+ t_{G-1} se_jack(z(loo)) mapped back; the reason when undefined."""
    from scipy import stats as sps

    g = len(loo)
    if g < 3:
        return f"fewer than 3 questions (G = {g}): no jackknife interval"
    if any(v is None for v in loo):
        return "undefined when one question is left out (jackknife)"
    z_hat = to_z(estimate)
    zs = np.asarray([to_z(v) for v in loo if v is not None], dtype=float)
    if not (math.isfinite(z_hat) and np.isfinite(zs).all()):
        return "at the bound of its scale (or leaving one question out puts it there): no jackknife interval"
    se = jackknife_se(zs)
    t = float(sps.t.ppf(0.5 + confidence / 2, g - 1))
    return float(from_z(z_hat - t * se)), float(from_z(z_hat + t * se))


def retest_interval(
    x: FloatArray, groups: Sequence[object], confidence: float = 0.95
) -> tuple[tuple[float, float] | str, tuple[float, float] | str]:
    """Jackknife-t limits by question of ICC(A,1) (on Fisher's intraclass z) and of the within-output SD
    (on log SD) of a complete outputs x repeats matrix; a reason string where a limit pair is undefined."""
    k = x.shape[1]
    leave_outs = question_leave_outs(groups)
    icc = icc_a1_value(x)
    sd = within_sd_value(x)
    icc_loo = [icc_a1_value(x[idx]) for idx in leave_outs]
    sd_loo: list[float | None] = [within_sd_value(x[idx]) for idx in leave_outs]
    icc_ci: tuple[float, float] | str = "ICC(A,1) undefined"
    if icc is not None:
        icc_ci = _jackknife_t(
            icc, icc_loo, lambda r: intraclass_z(r, k), lambda z: intraclass_r(z, k), confidence
        )
    sd_ci: tuple[float, float] | str = "every repeat equals its output's other repeats (SD 0)"
    if sd > 0:
        sd_ci = _jackknife_t(
            sd,
            sd_loo,
            lambda v: math.log(v) if v > 0 else -math.inf,
            math.exp,
            confidence,
        )
    return icc_ci, sd_ci


def _limits(estimate: float | None, limits: tuple[float, float] | str | None, method: str) -> Interval:
    if estimate is None:
        return Interval(None, None, None, None, limits if isinstance(limits, str) else "undefined")
    if limits is None or isinstance(limits, str):
        return Interval(estimate, None, None, None, limits or "undefined")
    return Interval(estimate, limits[0], limits[1], method)


def _bca(
    estimate: float | None,
    draws: list[float | None],
    loo: list[float | None],
    confidence: float,
    reason: str | None = None,
    cap: float | None = None,
) -> Interval:
    """BCa limits by question from the resample values ``draws`` and the leave-one-question-out ``loo``;
    undefined resamples are dropped when at most 5 % of them. ``cap`` bounds the estimate and the limits."""
    if estimate is None:
        return Interval(None, None, None, None, reason or "undefined on the data")
    shown = min(estimate, cap) if cap is not None else estimate
    finite = np.asarray([d for d in draws if d is not None and math.isfinite(d)], dtype=float)
    undefined = len(draws) - finite.size
    if not draws or undefined > MAX_UNDEFINED_FRACTION * len(draws):
        return Interval(
            shown, None, None, None, f"undefined in {undefined} of {len(draws)} resamples", undefined
        )
    if len(loo) < 3:
        return Interval(shown, None, None, None, f"fewer than 3 questions (G = {len(loo)})", undefined)
    if any(v is None or not math.isfinite(v) for v in loo):
        return Interval(shown, None, None, None, "undefined when one question is left out (BCa)", undefined)
    limits = bootstrap_limits(finite, estimate, np.asarray(loo, dtype=float), confidence)
    if isinstance(limits, str):
        return Interval(shown, None, None, None, limits, undefined)
    low, high = limits
    if cap is not None:
        low, high = min(low, cap), min(high, cap)
    return Interval(shown, low, high, "bca", None, undefined)


def _check(n_resamples: int, confidence: float = 0.95) -> None:
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    check_confidence(confidence)


def _complete(scores: ArrayLike, groups: Sequence[object]) -> tuple[FloatArray, list[object], int]:
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2:
        raise ValueError("scores must be an outputs x repeats matrix")
    if len(groups) != x.shape[0]:
        raise ValueError("groups must name the question of every output (one per row)")
    keep = np.isfinite(x).all(axis=1)
    return x[keep], [g for g, k in zip(groups, keep, strict=True) if k], int((~keep).sum())


def retest(scores: ArrayLike, groups: Sequence[object], confidence: float = 0.95) -> RetestResult:
    """ICC(A,1), within-output SD and the Spearman-Brown reliability of the k-mean of an outputs x repeats
    matrix (NaN: a repeat without a value; such outputs are left out and counted), with jackknife-t
    intervals by question (ICC on Fisher's intraclass z, SD on log SD; the reliability the Spearman-Brown
    map of the ICC limits). Raises ValueError for a malformed matrix or groups."""
    check_confidence(confidence)
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
        return RetestResult(n, questions, k, incomplete, none, none, none, confidence, reason)
    table, why = icc_results(x.T, [f"r{j}" for j in range(k)])
    icc = table["ICC(A,1)"].estimate if "ICC(A,1)" in table else None
    sd = within_sd_value(x)
    icc_ci, sd_ci = retest_interval(x, kept, confidence)
    sb = spearman_brown(icc, k) if icc is not None else None
    sb_ci: tuple[float, float] | str = icc_ci
    if not isinstance(icc_ci, str):
        sb_ci = (spearman_brown(icc_ci[0], k), spearman_brown(icc_ci[1], k))
    return RetestResult(
        n,
        questions,
        k,
        incomplete,
        _limits(icc, why if icc is None else icc_ci, "jackknife-t"),
        _limits(sd, sd_ci, "jackknife-t"),
        _limits(sb, why if sb is None else sb_ci, "jackknife-t"),
        confidence,
    )


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _agreement_figures(xs: FloatArray, hs: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Pearson r of the repeat mean with the mean rating, and r disattenuated for both reliabilities, of
    each of a stack of samples (``xs``: samples x outputs x repeats, ``hs``: samples x outputs x raters);
    NaN where undefined (a constant side, fewer than 3 outputs, a reliability not positive)."""
    k = xs.shape[-1]
    a, b = xs.mean(axis=-1), hs.mean(axis=-1)
    da, db = a - a.mean(axis=-1, keepdims=True), b - b.mean(axis=-1, keepdims=True)
    saa, sbb = (da * da).sum(axis=-1), (db * db).sum(axis=-1)
    constant = (np.ptp(a, axis=-1) == 0.0) | (np.ptp(b, axis=-1) == 0.0) | (a.shape[-1] < 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(constant, np.nan, (da * db).sum(axis=-1) / np.sqrt(saa * sbb))
        msr, msc, mse = _mean_squares(xs)
        n = xs.shape[-2]
        den = msr + (k - 1) * mse + k * (msc - mse) / n
        icc = np.where((den > 0) & np.isfinite(den), (msr - mse) / den, np.nan)
        rel_m = np.where(icc > -1 / (k - 1), k * icc / (1 + (k - 1) * icc), np.nan)
        hsr, hsc, hse = _mean_squares(hs)
        hden = hsr + (hsc - hse) / n
        rel_h = np.where((hden > 0) & np.isfinite(hden), (hsr - hse) / hden, np.nan)
        ok = (rel_m > 0) & (rel_h > 0)
        c = np.where(ok, r / np.sqrt(np.where(ok, rel_m * rel_h, 1.0)), np.nan)
    return r, c


def _resample_figures(
    x: FloatArray, hr: FloatArray, resamples: list[np.ndarray], chunk: int = 256
) -> list[tuple[float | None, float | None]]:
    """(r, uncapped corrected r) of each resample (rows of ``x`` and ``hr``), resamples of one size
    computed together in stacks of ``chunk``."""
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(resamples)
    by_size: dict[int, list[int]] = {}
    for i, idx in enumerate(resamples):
        by_size.setdefault(idx.size, []).append(i)
    for members in by_size.values():
        for start in range(0, len(members), chunk):
            part = members[start : start + chunk]
            rows = np.stack([resamples[i] for i in part])
            r, c = _agreement_figures(x[rows], hr[rows])
            for i, rv, cv in zip(part, r, c, strict=True):
                out[i] = (_finite(float(rv)), _finite(float(cv)))
    return out


def corrected_agreement(
    scores: ArrayLike,
    ratings: ArrayLike,
    groups: Sequence[object],
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    expand: bool = True,
) -> CorrectedAgreement:
    """Pearson r of the repeat mean (``scores``: outputs x repeats) with the mean rating (``ratings``: raters
    x outputs, the same outputs in the same order) and r / sqrt(ICC(A,k) of raters * Spearman-Brown of the
    repeats), each with a BCa interval by question that recomputes r and both reliabilities per resample
    (the resamples of ``question_resamples``), its limits read at the small-sample expanded level
    ``expanded_confidence(confidence, G)`` for G questions (``expand``; the plain BCa when False). Outputs
    missing a repeat or a rating are left out. Raises ValueError for mismatched shapes or bad arguments."""
    _check(n_resamples, confidence)
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

    def figures(rows: np.ndarray | None) -> tuple[float | None, float | None]:
        """(r, uncapped corrected r) on the given rows (all rows when None)."""
        xs, hs = (x, hr) if rows is None else (x[rows], hr[rows])
        r, c = _agreement_figures(xs[None], hs[None])
        return _finite(r[0]), _finite(c[0])

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
    r, uncapped = figures(None)
    icc = icc_a1_value(x)
    rel_h = icc_ak_value(hr)
    rel_m = spearman_brown(icc, k) if icc is not None and icc > -1 / (k - 1) else None
    drawn = _resample_figures(x, hr, question_resamples(kept, n_resamples, seed))
    left = _resample_figures(x, hr, question_leave_outs(kept))
    # The bootstrap's narrowness at few questions (it divides by G where the unbiased variance divides by
    # G - 1, and reads normal quantiles where t quantiles belong) undone as in the main report's Pearson.
    level = expanded_confidence(confidence, questions) if expand and questions >= 2 else confidence
    why = None
    if r is None:
        why = "the repeat mean or the mean rating is constant"
    elif uncapped is None:
        why = "a reliability is not positive (rel_human or rel_metric <= 0): no correction"
    return CorrectedAgreement(
        n,
        questions,
        _bca(r, [d[0] for d in drawn], [v[0] for v in left], level, why if r is None else None),
        rel_h,
        rel_m,
        _bca(uncapped, [d[1] for d in drawn], [v[1] for v in left], level, why, cap=1.0),
        uncapped is not None and uncapped > 1.0,
        uncapped,
        DISATTENUATION_RULE,
        n_resamples,
        why,
    )
