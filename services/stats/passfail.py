"""Pass/fail alignment: how well a metric's pass/fail decision agrees with the binarised human reference.

AUC with DeLong's interval (a cluster BCa when questions repeat), the Youden threshold (no interval), and
the decision figures at it, held out by cross-fitting with jackknife-t intervals by question.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats import special
from services.stats.core import (
    DEFAULT_CHUNK_ELEMENTS,
    FloatArray,
    IntArray,
    as_vector,
    cohen_kappa,
    confusion_counts,
    is_constant,
    z_critical,
)
from services.stats.ranks import tie_groups
from services.stats.reference import rankdata, t_quantile
from services.stats.resampling import (
    BootstrapKind,
    Units,
    bootstrap_distribution,
    bootstrap_limits,
    check_bootstrap_args,
    compiled_pays,
    jackknife_se,
    leave_one_out,
    min_units_reason,
    units_of,
)


@dataclass(frozen=True, slots=True)
class Interval:
    """A figure with its bootstrap interval; None where undefined (``undefined_reason`` says why)."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None  # bca, percentile or jackknife-t
    undefined_reason: str | None = None
    n_resamples_undefined: int = 0


@dataclass(frozen=True, slots=True)
class PassFailResult:
    """How well a metric's pass/fail decision agrees with the binarised human reference (statistics §9).

    ``threshold`` is the metric value maximising Youden's J on the data (pass when the metric is at or above
    it, or at or below it for a lower-is-better metric); ``confusion`` is scikit-learn's matrix there, in
    its layout [[TN, FP], [FN, TP]] with "pass" as the positive class. AUC's interval is DeLong's on the
    logit scale on independent outputs (``_delong_logit_interval``), a BCa resampling whole clusters when
    questions repeat. The threshold has no interval: the bootstrap of a cut point chosen on the
    data does not hold its coverage (bench/coverage.py); ``held_out_thresholds`` show how it moves.

    ``youden_j``, ``kappa``, ``accuracy``, ``precision`` and ``recall`` are held out (cross-fitting): the
    questions are split in two halves at random (``seed``; stratified by pass), each half is judged at the
    Youden threshold of the other half (``held_out_thresholds``), and the figures come from the pooled
    decisions (``confusion_held_out``), so no output is judged by a threshold chosen on it. Their
    intervals are jackknife-t (``_held_out_interval``), leaving one question out with the decisions fixed;
    they need no resamples. The same figures at the threshold chosen on all the data are optimistic and no
    bootstrap of them covers (J's percentile interval 0.68, bench/coverage.py); the held-out ones estimate,
    with intervals that hold, how a threshold chosen on half the data judges new outputs.
    """

    n: int
    n_clusters: int | None
    n_pass: int
    n_fail: int
    human_threshold: float
    higher_is_better: bool
    auc: Interval
    threshold: Interval
    youden_j: Interval
    kappa: Interval
    accuracy: Interval
    precision: Interval
    recall: Interval
    confusion: tuple[tuple[int, int], tuple[int, int]] | None
    n_resamples: int
    seed: int
    confidence: float
    undefined_reason: str | None = None
    confusion_held_out: tuple[tuple[int, int], tuple[int, int]] | None = None
    held_out_thresholds: tuple[float, float] | None = None


# A resample without a pass or without a fail has no ROC curve; up to this fraction of them are left out of
# the interval (and counted), beyond it the interval is undefined.
_PASS_FAIL_MAX_UNDEFINED_FRACTION = 0.05
PASS_FAIL_FIGURES = ("auc", "threshold", "youden_j", "kappa", "accuracy", "precision", "recall")
HELD_OUT_FIGURES = ("youden_j", "kappa", "accuracy", "precision", "recall")


