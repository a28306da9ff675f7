"""A metric mapped onto the rubric's scale, and how far it then lies from the humans.

A metric's own scale (0-1, BLEU's 0-100) says nothing about distance to a 1-5 rating until it is mapped onto
the rubric. The map is isotonic regression (scikit-learn), increasing or decreasing with the metric's
orientation, its output clipped to the rubric's range. It is cross-fitted by question: the questions are
split into K seeded folds and every item's calibrated value comes from the map fitted on the other folds, so
no figure is computed on the ratings it was fitted to (an in-sample isotonic fit chases the noise of the
ratings and flatters the metric).

Errors (MAE, RMSE) get a jackknife-t interval by question: leave one question out, se the jackknife standard
error of the leave-out values, limits estimate -+ t_{G-1} se on the statistic's own scale. What a
leave-out value holds decides what the interval covers. Holding the calibrated values fixed ("fixed
maps") counts only each question's own held-out error: it misses the variability the maps bring (each
question also trains the maps of the other folds), and its intervals are narrow (90-94 % coverage at
95 %). Refitting every fold's map without the question ("refit") counts that too, but the delete-one
jackknife over-estimates a variance (Efron & Stein 1981): the part a question adds through the maps it
trains is an interaction between it and the items those maps predict, a second-order term, and the
jackknife counts a second-order term twice. The default counts it once: theta_-g = fixed_-g +
(refit_-g - fixed_-g) / sqrt(2), whose jackknife variance is the fixed one plus half the maps' part (the
bias-corrected jackknife). Up to REFIT_MAX_QUESTIONS questions; beyond, the maps are held fixed, for time
(bench/calibration.py measures the three; docs/statistics.md gives the coverage).

The human baseline is what the same figures give for a rater in place of the metric: each rater against the
mean of the other raters on the items both sides rated, MAE and RMSE averaged over raters, the same
interval. It is the yardstick a metric's error is read against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats.core import FloatArray, IntArray, as_vector, check_confidence, is_constant
from services.stats.reference import t_quantile
from services.stats.resampling import JackknifeCI, jackknife_se

DEFAULT_FOLDS = 5
# Up to this many questions the jackknife refits the maps per question left out (G x (K - 1) PAVA fits);
# beyond, the maps are held fixed, for time.
REFIT_MAX_QUESTIONS = 200
# The weight of the maps' part of a leave-out value (module docstring): 0 holds the maps fixed, 1 is the
# plain refit jackknife, 1/sqrt(2) counts the maps' second-order term once.
MAP_WEIGHT = 1.0 / math.sqrt(2.0)
# Fewer items than this leave a fold with one or two points to fit a map on.
MIN_CALIBRATION_ITEMS = 10


@dataclass(frozen=True, slots=True)
class ErrorFigure:
    """MAE or RMSE with its jackknife-t interval by question; ``estimate`` None when undefined."""

    estimate: float | None
    interval: JackknifeCI | None
    undefined_reason: str | None = None
    # The statistic with each question left out (question -> value), for a paired difference by question.
    leave_out: dict[str, float] | None = None


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One step of the calibration map fitted on every item: metric value -> rubric value."""

    metric: float
    rubric: float


@dataclass(frozen=True, slots=True)
class CalibrationResult:
    """Held-out calibration of one metric onto the rubric.

    ``calibrated`` holds one value per input item (NaN where the metric or the reference is missing), each
    from the map fitted without the item's fold. ``fold_of_question`` maps each question to its fold.
    ``curve`` is the map fitted on all items (for the figure; never used for an error).
    """

    n: int
    n_questions: int
    folds: int
    seed: int
    increasing: bool
    rubric_min: float
    rubric_max: float
    calibrated: tuple[float, ...] | None
    mae: ErrorFigure
    rmse: ErrorFigure
    curve: tuple[CurvePoint, ...]
    fold_of_question: dict[str, int]
    undefined_reason: str | None = None


