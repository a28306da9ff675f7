"""Prediction-powered estimate of a run's mean human score from a few ratings and a metric on every output.

Pure functions over numpy arrays (no database, no HTTP), like ``services.stats``.

Why power tuning (PPI++, Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) and not plain PPI: the metric
predicts the human score on another scale (0-1 against 1-5 or -2..2), and may be lower-is-better. Plain PPI
(lambda = 1) adds the metric's mean to the rated mean of (Y - f), so its variance carries Var(f) however
badly f is scaled; PPI++ estimates

    theta(lambda) = lambda * mean(f_unrated) + mean(Y - lambda * f_rated)

with lambda chosen from the data to minimise the variance:

    lambda = Cov(Y, f) / ((1 + n / N) * Var(f)),    Cov over the n rated outputs (ddof 0),
                                                     Var over all n + N outputs (ddof 1),

exactly the closed form of ppi_py's ``ppi_mean_ci(..., lam=None)`` (its ``_calc_lam_glm`` with an identity
Hessian), with one difference: ppi_py clips lambda to [0, 1] ("between classical and PPI"); here lambda is
left free, because the optimal lambda of a 0-1 metric for a 1-5 score is the regression slope of the score on
the metric, typically 2-4, and a lower-is-better metric has a negative one. Clipping would throw away most of
the gain (or all of it for a lower-is-better metric); any fixed lambda gives a valid interval and the tuned
one converges to the optimum, so the asymptotic argument of the paper does not need the clip. lambda = 0 is
the classical (rated-only) estimate; lambda = 1 is plain PPI (docs/statistics.md §7).

The interval is theta +- t(n - 1) * SE_J, with SE_J the delete-one jackknife SE of the two samples (Arvesen
1969; Efron & Tibshirani 1993, ch. 11): theta is recomputed, lambda re-tuned, with each rated output left out
in turn and then each unrated output,

    SE_J^2 = (n - 1)/n sum_i (theta_(i) - mean_i)^2 + (N - 1)/N sum_j (theta_(j) - mean_j)^2.

Why not the plug-in SE^2 = Var(lambda f_unrated)/N + Var(Y - lambda f_rated)/n with t(n - 2) (this module's
method before, kept as ``se_method="plug-in"``): it treats lambda as known, but lambda is tuned on the same
few rated outputs to make Var(Y - lambda f_rated) as small as it can be, so the plug-in SE is optimistic by
the order of 1/n (as a regression's residual variance over n is), and lambda's own sampling variance is left
out. With 10 rated outputs of 100 it covered 92.9-93.5 % at 95 % (bench/ppi.py, 10,000 runs per cell);
with 25, 94.0-94.4 %. With lambda held fixed the jackknife equals the plug-in SE exactly (ddof 1), so what it
adds is precisely lambda's estimation; it is conservative on average (Efron & Stein 1981), and t(n - 1) is
Tukey's reference distribution for it. Same simulations: 94.6-96.0 % in every cell from 10 to 250 rated
outputs. Cross-fitting lambda (estimating it on other folds, as cross-prediction-powered inference does for
the predictor) also removes the optimism but tunes lambda on a fraction of already few ratings. The normal
quantile and ddof-0 variances of ppi_py under-cover more (89-90 % with 10 ratings). The rated-only interval
beside it is the t interval mean(Y) +- t(n - 1) * sd(Y)/sqrt(n).

Choosing whichever of the PPI and rated-only intervals came out narrower, after seeing both, is not a valid
interval with few ratings (93.1-93.8 % with 10 of 100 rated): pick the method before looking.

Assumptions a reader must be told: the rated outputs are a random subset of the run's outputs (not chosen
for being easy or hard), and the estimand is the expected human score of the system on questions like the
dataset's (the outputs as draws of that distribution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
Quantile = Literal["t", "z"]
SeMethod = Literal["jackknife", "plug-in"]

MIN_RATED = 3  # lambda needs two rated outputs left when the jackknife leaves one out


@dataclass(frozen=True)
class MeanInterval:
    """An estimate of a mean human score with its interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    n_rated: int
    n_unrated: int
    confidence: float
    lam: float  # 0 for the rated-only mean, 1 for plain PPI
    df: float | None  # degrees of freedom of the t quantile; None for the normal quantile

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low