class PassFailKernel:
    """Every pass/fail figure of one metric on many resamples (per-item counts) at once.

    Items are grouped by tie in the metric; per resample the weight of passes and fails in each group gives
    the ROC curve, AUC (ties count one half, as roc_auc_score), the Youden threshold (the highest among
    equal maxima, J compared exactly as in ``youden_cut``) and the confusion matrix there.
    """

    n_stats = len(PASS_FAIL_FIGURES)

    def __init__(self, score: FloatArray, passed: NDArray[np.bool_]) -> None:
        self.ties = tie_groups(score)
        self.values = score[self.ties.order][self.ties.starts]  # ascending distinct values
        self.passed = passed.astype(np.int64)

    def _groups(self, counts: IntArray, flags: IntArray) -> IntArray:
        w = (counts * flags)[:, self.ties.order]
        return np.add.reduceat(w, self.ties.starts, axis=1) if self.ties.has_ties else w

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        if not compiled:
            return self.resample_numpy(counts)
        out = np.empty((counts.shape[0], self.n_stats))
        t = self.ties
        bounds = np.append(t.starts, t.group.size).astype(np.int64)
        from services import stats_kernels

        stats_kernels.in_threads(
            stats_kernels.pass_fail_rows,
            np.ascontiguousarray(counts),
            self.passed,
            t.order,
            bounds,
            self.values,
            out,
        )
        return out

    def resample_numpy(self, counts: IntArray) -> FloatArray:
        """The same figures in numpy (the reference of the compiled kernel)."""
        pos_int = self._groups(counts, self.passed)
        neg_int = self._groups(counts, 1 - self.passed)
        pos, neg = pos_int.astype(np.float64), neg_int.astype(np.float64)
        p_tot, n_tot = pos.sum(axis=1), neg.sum(axis=1)
        neg_below = np.cumsum(neg, axis=1) - neg
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = np.einsum("ij,ij->i", pos, neg_below + 0.5 * neg) / (p_tot * n_tot)
            # Predict pass at or above each distinct value: true and false positives from the top down.
            tp_int = np.cumsum(pos_int[:, ::-1], axis=1)[:, ::-1]
            fp_int = np.cumsum(neg_int[:, ::-1], axis=1)[:, ::-1]
            tp, fp = tp_int.astype(np.float64), fp_int.astype(np.float64)
            # Thresholds are the values drawn in the resample (roc_curve's, without its "nothing passes"),
            # J compared on exact counts; the highest threshold among equal maxima: search from the top.
            key = youden_key(tp_int, fp_int, tp_int[:, :1], fp_int[:, :1])
            key = np.where(pos_int + neg_int > 0, key, np.iinfo(np.int64).min)
            best = key.shape[1] - 1 - np.argmax(key[:, ::-1], axis=1)
            rows = np.arange(key.shape[0])
            tp_b, fp_b = tp[rows, best], fp[rows, best]
            fn_b, tn_b = p_tot - tp_b, n_tot - fp_b
            total = p_tot + n_tot
            accuracy = (tp_b + tn_b) / total
            expected = ((tp_b + fp_b) * p_tot + (fn_b + tn_b) * n_tot) / total**2
            kappa = (accuracy - expected) / (1 - expected)
            precision = tp_b / (tp_b + fp_b)
            recall = tp_b / p_tot
            j = tp_b / p_tot - fp_b / n_tot
            out = np.column_stack([auc, self.values[best], j, kappa, accuracy, precision, recall])
        undefined = (p_tot == 0) | (n_tot == 0)
        out[undefined] = np.nan
        return out

    def exact(self, idx: IntArray, j: int) -> float:
        counts = np.bincount(idx, minlength=self.passed.size)[None, :].astype(np.int64)
        return float(self.resample_numpy(counts)[0, j])  # one row: not worth loading the compiled kernel

    def jackknife(self, compiled: bool = True) -> FloatArray:
        """Leave-one-item-out AUC in closed form, O(n log n) (re-running every figure on n resamples of
        n items was O(n^2): 38 s at 10,000 items); the rows of the other figures are NaN. Reports no longer
        reach it (AUC on independent outputs has DeLong's interval, and clusters are left out whole through
        ``resample``): it completes the kernel protocol and gives bench/coverage.py its item-BCa contrast.

        Leaving out a pass at value s removes its u = (fails below s) + 1/2 (fails tied with s) from the
        Mann-Whitney sum U, leaving out a fail its v = (passes above) + 1/2 (passes tied):
        AUC(-pass) = (U - u) / ((P - 1) N), AUC(-fail) = (U - v) / (P (N - 1)).
        """
        g = self.ties.group
        n_groups = self.ties.sizes.size
        pos = np.bincount(g, weights=self.passed, minlength=n_groups)
        neg = np.bincount(g, weights=1 - self.passed, minlength=n_groups)
        p_tot, n_tot = float(pos.sum()), float(neg.sum())
        neg_below = np.cumsum(neg) - neg
        pos_above = p_tot - np.cumsum(pos)
        u = (neg_below + 0.5 * neg)[g]
        v = (pos_above + 0.5 * pos)[g]
        big_u = float(np.dot(pos, neg_below + 0.5 * neg))
        out = np.full((self.n_stats, g.size), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[0] = np.where(
                self.passed == 1, (big_u - u) / ((p_tot - 1) * n_tot), (big_u - v) / (p_tot * (n_tot - 1))
            )
        return out


def _confusion_figures(tp: FloatArray, fp: FloatArray, fn: FloatArray, tn: FloatArray) -> FloatArray:
    """(rows, 5): the HELD_OUT_FIGURES of confusion counts, Youden's J = TPR - FPR, kappa, accuracy,
    precision, recall (NaN where a ratio is 0/0)."""
    total = tp + fp + fn + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = (tp + tn) / total
        expected = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / total**2
        kappa = (accuracy - expected) / (1 - expected)
        recall = tp / (tp + fn)
        return np.column_stack([recall - fp / (fp + tn), kappa, accuracy, tp / (tp + fp), recall])


@dataclass(frozen=True, slots=True)
class _HeldOut:
    thresholds: tuple[float, float]
    point: dict[str, float]
    confusion: tuple[tuple[int, int], tuple[int, int]]
    jack: FloatArray  # (len(HELD_OUT_FIGURES), questions): each figure leaving one question out
    passed_questions: int  # questions with an output the metric passes: precision's domain


def youden_key(tp: IntArray, fp: IntArray, p: IntArray | int, n: IntArray | int) -> IntArray:
    """Youden's J = TP/P - FP/N times P N, an integer: J compared exactly. Equal J in floats can differ by
    rounding (14/15 - 8/9 is 6e-17 above 4/15 - 2/9) and pick a lower threshold than "the highest among
    equal maxima". Exact in int64 while P N < 2**63."""
    return np.asarray(tp, dtype=np.int64) * n - np.asarray(fp, dtype=np.int64) * p


def _roc_counts(y: IntArray, score: FloatArray) -> tuple[FloatArray, IntArray, IntArray]:
    """The distinct scores (ascending) and, at each, the passes and the fails scoring at or above it."""
    values, group = np.unique(score, return_inverse=True)
    yy = np.asarray(y, dtype=np.int64)
    tp = np.bincount(group, weights=yy, minlength=values.size).astype(np.int64)[::-1].cumsum()[::-1]
    fp = np.bincount(group, weights=1 - yy, minlength=values.size).astype(np.int64)[::-1].cumsum()[::-1]
    return values, tp, fp


def youden_cut(y: IntArray, score: FloatArray) -> tuple[float, float]:
    """(threshold, J): the highest observed value maximising J = TPR - FPR, passing at or above it (every
    observed value is a threshold, as roc_curve's; its "nothing passes" left out: a decision rule passes
    something). J is compared exactly (``youden_key``) and returned as tpr - fpr in floats."""
    values, tp, fp = _roc_counts(y, score)
    p, n = int(tp[0]), int(fp[0])
    key = youden_key(tp, fp, p, n)
    best = values.size - 1 - int(np.argmax(key[::-1]))
    return float(values[best]), float(tp[best] / p - fp[best] / n)


def _decision_figures(y: IntArray, pred: IntArray) -> tuple[dict[str, float], IntArray]:
    """J, kappa, accuracy, precision and recall of 0/1 decisions against 0/1 truth holding a pass and a
    fail, and the confusion matrix (scikit-learn's figures to the last bit: ratios of exact counts, and
    ``cohen_kappa``); precision is NaN when nothing passes."""
    cm = confusion_counts(y, pred, 0, 1)
    tn, fp, fn, tp = (int(v) for v in cm.ravel())
    recall = tp / (tp + fn)
    return {
        "youden_j": recall - fp / (fp + tn) if fp + tn else math.nan,
        "kappa": cohen_kappa(cm),
        "accuracy": (tp + tn) / y.size,
        "precision": tp / (tp + fp) if tp + fp else math.nan,
        "recall": recall,
    }, cm


def roc_auc(y: IntArray, score: FloatArray) -> float:
    """Area under the ROC curve of a score against 0/1 truth holding a pass and a fail (ties count one
    half), by scikit-learn's ``roc_curve`` and ``auc`` steps: the curve's corners at each distinct score
    (collinear points dropped), rates as exact counts over the totals, the trapezoids summed by numpy; so
    the value is ``roc_auc_score``'s to the last bit."""
    _, tp, fp = _roc_counts(y, score)  # exact counts: the same floats as roc_curve's cumulative sums
    tps, fps = tp[::-1].astype(np.float64), fp[::-1].astype(np.float64)
    if fps.size > 2:
        corner = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[corner], tps[corner]
    fpr = np.r_[0.0, fps] / fps[-1]
    tpr = np.r_[0.0, tps] / tps[-1]
    return float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2.0))