@dataclass(frozen=True, slots=True)
class HumanBaseline:
    """Each rater against the mean of the other raters; MAE and RMSE averaged over the raters."""

    n_raters: int
    n_items: int
    n_questions: int
    mae: ErrorFigure
    rmse: ErrorFigure
    per_rater_mae: dict[str, float]
    undefined_reason: str | None = None


def question_folds(questions: list[str], folds: int, seed: int) -> dict[str, int]:
    """Distinct questions dealt into ``folds`` folds after a seeded shuffle (numpy default_rng(seed)).

    The questions are taken in order of first appearance, permuted, and the i-th of the permutation goes to
    fold i mod K: folds differ in size by at most one question.
    """
    distinct = list(dict.fromkeys(questions))
    order = np.random.default_rng(seed).permutation(len(distinct))
    return {distinct[int(j)]: pos % folds for pos, j in enumerate(order)}


def _undefined_error(reason: str) -> ErrorFigure:
    return ErrorFigure(None, None, reason)


def jackknife_t_interval(
    estimate: float, leave_out: FloatArray, n: int, confidence: float
) -> tuple[JackknifeCI, str | None]:
    g = leave_out.size
    if g < 3:
        reason = f"fewer than 3 questions to leave out (G = {g})"
        return JackknifeCI(None, None, None, max(g - 1, 0), confidence, n, g, None, reason, estimate), reason
    se = jackknife_se(leave_out)
    t = t_quantile(0.5 + confidence / 2, g - 1)
    ci = JackknifeCI(estimate - t * se, estimate + t * se, se, g - 1, confidence, n, g, None, None, estimate)
    return ci, None


def _error_figures(
    errors: FloatArray, weights: FloatArray, codes: IntArray, names: list[str], confidence: float
) -> tuple[ErrorFigure, ErrorFigure]:
    """MAE and RMSE of per-item ``errors`` (weighted means) with leave-one-question-out jackknife-t."""
    g = len(names)
    total_w = float(weights.sum())
    abs_sum = np.bincount(codes, weights=weights * np.abs(errors), minlength=g)
    sq_sum = np.bincount(codes, weights=weights * errors**2, minlength=g)
    w_sum = np.bincount(codes, weights=weights, minlength=g)
    mae = float(abs_sum.sum() / total_w)
    rmse = math.sqrt(float(sq_sum.sum() / total_w))
    rest = total_w - w_sum
    if np.any(rest <= 0):
        reason = "one question holds every item: nothing left when it is left out"
        return _undefined_error(reason), _undefined_error(reason)
    mae_j = (abs_sum.sum() - abs_sum) / rest
    rmse_j = np.sqrt((sq_sum.sum() - sq_sum) / rest)
    n = int(np.count_nonzero(weights))
    mae_ci, _ = jackknife_t_interval(mae, mae_j, n, confidence)
    rmse_ci, _ = jackknife_t_interval(rmse, rmse_j, n, confidence)
    return (
        ErrorFigure(mae, mae_ci, leave_out=dict(zip(names, mae_j.tolist(), strict=True))),
        ErrorFigure(rmse, rmse_ci, leave_out=dict(zip(names, rmse_j.tolist(), strict=True))),
    )


def isotonic_fit_predict(
    x_sorted: FloatArray,
    y_sorted: FloatArray,
    x_new: FloatArray,
    rubric: tuple[float, float],
    increasing: bool,
) -> FloatArray:
    """scikit-learn's ``IsotonicRegression(y_min, y_max, increasing, out_of_bounds='clip')`` fitted on
    (``x_sorted``, ``y_sorted``), ``x_sorted`` ascending, and evaluated at ``x_new``, without its per-call
    validation: equal x are pooled into their mean with their count as weight, scipy's PAVA
    (``scipy.optimize.isotonic_regression``) fits them, the fit is clipped to the rubric and interpolated
    linearly, flat beyond the training range. The jackknife refit calls it G x (K - 1) times per metric."""
    xs, fitted = isotonic_steps(x_sorted, y_sorted, rubric, increasing)
    out: FloatArray = np.interp(x_new, xs, fitted)
    return out


