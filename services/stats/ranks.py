"""Tie groups, ranks and pair counts of score vectors, in integers so that every sum stays exact.

The rank kernels (Spearman, Kendall) and the pass/fail kernel build on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.stats.core import FloatArray, IntArray


@dataclass(frozen=True, slots=True)
class Ties:
    """The tie groups of a vector (``tie_groups``)."""

    order: IntArray  # stable argsort of the values
    starts: IntArray  # first sorted position of each tie group
    group: IntArray  # tie group (dense rank, 0-based) of each item
    sizes: IntArray  # size of each tie group

    @property
    def has_ties(self) -> bool:
        return self.sizes.size < self.group.size


def tie_groups(x: FloatArray) -> Ties:
    """Sort order, tie groups and their sizes of ``x`` (equal floats tie; no tolerance)."""
    n = x.size
    order = np.argsort(x, kind="stable").astype(np.int64)
    xs = x[order]
    first = np.ones(n, dtype=np.bool_)
    first[1:] = xs[1:] != xs[:-1]
    starts = np.flatnonzero(first).astype(np.int64)
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(first) - 1
    sizes = np.diff(np.append(starts, n)).astype(np.int64)
    return Ties(order, starts, group, sizes)


def doubled_midranks(t: Ties) -> FloatArray:
    """Twice the 1-based average rank of every item."""
    # Twice the 1-based average rank is an integer, which keeps every rank sum exact in float64.
    return (2 * t.starts[t.group] + t.sizes[t.group] + 1).astype(np.float64)


def signed_sums(t: Ties, c: FloatArray) -> FloatArray:
    """For each item i: sum_j c_j * sign(x_j - x_i)."""
    groups = np.bincount(t.group, weights=c, minlength=t.sizes.size)
    below = np.cumsum(groups) - groups
    above = float(c.sum()) - below - groups
    return (above - below)[t.group]


def _dominance(v: IntArray, w: IntArray) -> IntArray:
    """D[:, p] = sum of w[:, q] over earlier positions q < p with v[q] < v[p].

    A bottom-up merge: at each level the right half of every block counts, per resample row, the weight of
    the left half below it. The sort structure depends only on v, so all rows share it; O(n log^2 n).
    """
    rows, n = w.shape
    out = np.zeros((rows, n), dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    span = int(v.max()) + 2 if n else 1
    half = 1
    while half < n:
        block = pos // (2 * half)
        is_right = (pos % (2 * half)) >= half
        left, right = pos[~is_right], pos[is_right]
        keys = block[left] * span + v[left]
        srt = np.argsort(keys, kind="stable")
        left_sorted, keys_sorted = left[srt], keys[srt]
        base = block[right] * span
        lo = np.searchsorted(keys_sorted, base, side="left")
        hi = np.searchsorted(keys_sorted, base + v[right], side="left")
        cum = np.zeros((rows, left.size + 1), dtype=np.int64)
        np.cumsum(w[:, left_sorted], axis=1, out=cum[:, 1:])
        out[:, right] += cum[:, hi] - cum[:, lo]
        half *= 2
    return out


def lower_left(xr: IntArray, yr: IntArray, w: IntArray) -> tuple[IntArray, IntArray]:
    """Per position of the (x asc, y desc) order: weight of items strictly below in both x and y."""
    # Sorting ties in x by descending y keeps pairs tied in x out of the strict count.
    order = np.lexsort((-yr, xr)).astype(np.int64)
    return order, _dominance(yr[order], w[:, order])


def concordance_per_item(xr: IntArray, yr: IntArray) -> FloatArray:
    """K_i = sum_j sign(x_j - x_i) * sign(y_j - y_i) for every item i (integer valued), from the dense ranks
    (tie groups) of x and y; compiled (services.stats_kernels), equal to concordance_per_item_numpy."""
    from services import stats_kernels

    n = xr.size
    if n == 0:
        return np.zeros(0)
    order = np.argsort(xr, kind="stable").astype(np.int64)
    xs = xr[order]
    last = np.ones(n, dtype=np.bool_)
    last[:-1] = xs[1:] != xs[:-1]
    yr64 = yr.astype(np.int64)
    result: FloatArray = stats_kernels.concordance_per_item(order, last, yr64[order], int(yr64.max()) + 1)
    return result


def concordance_per_item_numpy(xr: IntArray, yr: IntArray) -> FloatArray:
    """K_i = sum_j sign(x_j - x_i) * sign(y_j - y_i) for every item i (integer valued)."""
    n = xr.size
    ones = np.ones((1, n), dtype=np.int64)
    xf, yf = int(xr.max()) - xr, int(yr.max()) - yr
    k = np.zeros(n, dtype=np.int64)
    for a, b, sign in ((xr, yr, 1), (xf, yf, 1), (xr, yf, -1), (xf, yr, -1)):
        order, d = lower_left(a, b, ones)
        k[order] += sign * d[0]
    return k.astype(np.float64)
