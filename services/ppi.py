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
the classical (rated-only) estimate; lambda = 1 is plain PPI (STATS.md section 7).

The interval is theta +- t(n - 2) * SE with SE^2 = Var(lambda f_unrated)/N + Var(Y - lambda f_rated)/n
(ddof 1): the normal quantile and ddof-0 variances of ppi_py under-cover with 10-25 ratings, and one degree of
freedom is spent on lambda (bench/ppi.py gives the coverage of both). The rated-only interval beside it is
the t interval mean(Y) +- t(n - 1) * sd(Y)/sqrt(n).

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
from scipy import stats as sps

FloatArray = NDArray[np.float64]
Quantile = Literal["t", "z"]

MIN_RATED = 3  # t(n - 2) needs n >= 3


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
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    q = 0.5 + confidence / 2.0
    return float(sps.norm.ppf(q) if df is None else sps.t.ppf(q, df))


def tuned_lambda(y: FloatArray, f_rated: FloatArray, f_unrated: FloatArray) -> float:
    """PPI++'s power-tuning lambda for a mean (not clipped; see the module docstring). 0 when the metric
    does not vary."""
    n, big_n = y.size, f_unrated.size
    cov = float(np.mean((y - y.mean()) * (f_rated - f_rated.mean())))
    var_f = float(np.var(np.concatenate([f_rated, f_unrated]), ddof=1))
    if var_f <= 0.0:
        return 0.0
    return cov / ((1.0 + n / big_n) * var_f)


def ppi_mean(
    y_rated: ArrayLike,
    f_rated: ArrayLike,
    f_unrated: ArrayLike,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    quantile: Quantile = "t",
) -> MeanInterval:
    """PPI++ estimate of the mean of Y: lambda tuned from the data when ``lam`` is None.

    ``quantile="t"``: t(n - 2) (n - 1 with a fixed lambda) and ddof-1 variances (the service's choice);
    ``quantile="z"``: ppi_py's normal interval with ddof-0 variances. Raises ValueError on missing values,
    mismatched lengths, fewer than 3 rated or no unrated output.
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
    tuned = lam is None
    lam_v = tuned_lambda(y, f, fu) if lam is None else float(lam)
    estimate = lam_v * float(fu.mean()) + float(np.mean(y - lam_v * f))
    ddof = 0 if quantile == "z" else 1
    se = math.sqrt(
        float(np.var(lam_v * fu, ddof=ddof if fu.size > 1 else 0)) / fu.size
        + float(np.var(y - lam_v * f, ddof=ddof)) / y.size
    )
    df = None if quantile == "z" else float(y.size - (2 if tuned else 1))
    half = _quantile(confidence, df) * se
    return MeanInterval(
        estimate, se, estimate - half, estimate + half, y.size, fu.size, confidence, lam_v, df
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
) -> float:
    """Width of the tuned interval with n of ``total`` outputs rated, from the variances seen so far (lambda
    re-tuned for n: the fewer unrated outputs, the less the metric helps)."""
    big_n = total - n
    df = max(n - 2, 1)
    if big_n <= 0:  # everything rated: the rated mean itself
        return 2 * _quantile(confidence, n - 1) * math.sqrt(var_y / n)
    lam = 0.0 if var_f <= 0 else cov / ((1 + n / big_n) * var_f)
    var = lam * lam * var_f / big_n + (var_y - 2 * lam * cov + lam * lam * var_f) / n
    return 2 * _quantile(confidence, df) * math.sqrt(max(var, 0.0))


def plan_width(
    y_rated: ArrayLike,
    f_rated: ArrayLike,
    f_unrated: ArrayLike,
    target_width: float,
    *,
    confidence: float = 0.95,
) -> WidthPlan:
    """Smallest number of rated outputs whose projected interval is at most ``target_width`` wide, with the
    variances and covariance of the ratings so far (ddof 1) as the plan's assumption. Raises ValueError like
    ``ppi_mean`` and for a target width <= 0."""
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

    def width(n: int) -> float:
        return projected_width(n, total, var_y, var_f, cov, confidence)

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