def isotonic_steps(
    x_sorted: FloatArray, y_sorted: FloatArray, rubric: tuple[float, float], increasing: bool
) -> tuple[FloatArray, FloatArray]:
    """The distinct x of (``x_sorted``, ``y_sorted``), ``x_sorted`` ascending, and the isotonic fit at
    each, clipped to the rubric: equal x pooled into their mean with their count as weight, scipy's PAVA
    (``scipy.optimize.isotonic_regression``, what scikit-learn's ``isotonic_regression`` calls)."""
    from scipy.optimize import isotonic_regression

    starts = np.flatnonzero(np.r_[True, x_sorted[1:] != x_sorted[:-1]])
    counts = np.diff(np.r_[starts, x_sorted.size]).astype(np.float64)
    means = np.add.reduceat(y_sorted, starts) / counts
    fitted = np.asarray(isotonic_regression(means, weights=counts, increasing=increasing).x, dtype=np.float64)
    return x_sorted[starts], np.clip(fitted, rubric[0], rubric[1])


def _refit_jackknife(
    x: FloatArray,
    y: FloatArray,
    held_out: FloatArray,
    fold: IntArray,
    codes: IntArray,
    names: list[str],
    folds: int,
    rubric: tuple[float, float],
    increasing: bool,
    mae: ErrorFigure,
    rmse: ErrorFigure,
    confidence: float,
    map_weight: float,
) -> tuple[ErrorFigure, ErrorFigure]:
    """Leave each question out, cross-fit the rest again on the same folds, and take the jackknife-t of the
    MAE and RMSE with the maps' part of each leave-out value weighted by ``map_weight``:
    theta_-g = fixed_-g + map_weight (refit_-g - fixed_-g) (module docstring).

    The fold holding the question keeps its map (the question was never in its training set); every other
    fold's map is fitted again without the question: G x (K - 1) fits, on data sorted once."""
    if mae.estimate is None or rmse.estimate is None:
        return mae, rmse
    g = len(names)
    order = np.argsort(x, kind="stable")
    xs, ys, fs, cs = x[order], y[order], fold[order], codes[order]
    fold_of_code = np.empty(g, dtype=np.int64)
    fold_of_code[cs] = fs
    in_fold = [fs == f for f in range(folds)]
    mae_j, rmse_j = np.empty(g), np.empty(g)
    base = held_out[order]
    for q in range(g):
        keep = cs != q
        pred = base.copy()
        for f in range(folds):
            if f == fold_of_code[q] or not in_fold[f].any():
                continue
            train = keep & ~in_fold[f]
            pred[in_fold[f]] = isotonic_fit_predict(xs[train], ys[train], xs[in_fold[f]], rubric, increasing)
        err = pred[keep] - ys[keep]
        mae_j[q] = float(np.mean(np.abs(err)))
        rmse_j[q] = math.sqrt(float(np.mean(err**2)))
    if mae.leave_out is not None and rmse.leave_out is not None and map_weight != 1.0:
        mae_fixed = np.fromiter(mae.leave_out.values(), np.float64, g)
        rmse_fixed = np.fromiter(rmse.leave_out.values(), np.float64, g)
        mae_j = mae_fixed + map_weight * (mae_j - mae_fixed)
        rmse_j = rmse_fixed + map_weight * (rmse_j - rmse_fixed)
    n = int(x.size)
    mae_ci, _ = jackknife_t_interval(mae.estimate, mae_j, n, confidence)
    rmse_ci, _ = jackknife_t_interval(rmse.estimate, rmse_j, n, confidence)
    return (
        ErrorFigure(mae.estimate, mae_ci, leave_out=dict(zip(names, mae_j.tolist(), strict=True))),
        ErrorFigure(rmse.estimate, rmse_ci, leave_out=dict(zip(names, rmse_j.tolist(), strict=True))),
    )


