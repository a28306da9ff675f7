"""What every topic of the statistics shares: array types and input checks (the scipy statistics the
resampling must reproduce are in ``services.stats.reference``).

Also ``warm_up``: the heavy libraries (scipy.stats, krippendorff, the numba kernels
of services.stats_kernels) are imported inside the functions that use them, so that importing the package
stays cheap for the API process; report worker processes call ``warm_up`` when they start.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats import special

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

CorrMethod = Literal["pearson", "spearman", "kendall"]

# Values closer than this (relative to the largest magnitude, floor 1) count as equal: scores such as
# 0.1 + 0.2 and 0.3 must not produce a spurious correlation out of rounding noise.
CONSTANT_RTOL = 1e-9
# A metric whose complete values differ from its most common value in fewer than this many items is
# near-constant: its correlation with anything is decided by one or two items, so reports refuse it.
NEAR_CONSTANT_MIN_OFF_MODE = 3
# Resamples are drawn and evaluated in blocks of about this many index entries: small enough for the
# per-block arrays to stay near the CPU caches, large enough for BLAS. Rank coefficients do not depend on
# it (their sums are exact integers); Pearson's moment sums are matrix products whose rounding does, in
# the last bits, so it stays what Pearson's figures were computed with.
DEFAULT_CHUNK_ELEMENTS = 500_000
# The rank kernels' blocks (16 MB per int64 block array): they update a row of a block's resamples per
# item, and longer rows cost less per resample (Kendall at 50 metrics x 10,000 items x 2,000 resamples: a
# quarter less CPU than with DEFAULT_CHUNK_ELEMENTS).
RANK_CHUNK_ELEMENTS = 2_000_000


def confusion_counts(a: IntArray, b: IntArray, low: int, high: int) -> IntArray:
    """The confusion matrix of two label vectors whose labels lie in low..high: rows a's label, columns b's
    (scikit-learn's ``confusion_matrix(a, b, labels=range(low, high + 1))``)."""
    size = high - low + 1
    cells = np.bincount((a - low) * size + (b - low), minlength=size * size)
    counts: IntArray = cells.reshape(size, size).astype(np.int64)
    return counts


def cohen_kappa(confusion: IntArray, *, quadratic: bool = False) -> float:
    """Cohen's kappa of a confusion matrix, unweighted or with quadratic weights (the labels its rows and
    columns stand for, in order); NaN when every rating falls in one label.

    The operations are scikit-learn's ``cohen_kappa_score`` one by one (float64 counts, expected counts from
    the outer product of the margins, weights, two sums), so the value is its value to the last bit;
    tests/unit/test_stats_sklearn_equal.py checks that.
    """
    counts = confusion.astype(np.float64)
    n_labels = counts.shape[0]
    margin_b = counts.sum(axis=0)
    margin_a = counts.sum(axis=1)
    total = margin_b.sum()
    if total == 0:
        return math.nan
    expected = np.outer(margin_b, margin_a) / total
    if quadratic:
        weights = np.zeros((n_labels, n_labels)) + np.arange(n_labels)
        weights = (weights - weights.T) ** 2
    else:
        weights = np.ones((n_labels, n_labels))
        np.fill_diagonal(weights, 0)
    observed_disagreement = np.sum(weights * counts)
    chance_disagreement = np.sum(weights * expected)
    if chance_disagreement == 0:
        return math.nan
    return float(1 - observed_disagreement / chance_disagreement)


def as_vector(values: ArrayLike, name: str) -> FloatArray:
    """``values`` as a float64 vector; ValueError naming ``name`` when it is not one-dimensional."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def complete_cases(*arrays: FloatArray) -> tuple[list[FloatArray], int]:
    """The items where every array is finite, and how many were dropped; ValueError on unequal lengths."""
    n = arrays[0].size
    if any(a.size != n for a in arrays):
        raise ValueError(f"inputs must have the same length, got {[a.size for a in arrays]}")
    keep = np.ones(n, dtype=np.bool_)
    for a in arrays:
        keep &= np.isfinite(a)
    return [a[keep] for a in arrays], int(n - np.count_nonzero(keep))


def complete_pairs(x: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray, int]:
    """Drop the pairs where either side is missing (None, NaN or infinite).

    Returns the two float arrays and the number of pairs dropped. Raises ValueError when the inputs are not
    one-dimensional or differ in length.
    """
    (xc, yc), dropped = complete_cases(as_vector(x, "x"), as_vector(y, "y"))
    return xc, yc, dropped


def _tolerance(x: FloatArray) -> float:
    return CONSTANT_RTOL * max(1.0, float(np.max(np.abs(x)))) if x.size else 0.0


def is_constant(x: FloatArray) -> bool:
    """Whether the values span no more than ``CONSTANT_RTOL`` (relative, floor 1); True when empty."""
    return x.size == 0 or float(np.ptp(x)) <= _tolerance(x)


def near_constant(x: ArrayLike, *, min_off_mode: int = NEAR_CONSTANT_MIN_OFF_MODE) -> bool:
    """Whether a metric's scores are too close to constant to report a correlation.

    True when fewer than ``min_off_mode`` (default 3) of the finite values differ from the most common value,
    values within ``CONSTANT_RTOL`` (1e-9, relative to the largest magnitude, floor 1) counting as equal. Such
    a correlation is decided by one or two items. Missing values are ignored; an empty input is near-constant.
    """
    arr = as_vector(x, "x")
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return True
    values, counts = np.unique(arr, return_counts=True)
    mode = values[int(np.argmax(counts))]
    off_mode = int(np.count_nonzero(np.abs(arr - mode) > _tolerance(arr)))
    return off_mode < min_off_mode


def check_confidence(confidence: float) -> None:
    """ValueError unless 0 < confidence < 1."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def z_critical(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (1.96 at 0.95)."""
    return float(special.ndtri(0.5 + confidence / 2.0))


# ------------------------------------------------------------------------------- reference correlations


def why_undefined(x: FloatArray, y: FloatArray, min_n: int = 3) -> str | None:
    """Why corr(x, y) on complete pairs is undefined (fewer than ``min_n`` pairs, constant input), or None."""
    if x.size < min_n:
        return f"fewer than {min_n} complete pairs (n = {x.size})"
    const_x, const_y = is_constant(x), is_constant(y)
    if const_x and const_y:
        return "constant input (both x and y)"
    if const_x:
        return "constant input (x)"
    if const_y:
        return "constant input (y)"
    return None


def warm_up() -> None:
    """Import the libraries the statistics load on first use and compile (or load from numba's cache) the
    resample kernels, so that a process's first report does not pay for them (about 1-2 s, more when the
    kernels are not cached yet)."""
    import krippendorff  # noqa: F401
    import scipy.stats  # noqa: F401

    from services import stats_kernels

    stats_kernels.warm_up()