def _vector(values: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has missing values: drop or impute them first")
    return arr


def _quantile(confidence: float, df: float | None) -> float:
    from scipy import stats as sps

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    q = 0.5 + confidence / 2.0
    return float(sps.norm.ppf(q) if df is None else sps.t.ppf(q, df))


def tuned_lambda(y: FloatArray, f_rated: FloatArray, f_unrated: FloatArray) -> float:
    """PPI++'s power-tuning lambda for a mean (not clipped; see the module docstring). 0 when the metric
    does not vary."""
    return float(_tuned_lambdas(y[None, :], f_rated[None, :], f_unrated[None, :])[0])


def _tuned_lambdas(y: FloatArray, f: FloatArray, fu: FloatArray) -> FloatArray:
    """``tuned_lambda`` of every row of (R, n), (R, n), (R, N) arrays."""
    n, big_n = y.shape[1], fu.shape[1]
    cov = np.mean((y - y.mean(axis=1, keepdims=True)) * (f - f.mean(axis=1, keepdims=True)), axis=1)
    var_f = np.var(np.concatenate([f, fu], axis=1), axis=1, ddof=1)
    ok = var_f > 0.0
    return np.where(ok, cov / ((1.0 + n / big_n) * np.where(ok, var_f, 1.0)), 0.0)


def _lambda_from_sums(
    c: FloatArray, s1: FloatArray, s2: FloatArray, m: int, n: int, big_n: int
) -> FloatArray:
    """lambda from the rated covariance c (ddof 0) and the sum s1 and sum of squares s2 of the m = n + N
    metric values (their variance with ddof 1); 0 where they do not vary."""
    var_f = (s2 - s1 * s1 / m) / (m - 1)
    ok = var_f > 1e-12 * np.maximum(s2 / m, 1e-300)
    return np.where(ok, c / ((1.0 + n / big_n) * np.where(ok, var_f, 1.0)), 0.0)


def jackknife_variance(y: FloatArray, f: FloatArray, fu: FloatArray) -> FloatArray:
    """Two-sample delete-one jackknife variance of the tuned estimate, per row of (R, n), (R, n), (R, N)
    arrays: theta recomputed, lambda re-tuned, with each rated output left out in turn and then each unrated
    output, V = (n - 1)/n sum_i (theta_(i) - mean)^2 + (N - 1)/N sum_j (theta_(j) - mean)^2 (Arvesen 1969).
    Leave-one-out values come from running sums, O(n + N) per row. With one unrated output the second
    term is lambda^2 Var(metric over all outputs), as it cannot be left out."""
    n, big_n = y.shape[1], fu.shape[1]
    m = n + big_n
    # lambda and theta do not change when the metric is shifted, nor theta - mean(y) when y is: centre
    # both for accurate running sums.
    shift = np.concatenate([f, fu], axis=1).mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    f, fu = f - shift, fu - shift
    sy, sf, syf = y.sum(axis=1), f.sum(axis=1), (y * f).sum(axis=1)
    su = fu.sum(axis=1)
    s1, s2 = sf + su, (f * f).sum(axis=1) + (fu * fu).sum(axis=1)
    fu_mean = su / big_n
    # Each rated output left out (n - 1 rated, N unrated).
    k = n - 1
    y_i = (sy[:, None] - y) / k
    f_i = (sf[:, None] - f) / k
    c_i = (syf[:, None] - y * f) / k - y_i * f_i
    lam_i = _lambda_from_sums(c_i, s1[:, None] - f, s2[:, None] - f * f, m - 1, k, big_n)
    theta_i = y_i + lam_i * (fu_mean[:, None] - f_i)
    var = (k / n) * np.sum((theta_i - theta_i.mean(axis=1, keepdims=True)) ** 2, axis=1)
    y_mean, f_mean = sy / n, sf / n
    c = syf / n - y_mean * f_mean
    if big_n > 1:  # each unrated output left out (n rated, N - 1 unrated)
        u_j = (su[:, None] - fu) / (big_n - 1)
        lam_j = _lambda_from_sums(c[:, None], s1[:, None] - fu, s2[:, None] - fu * fu, m - 1, n, big_n - 1)
        theta_j = y_mean[:, None] + lam_j * (u_j - f_mean[:, None])
        var += ((big_n - 1) / big_n) * np.sum((theta_j - theta_j.mean(axis=1, keepdims=True)) ** 2, axis=1)
    else:
        lam = _lambda_from_sums(c, s1, s2, m, n, big_n)
        var += lam * lam * (s2 - s1 * s1 / m) / (m - 1)
    return np.asarray(var, dtype=np.float64)


@dataclass(frozen=True)
class Intervals:
    """``ppi_intervals`` of R simulated or resampled runs at once (arrays of length R)."""

    estimate: FloatArray
    se: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    lam: FloatArray
    df: float | None


def ppi_intervals(
    y_rated: FloatArray,
    f_rated: FloatArray,
    f_unrated: FloatArray,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    quantile: Quantile = "t",
    se_method: SeMethod = "jackknife",
    df_spent: int = 1,
) -> Intervals:
    """``ppi_mean`` of every row of (R, n), (R, n), (R, N) arrays, vectorised (the bench's path and the
    service's). ``df_spent``: the jackknife interval's quantile is t(n - df_spent) (1: Tukey's; the bench
    also shows 2). No input checks: ``ppi_mean`` makes them."""
    y, f, fu = y_rated, f_rated, f_unrated
    n, big_n = y.shape[1], fu.shape[1]
    tuned = lam is None
    lam_v = _tuned_lambdas(y, f, fu) if lam is None else np.full(y.shape[0], float(lam))
    lam_c = lam_v[:, None]
    estimate = lam_v * fu.mean(axis=1) + np.mean(y - lam_c * f, axis=1)
    ddof = 0 if quantile == "z" else 1
    if tuned and se_method == "jackknife":
        var = jackknife_variance(y, f, fu)
        df = None if quantile == "z" else float(n - df_spent)
    else:
        var = (
            np.var(lam_c * fu, axis=1, ddof=ddof if big_n > 1 else 0) / big_n
            + np.var(y - lam_c * f, axis=1, ddof=ddof) / n
        )
        df = None if quantile == "z" else float(n - (2 if tuned else 1))
    se = np.sqrt(var)
    half = _quantile(confidence, df) * se
    return Intervals(estimate, se, estimate - half, estimate + half, lam_v, df)


def ppi_mean(
    y_rated: ArrayLike,
    f_rated: ArrayLike,
    f_unrated: ArrayLike,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    quantile: Quantile = "t",
    se_method: SeMethod = "jackknife",
) -> MeanInterval:
    """PPI++ estimate of the mean of Y: lambda tuned from the data when ``lam`` is None.

    Tuned lambda: the jackknife SE with t(n - 1) (the service's choice; see the module docstring), or with
    ``se_method="plug-in"`` the plug-in SE with t(n - 2). A fixed lambda: the plug-in SE, t(n - 1).
    ``quantile="z"``: the normal quantile, and ddof-0 variances for the plug-in SE (ppi_py's interval).
    Raises ValueError on missing values, mismatched lengths, fewer than 3 rated or no unrated output.
    """
    y = _vector(y_rated, "y_rated")
    f = _vector(f_rated, "f_rated")
    fu = _vector(f_unrated, "f_unrated")
    if y.size != f.size:
        raise ValueError(f"{y.size} ratings for {f.size} metric values")
    if y.size < MIN_RATED:
        raise ValueError(f"need at least {MIN_RATED} rated outputs, got {y.size}")
    if fu.size < 1:
        raise ValueError("need at least one unrated output")
    r = ppi_intervals(
        y[None, :],
        f[None, :],
        fu[None, :],
        confidence=confidence,
        lam=lam,
        quantile=quantile,
        se_method=se_method,
    )
    return MeanInterval(
        float(r.estimate[0]),
        float(r.se[0]),
        float(r.ci_low[0]),
        float(r.ci_high[0]),
        y.size,
        fu.size,
        confidence,
        float(r.lam[0]),
        r.df,
    )


def rated_mean(y_rated: ArrayLike, *, confidence: float = 0.95, quantile: Quantile = "t") -> MeanInterval:
    """The classical (rated-only) interval: t(n - 1) with the sample SD, or the normal one with ddof 0
    (ppi_py's ``classical_mean_ci``). Raises ValueError on missing values or fewer than 2 ratings."""
    y = _vector(y_rated, "y_rated")
    if y.size < 2:
        raise ValueError(f"need at least 2 rated outputs, got {y.size}")
    ddof = 0 if quantile == "z" else 1
    se = float(np.std(y, ddof=ddof)) / math.sqrt(y.size)
    df = None if quantile == "z" else float(y.size - 1)
    half = _quantile(confidence, df) * se
    m = float(y.mean())
    return MeanInterval(m, se, m - half, m + half, y.size, 0, confidence, 0.0, df)


@dataclass(frozen=True)
class WidthPlan:
    """How many rated outputs would give an interval of the target width, if the next ones look like these."""

    target_width: float
    n_rated_needed: int | None  # None: not reachable by rating this run's outputs
    more_ratings: int | None
    width_if_all_rated: float
    rated_only_needed: int | None  # ratings the rated-only interval would need (capped at the run's size)


def projected_width(
    n: int,
    total: int,
    var_y: float,
    var_f: float,
    cov: float,
    confidence: float,
    var_f_rated: float | None = None,
) -> float:
    """Width of the tuned interval with n of ``total`` outputs rated, from the variances seen so far (lambda
    re-tuned for n: the fewer unrated outputs, the less the metric helps). The variance projected is the
    plug-in one, which the jackknife's exceeds only by terms of order 1/n (lambda's estimation), with the
    interval's t(n - 1) quantile.

    ``var_f_rated``: the metric's variance on the rated outputs, those ``cov`` was taken on. The residual
    variance var(y - lambda f) is then that of the rated pairs, never negative; with the variance over all
    outputs instead it can come out negative (a metric more spread among the unrated outputs), and the
    projected width 0: a plan "already reached" beside a wide interval."""
    big_n = total - n
    df = max(n - 1, 1)
    if big_n <= 0:  # everything rated: the rated mean itself
        return 2 * _quantile(confidence, n - 1) * math.sqrt(var_y / n)
    lam = 0.0 if var_f <= 0 else cov / ((1 + n / big_n) * var_f)
    var_pairs = var_f if var_f_rated is None else var_f_rated
    residual = max(var_y - 2 * lam * cov + lam * lam * var_pairs, 0.0)
    var = lam * lam * var_f / big_n + residual / n
    return 2 * _quantile(confidence, df) * math.sqrt(max(var, 0.0))


def plan_width(
    y_rated: ArrayLike,
    f_rated: ArrayLike,
    f_unrated: ArrayLike,
    target_width: float,
    *,
    confidence: float = 0.95,
    current_width: float | None = None,
) -> WidthPlan:
    """Smallest number of rated outputs whose projected interval is at most ``target_width`` wide, with the
    variances and covariance of the ratings so far (ddof 1) as the plan's assumption. Raises ValueError like
    ``ppi_mean`` and for a target width <= 0.

    ``current_width``: the width of the interval reported with the plan (``ppi_mean``'s, jackknife SE). The
    projection uses the plug-in variance, which is smaller, most of all with few ratings; unscaled, a plan
    could say the target is reached beside a wider interval. Given, the projected widths below the run's
    size are scaled by the ratio of the two at today's ratings, so that the plan starts from the interval
    shown (the ratings needed are then never fewer than the reported interval implies)."""
    if not target_width > 0:
        raise ValueError("target width must be > 0")
    y = _vector(y_rated, "y_rated")
    f = _vector(f_rated, "f_rated")
    fu = _vector(f_unrated, "f_unrated")
    if y.size < MIN_RATED:
        raise ValueError(f"need at least {MIN_RATED} rated outputs, got {y.size}")
    total = y.size + fu.size
    var_y = float(np.var(y, ddof=1))
    var_f = float(np.var(np.concatenate([f, fu]), ddof=1))
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    var_f_rated = float(np.var(f, ddof=1))

    def projected(n: int) -> float:
        return projected_width(n, total, var_y, var_f, cov, confidence, var_f_rated)

    now = projected(y.size)
    scale = current_width / now if current_width is not None and now > 0 else 1.0

    def width(n: int) -> float:
        return projected(n) if n >= total else projected(n) * scale

    needed = next((n for n in range(y.size, total + 1) if width(n) <= target_width), None)
    sd = math.sqrt(var_y)
    rated_only = next(
        (
            n
            for n in range(max(y.size, 2), total + 1)
            if 2 * _quantile(confidence, n - 1) * sd / math.sqrt(n) <= target_width
        ),
        None,
    )
    return WidthPlan(
        target_width=target_width,
        n_rated_needed=needed,
        more_ratings=None if needed is None else needed - y.size,
        width_if_all_rated=width(total),
        rated_only_needed=rated_only,
    )