@dataclass(frozen=True, slots=True)
class QuestionIndex:
    """Items' questions coded once: ``codes[i]`` is item i's question as 0..G-1, ``names`` the G questions
    in order of first appearance. Every function here that takes the items' questions also takes this, so
    an analysis running many of them on the same items codes the question ids once."""

    codes: IntArray
    names: list[str]

    @classmethod
    def of(cls, questions: Sequence[str]) -> QuestionIndex:
        index: dict[str, int] = {}
        codes = np.fromiter(
            (index.setdefault(q, len(index)) for q in questions), dtype=np.int64, count=len(questions)
        )
        return cls(codes, list(index))

    def __len__(self) -> int:
        return int(self.codes.size)


Questions = Sequence[str] | QuestionIndex


def question_index(questions: Questions) -> tuple[IntArray, list[str]]:
    """Each item's question as 0..G-1 and the G questions, in order of first appearance (the order of
    ``list(dict.fromkeys(questions))``)."""
    qi = questions if isinstance(questions, QuestionIndex) else QuestionIndex.of(questions)
    return qi.codes, qi.names


def question_codes(questions: Questions) -> tuple[IntArray, int]:
    """Each item's question as 0..G-1, in order of first appearance; and G."""
    codes, names = question_index(questions)
    return codes, len(names)


def _kept_questions(codes: IntArray, names: list[str], keep: NDArray[np.bool_]) -> tuple[IntArray, list[str]]:
    """The kept items' questions recoded 0..G'-1 in order of first appearance among the kept items."""
    if keep.all():
        return codes, names
    kept = codes[keep]
    present, first = np.unique(kept, return_index=True)
    order = present[np.argsort(first, kind="stable")]
    recode = np.empty(len(names), dtype=np.int64)
    recode[order] = np.arange(order.size)
    return recode[kept], [names[c] for c in order.tolist()]


def _check_calibration_args(
    n_metric: int, n_human: int, n_questions: int, rubric: tuple[float, float], folds: int, confidence: float
) -> tuple[float, float]:
    """The rubric range as floats; ValueError for unequal lengths, folds < 2, an empty rubric range or a
    confidence outside (0, 1)."""
    if n_metric != n_human or n_questions != n_metric:
        raise ValueError(
            f"metric, human and questions must have the same length, got {n_metric}, {n_human}, {n_questions}"
        )
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    lo, hi = float(rubric[0]), float(rubric[1])
    if not lo < hi:
        raise ValueError(f"rubric range must have min < max, got {rubric}")
    check_confidence(confidence)
    return lo, hi


def _held_out(
    x: FloatArray,
    y: FloatArray,
    fold: IntArray,
    folds: int,
    bounds: tuple[float, float],
    higher_is_better: bool,
) -> FloatArray:
    """Each item's calibrated value by the map fitted on the other folds, in the items' order."""
    # The fold maps by scikit-learn's algorithm on data sorted once (isotonic_fit_predict).
    order = np.argsort(x, kind="stable")
    xs, ys, fs = x[order], y[order], fold[order]
    held_sorted = np.empty(x.size)
    for f in range(folds):
        test = fs == f
        held_sorted[test] = isotonic_fit_predict(xs[~test], ys[~test], xs[test], bounds, higher_is_better)
    held_out = np.empty(x.size)
    held_out[order] = held_sorted
    return held_out


