"""Plain prediction-powered inference (PPI, lambda = 1) of a mean human score.

The reports use the power-tuned estimator (PPI++) with its jackknife interval, ``services.ppi``; this is the
plain estimate with a normal interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from services.stats.core import as_vector, check_confidence, z_critical


@dataclass(frozen=True, slots=True)
class PpiResult:
    """Prediction-powered estimate of a mean human score."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    n_labeled: int
    n_unlabeled: int
    confidence: float


def ppi_mean(
    y_labeled: ArrayLike, yhat_labeled: ArrayLike, yhat_unlabeled: ArrayLike, *, confidence: float = 0.95
) -> PpiResult:
    """Prediction-powered mean: mean(f_unlabeled) + mean(Y - f_labeled), normal CI (ddof 0 variances).

    ppi_py's ppi_mean_ci defaults to a 90% interval; this defaults to 95%. Raises ValueError for missing
    values, mismatched labelled lengths, or fewer than 2 labelled / 1 unlabelled items.
    """
    check_confidence(confidence)
    y = as_vector(y_labeled, "y_labeled")
    f = as_vector(yhat_labeled, "yhat_labeled")
    fu = as_vector(yhat_unlabeled, "yhat_unlabeled")
    if y.size != f.size:
        raise ValueError(f"{y.size} labels for {f.size} labelled predictions")
    if not (np.isfinite(y).all() and np.isfinite(f).all() and np.isfinite(fu).all()):
        raise ValueError("ppi_mean needs complete data: drop missing values first")
    if y.size < 2 or fu.size < 1:
        raise ValueError("need at least 2 labelled and 1 unlabelled items")
    rectifier = y - f
    estimate = float(fu.mean() + rectifier.mean())
    se = math.sqrt(float(fu.var()) / fu.size + float(rectifier.var()) / y.size)
    half = z_critical(confidence) * se
    return PpiResult(estimate, se, estimate - half, estimate + half, y.size, fu.size, confidence)