def question_halves(units: Units, passed: NDArray[np.bool_], seed: int) -> IntArray:
    """Half (0 or 1) of each item: its question's, the questions dealt alternately in a random order
    (numpy's generator with ``seed``) sorted by their share of passes (stratified: the halves get about
    the same number of passes)."""
    codes = np.arange(units.n) if units.codes is None else units.codes
    share = np.bincount(codes, weights=passed, minlength=units.q) / np.bincount(codes, minlength=units.q)
    order = np.random.default_rng(seed).permutation(units.q)
    order = order[np.argsort(share[order], kind="stable")]
    half = np.empty(units.q, dtype=np.int64)
    half[order] = np.arange(units.q) % 2
    return half[codes]


def _cross_fit(score: FloatArray, passed: NDArray[np.bool_], units: Units, seed: int) -> _HeldOut | str:
    """Judge each half of the questions (``question_halves``) at the Youden threshold of the other half."""
    fold = question_halves(units, passed, seed)
    y = passed.astype(np.int64)
    pred = np.zeros(units.n, dtype=np.int64)
    cuts = []
    for f in (0, 1):
        other = fold != f
        if y[other].min() == y[other].max():
            return "a half of the questions has no pass or no fail to choose a threshold on (cross-fitting)"
        cut = youden_cut(y[other], score[other])[0]
        pred[fold == f] = score[fold == f] >= cut
        cuts.append(cut)
    point, cm = _decision_figures(y, pred)
    confusion = ((int(cm[0, 0]), int(cm[0, 1])), (int(cm[1, 0]), int(cm[1, 1])))
    # Leaving one question out removes its outputs' decisions from the four cells (the decisions stay).
    codes = np.arange(units.n) if units.codes is None else units.codes
    cells = [y & pred, (1 - y) & pred, y & (1 - pred), (1 - y) & (1 - pred)]
    per_question = np.vstack([np.bincount(codes, weights=c, minlength=units.q) for c in cells])
    left = per_question.sum(axis=1, keepdims=True) - per_question
    jack = _confusion_figures(*left.astype(np.float64)).T
    passed_questions = int(np.unique(codes[pred == 1]).size)
    return _HeldOut((cuts[0], cuts[1]), point, confusion, jack, passed_questions)