def _full_curve(
    x: FloatArray, y: FloatArray, bounds: tuple[float, float], higher_is_better: bool
) -> tuple[CurvePoint, ...]:
    """The map fitted on every item (the curve shown): scikit-learn's ``IsotonicRegression`` thresholds
    (``X_thresholds_``, ``y_thresholds_``) by its algorithm on data sorted once: the fit at each distinct x,
    then inside a run of equal fitted values only its first and last point."""
    order = np.argsort(x, kind="stable")
    xs, fitted = isotonic_steps(x[order], y[order], bounds, higher_is_better)
    keep = np.ones(fitted.size, dtype=np.bool_)
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return tuple(map(CurvePoint, xs[keep].tolist(), fitted[keep].tolist()))


def calibrate(
    metric: ArrayLike,
    human: ArrayLike,
    questions: Questions,
    rubric: tuple[float, float],
    *,
    higher_is_better: bool = True,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    confidence: float = 0.95,
    refit_max_questions: int = REFIT_MAX_QUESTIONS,
    map_weight: float = MAP_WEIGHT,
) -> CalibrationResult:
    """Cross-fitted isotonic calibration of ``metric`` onto ``rubric`` against the reference ``human``.

    Items missing either value (NaN) are left out. Undefined (reason, no number) with fewer than
    ``MIN_CALIBRATION_ITEMS`` complete items, fewer questions than folds, or a constant metric (its map is
    one value: it tells items apart in no way). Up to ``refit_max_questions`` questions the jackknife refits
    every fold's map without the question left out; beyond, the maps are held fixed (fast, and the maps'
    own variability is then small; bench/calibration.py measures both). ValueError for unequal lengths,
    folds < 2, an empty rubric range or a confidence outside (0, 1).
    """
    x_all, y_all = as_vector(metric, "metric"), as_vector(human, "human")
    lo, hi = _check_calibration_args(x_all.size, y_all.size, len(questions), rubric, folds, confidence)
    keep = np.isfinite(x_all) & np.isfinite(y_all)
    x, y = x_all[keep], y_all[keep]
    codes, names = _kept_questions(*question_index(questions), keep)
    # question_folds on the distinct kept questions, by code: the permutation's i-th goes to fold i mod K.
    perm = np.random.default_rng(seed).permutation(len(names))
    fold_of_code = np.empty(len(names), dtype=np.int64)
    fold_of_code[perm] = np.arange(perm.size) % folds
    fold_of = dict(
        zip([names[j] for j in perm.tolist()], (np.arange(perm.size) % folds).tolist(), strict=True)
    )
    n, g = int(x.size), len(fold_of)

    def undefined(reason: str) -> CalibrationResult:
        return CalibrationResult(
            n,
            g,
            folds,
            seed,
            higher_is_better,
            lo,
            hi,
            None,
            _undefined_error(reason),
            _undefined_error(reason),
            (),
            fold_of,
            reason,
        )

    if n < MIN_CALIBRATION_ITEMS:
        return undefined(
            f"fewer than {MIN_CALIBRATION_ITEMS} items with both a metric value and a reference (n = {n})"
        )
    if g < folds:
        return undefined(f"fewer questions ({g}) than folds ({folds}) to cross-fit by question")
    if is_constant(x):
        return undefined("constant metric: its calibration is a single value, it ranks no item above another")

    fold = fold_of_code[codes]
    held_out = _held_out(x, y, fold, folds, (lo, hi), higher_is_better)
    curve = _full_curve(x, y, (lo, hi), higher_is_better)
    mae, rmse = _error_figures(held_out - y, np.ones(n), codes, names, confidence)
    if g <= refit_max_questions and map_weight != 0.0:
        mae, rmse = _refit_jackknife(
            x,
            y,
            held_out,
            fold,
            codes,
            names,
            folds,
            (lo, hi),
            higher_is_better,
            mae,
            rmse,
            confidence,
            map_weight,
        )
    calibrated = np.full(x_all.size, np.nan)
    calibrated[keep] = held_out
    return CalibrationResult(
        n,
        g,
        folds,
        seed,
        higher_is_better,
        lo,
        hi,
        tuple(calibrated.tolist()),
        mae,
        rmse,
        curve,
        fold_of,
    )