def default_pass_threshold(scale_min: float, scale_max: float) -> float:
    """Upper half of a rubric: the first integer above its midpoint (4 on 1-5, 1 on -2..2, 6 on 1-10)."""
    return float(math.floor((scale_min + scale_max) / 2) + 1)


class _PassFailManyKernel:
    """The pass/fail figures of several metrics (7 rows each) on one shared set of resamples."""

    def __init__(self, kernels: Sequence[PassFailKernel]) -> None:
        self.kernels = kernels
        self.width = kernels[0].n_stats
        self.n_stats = len(kernels) * self.width

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        return np.hstack([k.resample(counts, compiled) for k in self.kernels])

    def exact(self, idx: IntArray, j: int) -> float:
        return self.kernels[j // self.width].exact(idx, j % self.width)

    def jackknife(self, compiled: bool = True) -> FloatArray:
        return np.vstack([k.jackknife(compiled) for k in self.kernels])


@dataclass(frozen=True, slots=True)
class _PassFailPoint:
    """One metric's complete pairs, units, point figures (scikit-learn's, computed here) and the reason it
    is undefined."""

    x: FloatArray
    score: FloatArray
    passed: NDArray[np.bool_]
    keep: NDArray[np.bool_]
    units: Units
    higher_is_better: bool
    point: dict[str, float]
    confusion: tuple[tuple[int, int], tuple[int, int]] | None
    reason: str | None
    held_out: _HeldOut | str | None = None


def _pass_fail_point(
    x_all: FloatArray,
    h_all: FloatArray,
    human_threshold: float,
    higher_is_better: bool,
    clusters: Any,
    seed: int,
) -> _PassFailPoint:
    if x_all.size != h_all.size:
        raise ValueError(f"metric has {x_all.size} values, human has {h_all.size}")
    keep = np.isfinite(x_all) & np.isfinite(h_all)
    units = units_of(clusters, keep)
    x, h = x_all[keep], h_all[keep]
    score = x if higher_is_better else -x
    passed = h >= human_threshold
    n_pass = int(passed.sum())
    n_fail = int(passed.size - n_pass)
    reason = None
    if n_pass < 2 or n_fail < 2:
        reason = f"needs at least 2 passes and 2 fails by the human threshold ({n_pass} pass, {n_fail} fail)"
    elif is_constant(x):
        reason = "constant metric"
    else:
        reason = min_units_reason(units)
    if reason is not None:
        return _PassFailPoint(x, score, passed, keep, units, higher_is_better, {}, None, reason)
    y = passed.astype(np.int64)
    cut, j = youden_cut(y, score)
    pred = (score >= cut).astype(np.int64)
    at_cut, cm = _decision_figures(y, pred)
    point = {"auc": roc_auc(y, score), "threshold": cut, "youden_j": j, **at_cut}
    confusion = ((int(cm[0, 0]), int(cm[0, 1])), (int(cm[1, 0]), int(cm[1, 1])))
    held_out = _cross_fit(score, passed, units, seed)
    return _PassFailPoint(x, score, passed, keep, units, higher_is_better, point, confusion, None, held_out)


def _held_out_interval(held: _HeldOut | str | None, name: str, confidence: float) -> Interval:
    """A held-out figure with its jackknife-t interval: estimate -+ t se, se the jackknife SE leaving one
    question out (the decisions fixed), t with G - 1 df (precision: the questions the metric passes - 1),
    clipped to the figure's range."""
    if not isinstance(held, _HeldOut):
        return Interval(None, None, None, None, str(held))
    value = held.point[name]
    if not math.isfinite(value):
        return Interval(None, None, None, None, f"{name} undefined on the held-out decisions")
    jack = held.jack[HELD_OUT_FIGURES.index(name)]
    if not np.isfinite(jack).all():
        why = f"{name} undefined when leaving one question out (no predicted pass, pass or fail left)"
        return Interval(value, None, None, "jackknife-t", why)
    g = jack.size
    se = jackknife_se(jack)
    # Precision is a mean over the outputs the metric passes, a domain whose size the thresholds set: its t
    # takes the domain's df, the questions in it - 1 (Korn & Graubard 1999, 5.2). With G - 1 it covered
    # 92.9-93.1 % at rho 0.3 (bench/coverage.py); recall's domain, the raters' passes, is fixed by the data,
    # and with its domain df recall over-covers (97.0 % at n = 50).
    df = max(held.passed_questions - 1, 1) if name == "precision" else g - 1
    half = t_quantile(0.5 + confidence / 2, df) * se
    low_bound = -1.0 if name in ("youden_j", "kappa") else 0.0
    return Interval(value, max(low_bound, value - half), min(1.0, value + half), "jackknife-t")


_NO_THRESHOLD_INTERVAL = (
    "no interval: the bootstrap of a cut point chosen on the data does not hold its coverage; the two "
    "held-out thresholds show how it moves"
)


def _pass_fail_figures(
    pt: _PassFailPoint,
    theta_b: FloatArray | None,
    jack: FloatArray | None,
    n_resamples: int,
    confidence: float,
) -> dict[str, Interval]:
    figures: dict[str, Interval] = {}
    for i, name in enumerate(PASS_FAIL_FIGURES):
        if name in HELD_OUT_FIGURES:
            figures[name] = _held_out_interval(pt.held_out, name, confidence)
            continue
        value = pt.point[name]
        draws = None if theta_b is None else theta_b[i]
        shown = value if pt.higher_is_better or name != "threshold" else -value
        if name == "threshold":
            figures[name] = Interval(shown, None, None, None, _NO_THRESHOLD_INTERVAL)
            continue
        if not math.isfinite(value):
            figures[name] = Interval(None, None, None, None, f"{name} undefined at the chosen threshold")
            continue
        if name == "auc" and not pt.units.clustered:
            figures[name] = _delong_logit_interval(pt.score, pt.passed, value, confidence)
            continue
        if draws is None or jack is None:
            figures[name] = Interval(shown, None, None, None, "no resamples requested")
            continue
        kind: BootstrapKind = "bca" if name == "auc" else "percentile"
        defined = np.isfinite(draws)
        n_nan = int(defined.size - np.count_nonzero(defined))
        if n_nan > _PASS_FAIL_MAX_UNDEFINED_FRACTION * n_resamples:
            why = f"{name} undefined in {n_nan} of {n_resamples} resamples (no pass, fail or predicted pass)"
            figures[name] = Interval(shown, None, None, kind, why, n_nan)
            continue
        limits = bootstrap_limits(draws[defined], value, jack[i] if kind == "bca" else None, confidence)
        if isinstance(limits, str):
            figures[name] = Interval(shown, None, None, kind, limits, n_nan)
        else:
            figures[name] = Interval(shown, limits[0], limits[1], kind, None, n_nan)
    return figures


def delong_auc(score: ArrayLike, passed: ArrayLike) -> tuple[float, float]:
    """ROC AUC of ``score`` for ``passed`` (ties count one half) and DeLong's (1988) variance of it, from
    midranks in O(n log n) (Sun & Xu 2014): the placement of each pass among the fails, V10, and of each
    fail among the passes, V01, give var = s2(V10) / n_pass + s2(V01) / n_fail (sample variances). Raises
    ValueError unless there are at least 2 passes and 2 fails."""
    x = as_vector(score, "score")
    flags = np.asarray(passed)
    if flags.shape != x.shape:
        raise ValueError(f"passed has shape {flags.shape}, score {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("score has missing or infinite values: drop incomplete items first")
    if flags.dtype != np.bool_ and not np.isin(flags, (0, 1)).all():
        raise ValueError("passed must be booleans or 0/1")
    y = flags.astype(bool)
    pos, neg = x[y], x[~y]
    m, n = pos.size, neg.size
    if m < 2 or n < 2:
        raise ValueError(f"need at least 2 passes and 2 fails, got {m} and {n}")
    both = rankdata(np.concatenate([pos, neg]))
    v10 = (both[:m] - rankdata(pos)) / n
    v01 = 1.0 - (both[m:] - rankdata(neg)) / m
    return float(v10.mean()), float(v10.var(ddof=1) / m + v01.var(ddof=1) / n)


def _delong_logit_interval(
    score: FloatArray, passed: NDArray[np.bool_], auc: float, confidence: float
) -> Interval:
    """AUC's interval on independent outputs: DeLong's SE carried to the logit scale by the delta method,
    logit(AUC) -+ z se / (AUC (1 - AUC)), back through the logistic. On tied ratings it covers 94.6-96.3% at
    n = 50-100 where the item BCa covers 95.4-96.7% (bench/coverage.py); the plain DeLong interval,
    AUC -+ z se, covers only 92.3-95.1% and can leave [0, 1]."""
    _, var = delong_auc(score, passed)
    if not 0.0 < auc < 1.0:
        return Interval(
            auc, None, None, "delong-logit", "an AUC of 0 or 1 has no interval on the logit scale"
        )
    if var <= 0.0:
        return Interval(auc, None, None, "delong-logit", "DeLong variance is 0")
    half = z_critical(confidence) * math.sqrt(var) / (auc * (1.0 - auc))
    centre = math.log(auc / (1.0 - auc))
    return Interval(
        auc, float(special.expit(centre - half)), float(special.expit(centre + half)), "delong-logit"
    )


def _shown_thresholds(cuts: tuple[float, float], higher_is_better: bool) -> tuple[float, float]:
    return cuts if higher_is_better else (-cuts[0], -cuts[1])


def pass_fail_many(
    metrics: Mapping[str, ArrayLike],
    human: ArrayLike,
    human_threshold: float,
    *,
    higher_is_better: Mapping[str, bool] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> dict[str, PassFailResult]:
    """``pass_fail`` of every metric against the same human score, keyed like ``metrics``.

    Metrics with the same missing-value pattern share one set of resamples (drawn once): each result equals
    ``pass_fail`` on that metric alone with the same seed. ``higher_is_better`` maps a metric to its
    direction (default True).
    """
    check_bootstrap_args("bca", max(n_resamples, 1), confidence)
    h_all = as_vector(human, "human")
    directions = higher_is_better or {}
    points = {
        name: _pass_fail_point(
            as_vector(x, "metric"), h_all, human_threshold, directions.get(name, True), clusters, seed
        )
        for name, x in metrics.items()
    }
    patterns: dict[bytes, list[str]] = {}
    for name, pt in points.items():
        if pt.reason is None:
            patterns.setdefault(pt.keep.tobytes(), []).append(name)
    draws: dict[str, tuple[FloatArray | None, FloatArray | None]] = {}
    width = PassFailKernel.n_stats
    for names in patterns.values():
        units = points[names[0]].units
        kernel = _PassFailManyKernel([PassFailKernel(points[n].score, points[n].passed) for n in names])
        # Only AUC on clustered data is bootstrapped: on independent outputs it has DeLong's interval.
        if n_resamples > 0 and units.clustered:
            compiled = compiled_pays(n_resamples * units.n * kernel.n_stats, units.n)
            theta_b = bootstrap_distribution(kernel, units, n_resamples, seed, chunk_elements, compiled)
            jack = leave_one_out(kernel, units, chunk_elements, compiled)
            for m, name in enumerate(names):
                draws[name] = theta_b[m * width : (m + 1) * width], jack[m * width : (m + 1) * width]
        else:
            for name in names:
                draws[name] = None, None

    out: dict[str, PassFailResult] = {}
    for name, pt in points.items():
        n_pass = int(pt.passed.sum())
        if pt.reason is not None:
            empty = Interval(None, None, None, None, pt.reason)
            figures = dict.fromkeys(PASS_FAIL_FIGURES, empty)
        else:
            figures = _pass_fail_figures(pt, *draws[name], n_resamples, confidence)
        held_out = pt.held_out if isinstance(pt.held_out, _HeldOut) else None
        out[name] = PassFailResult(
            n=int(pt.x.size),
            n_clusters=pt.units.q if pt.units.clustered else None,
            n_pass=n_pass,
            n_fail=int(pt.passed.size - n_pass),
            human_threshold=float(human_threshold),
            higher_is_better=pt.higher_is_better,
            confusion=pt.confusion,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            undefined_reason=pt.reason,
            confusion_held_out=held_out.confusion if held_out else None,
            held_out_thresholds=_shown_thresholds(held_out.thresholds, pt.higher_is_better)
            if held_out
            else None,
            **figures,
        )
    return out


def pass_fail(
    metric: ArrayLike,
    human: ArrayLike,
    human_threshold: float,
    *,
    higher_is_better: bool = True,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> PassFailResult:
    """Pass/fail alignment of a metric with humans: human pass = reference score >= ``human_threshold``.

    Point figures are scikit-learn's to the last bit, computed here (``roc_auc`` as roc_auc_score; the
    confusion matrix at the observed value maximising Youden's J = TPR - FPR, compared on exact counts, the
    highest among equal maxima; Cohen's kappa, accuracy/precision/recall and J on the held-out decisions,
    see ``PassFailResult``). Intervals: for AUC,
    DeLong's on the logit scale on independent outputs, else BCa drawing whole clusters (see
    ``bootstrap_ci_many``; resamples without a pass or a fail are left out and counted while they are at
    most 5%, beyond which the interval is undefined); jackknife-t by question for the held-out figures,
    none for the threshold. The held-out figures are undefined when a half of the questions has no pass or
    no fail. Undefined (reason given) with fewer than 2 passes or 2 fails, a constant metric, or fewer than
    3 clusters. Incomplete pairs are dropped. Raises ValueError on malformed input.
    """
    return pass_fail_many(
        {"x": metric},
        human,
        human_threshold,
        higher_is_better={"x": higher_is_better},
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        clusters=clusters,
        chunk_elements=chunk_elements,
    )["x"]