def human_baseline(
    ratings: ArrayLike, questions: Questions, raters: list[str], *, confidence: float = 0.95
) -> HumanBaseline:
    """Each rater against the mean of the others: MAE and RMSE averaged over raters, jackknife-t by question.

    ``ratings`` is items x raters with NaN where a rater did not rate. A rater's error on an item needs the
    rater and at least one other rater on it; a rater with no such item is left out. Leaving a question out
    recomputes every rater's MAE (RMSE) on the rest and their average. Undefined with fewer than 2 raters
    sharing an item. ValueError on a shape that does not match ``questions`` x ``raters``.
    """
    check_confidence(confidence)
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape != (len(questions), len(raters)):
        raise ValueError(f"ratings must be items x raters {(len(questions), len(raters))}, got {r.shape}")
    rated = np.isfinite(r)
    filled = np.where(rated, r, 0.0)
    count = rated.sum(axis=1)
    total = filled.sum(axis=1)
    codes, all_names = question_index(questions)
    g = len(all_names)
    per_rater: dict[str, float] = {}
    abs_sums, sq_sums, w_sums = [], [], []
    used_items = np.zeros(r.shape[0], dtype=np.bool_)
    for j, name in enumerate(raters):
        mask = rated[:, j] & (count >= 2)
        if not mask.any():
            continue
        others = (total[mask] - filled[mask, j]) / (count[mask] - 1)
        err = r[mask, j] - others
        per_rater[name] = float(np.mean(np.abs(err)))
        abs_sums.append(np.bincount(codes[mask], weights=np.abs(err), minlength=g))
        sq_sums.append(np.bincount(codes[mask], weights=err**2, minlength=g))
        w_sums.append(np.bincount(codes[mask], minlength=g).astype(np.float64))
        used_items |= mask
    n_items = int(used_items.sum())
    n_q = len(set(codes[used_items].tolist()))
    if len(per_rater) < 2:
        reason = "fewer than 2 raters on a shared item: no rater can be compared with the others"
        return HumanBaseline(
            len(per_rater),
            n_items,
            n_q,
            _undefined_error(reason),
            _undefined_error(reason),
            per_rater,
            reason,
        )
    a, s, w = np.array(abs_sums), np.array(sq_sums), np.array(w_sums)  # raters x questions
    mae = float(np.mean(a.sum(axis=1) / w.sum(axis=1)))
    rmse = float(np.mean(np.sqrt(s.sum(axis=1) / w.sum(axis=1))))
    present = np.flatnonzero(w.sum(axis=0) > 0)
    rest_w = w.sum(axis=1, keepdims=True) - w[:, present]
    if np.any(rest_w <= 0):
        reason = "a rater's every compared item is in one question: nothing left when it is left out"
        return HumanBaseline(
            len(per_rater),
            n_items,
            n_q,
            ErrorFigure(mae, None, reason),
            ErrorFigure(rmse, None, reason),
            per_rater,
            None,
        )
    mae_j = np.mean((a.sum(axis=1, keepdims=True) - a[:, present]) / rest_w, axis=0)
    rmse_j = np.mean(np.sqrt((s.sum(axis=1, keepdims=True) - s[:, present]) / rest_w), axis=0)
    mae_ci, _ = jackknife_t_interval(mae, mae_j, n_items, confidence)
    rmse_ci, _ = jackknife_t_interval(rmse, rmse_j, n_items, confidence)
    kept = [all_names[q] for q in present.tolist()]
    return HumanBaseline(
        len(per_rater),
        n_items,
        n_q,
        ErrorFigure(mae, mae_ci, leave_out=dict(zip(kept, mae_j.tolist(), strict=True))),
        ErrorFigure(rmse, rmse_ci, leave_out=dict(zip(kept, rmse_j.tolist(), strict=True))),
        per_rater,
    )
