"""Resample kernels of the correlations: r of many metrics with one human score on many resamples at once.

Each kernel follows ``services.stats.resampling.Kernel``. Pearson works on centred moment sums (one matrix
product for all resamples); Spearman and Kendall on tie groups, through the compiled per-resample kernels of
services.stats_kernels (numba, imported on first use). Each keeps its numpy version (``resample_numpy``) as
the reference the compiled kernels are tested against, and has a closed-form leave-one-out (``jackknife``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import NDArray

from services.stats.core import CorrMethod, FloatArray, IntArray
from services.stats.ranks import (
    Ties,
    concordance_per_item,
    concordance_per_item_numpy,
    doubled_midranks,
    lower_left,
    signed_sums,
    tie_groups,
)
from services.stats.reference import reference_or_nan
from services.stats.resampling import Kernel

# Bootstrap resamples whose variance is below this fraction of the sample's squared spread are treated as
# constant: the moment formulas cannot tell such a resample from rounding noise.
_RESAMPLE_VAR_RTOL = 1e-12
# Up to this many items, Kendall's resample statistic uses an n x n sign matrix (16 MB at the limit) and one
# matrix product; above it, an O(n log^2 n) merge whose cost does not grow with n^2.
_KENDALL_DENSE_MAX_N = 2000


class _CorrelationKernel:
    def __init__(self, method: CorrMethod, metrics: FloatArray, human: FloatArray) -> None:
        self.method: CorrMethod = method
        self.x = metrics
        self.h = human
        self.n_stats = metrics.shape[0]

    def exact(self, idx: IntArray, j: int) -> float:
        return reference_or_nan(self.method, self.x[j, idx], self.h[idx])


class PearsonKernel(_CorrelationKernel):
    """Pearson r from the resampled sums of x, x^2, x h, h and h^2."""

    def __init__(self, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__("pearson", metrics, human)
        # Centring first keeps the moment formulas free of cancellation; r is shift invariant.
        self.xc = metrics - metrics.mean(axis=1, keepdims=True)
        self.hc = human - human.mean()
        m = self.n_stats
        self.design = np.empty((human.size, 3 * m + 2))
        self.design[:, :m] = self.xc.T
        self.design[:, m : 2 * m] = (self.xc**2).T
        self.design[:, 2 * m : 3 * m] = (self.xc * self.hc).T
        self.design[:, 3 * m] = self.hc
        self.design[:, 3 * m + 1] = self.hc**2
        n = human.size
        self.floor_x = _RESAMPLE_VAR_RTOL * n * np.max(self.xc**2, axis=1)
        self.floor_h = _RESAMPLE_VAR_RTOL * n * float(np.max(self.hc**2))

    def _r(
        self,
        sx: FloatArray,
        sxx: FloatArray,
        sxy: FloatArray,
        sh: FloatArray,
        shh: FloatArray,
        n: int | FloatArray,
        floor_x: FloatArray,
    ) -> FloatArray:
        vx = sxx - sx * sx / n
        vh = shh - sh * sh / n
        cov = sxy - sx * sh / n
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip(cov / np.sqrt(vx * vh), -1.0, 1.0)
        # A (near-)constant resample has no correlation; scipy returns NaN for it as well.
        return np.where((vx <= floor_x) | (vh <= self.floor_h), np.nan, r)

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        m = self.n_stats
        # Items drawn per resample: n for an item bootstrap, varying when whole clusters are drawn.
        n = counts.sum(axis=1, keepdims=True).astype(np.float64)
        s = counts.astype(np.float64) @ self.design
        sh, shh = s[:, 3 * m : 3 * m + 1], s[:, 3 * m + 1 : 3 * m + 2]
        return self._r(s[:, :m], s[:, m : 2 * m], s[:, 2 * m : 3 * m], sh, shh, n, self.floor_x)

    def jackknife(self, compiled: bool = True) -> FloatArray:
        xc, hc, m = self.xc, self.hc, self.h.size - 1
        sx = xc.sum(axis=1, keepdims=True) - xc
        sh = hc.sum() - hc
        sxx = (xc**2).sum(axis=1, keepdims=True) - xc**2
        shh = (hc**2).sum() - hc**2
        sxy = (xc * hc).sum(axis=1, keepdims=True) - xc * hc
        return self._r(sx, sxx, sxy, sh, shh, m, self.floor_x[:, None])


def _doubled_group_ranks(t: Ties, counts: IntArray) -> tuple[IntArray, IntArray]:
    """Per resample: twice the midrank of each tie group, and sum of w * (2 rank)^2."""
    weights = counts[:, t.order]
    if t.has_ties:
        weights = np.add.reduceat(weights, t.starts, axis=1)
    ranks2 = 2 * np.cumsum(weights, axis=1) - weights + 1
    return ranks2, np.einsum("ij,ij,ij->i", weights, ranks2, ranks2)


def _sorted_layout(ties: list[Ties], human: Ties) -> tuple[IntArray, NDArray[np.bool_], IntArray]:
    """Per metric: its ascending (stable) order, whether each sorted position ends a tie group, and the
    human tie group of the item at each sorted position."""
    n = human.group.size
    orders = np.empty((len(ties), n), dtype=np.int64)
    last = np.zeros((len(ties), n), dtype=np.bool_)
    levels = np.empty((len(ties), n), dtype=np.int64)
    for m, t in enumerate(ties):
        orders[m] = t.order
        last[m, t.starts[1:] - 1] = True
        if n:
            last[m, n - 1] = True
        levels[m] = human.group[t.order]
    return orders, last, levels


class _RankKernel(_CorrelationKernel, ABC):
    """Spearman or Kendall: tie groups of every metric and of the human score, laid out for the compiled
    per-resample kernel ``stats_kernels.<method>_rows``."""

    def __init__(self, method: CorrMethod, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__(method, metrics, human)
        self.x_ties = [tie_groups(row) for row in metrics]
        self.h_ties = tie_groups(human)
        self.layout = _sorted_layout(self.x_ties, self.h_ties)

    @abstractmethod
    def resample_numpy(self, counts: IntArray) -> FloatArray:
        """The statistic on every resample in numpy: the compiled kernel's reference, and its stand-in for
        jobs too small to load it (``services.stats.resampling.compiled_pays``)."""

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        if not compiled:
            return self.resample_numpy(counts)
        out = np.empty((counts.shape[0], self.n_stats))
        h = self.h_ties
        orders, last, levels = self.layout
        from services import stats_kernels  # numba: imported on first use

        rows = stats_kernels.spearman_rows if self.method == "spearman" else stats_kernels.kendall_rows
        stats_kernels.in_threads(
            rows, np.ascontiguousarray(counts), h.group, h.sizes.size, orders, last, levels, out
        )
        return out


class SpearmanKernel(_RankKernel):
    """Spearman rho from the resampled sums of doubled midranks."""

    def __init__(self, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__("spearman", metrics, human)

    def resample_numpy(self, counts: IntArray) -> FloatArray:
        """The same statistic in numpy (the reference of the compiled kernel; ~10x slower)."""
        n = counts.sum(axis=1)
        # Sums of doubled ranks are integers below 2**63; the centring constant is n (n + 1)^2, n the items
        # drawn (it varies between resamples when whole clusters are drawn).
        centre = n * (n + 1) ** 2
        h_ranks2, h_sq = _doubled_group_ranks(self.h_ties, counts)
        weighted_h = counts * h_ranks2[:, self.h_ties.group]
        vh = (h_sq - centre).astype(np.float64)
        out = np.empty((counts.shape[0], self.n_stats))
        for j, t in enumerate(self.x_ties):
            x_ranks2, x_sq = _doubled_group_ranks(t, counts)
            sxy = np.einsum("ij,ij->i", x_ranks2[:, t.group], weighted_h)
            vx = (x_sq - centre).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, j] = (sxy - centre).astype(np.float64) / np.sqrt(vx * vh)
        return out

    def jackknife(self, compiled: bool = True) -> FloatArray:
        return np.vstack([_spearman_jackknife(t, self.h_ties, compiled) for t in self.x_ties])


def _concordance(tx: Ties, th: Ties, compiled: bool) -> FloatArray:
    of = concordance_per_item if compiled else concordance_per_item_numpy
    return of(tx.group, th.group)


def _spearman_jackknife(tx: Ties, th: Ties, compiled: bool) -> FloatArray:
    # Leaving item i out lowers the doubled rank of item j by 1 + sign(x_j - x_i); expanding the rank sums
    # gives every leave-one-out rho from a few O(n log n) sums (all integer valued, so exact in float64).
    n = tx.group.size
    m = n - 1
    a = doubled_midranks(tx) - 1.0
    b = doubled_midranks(th) - 1.0
    k = _concordance(tx, th, compiled)
    sxy = float((a * b).sum()) - a * b - signed_sums(th, a) - signed_sums(tx, b) + k
    sxx = float((a * a).sum()) - a * a - 2.0 * signed_sums(tx, a) + (n - tx.sizes[tx.group])
    shh = float((b * b).sum()) - b * b - 2.0 * signed_sums(th, b) + (n - th.sizes[th.group])
    centre = float(m * (m + 1) ** 2)
    vx, vh = sxx - centre, shh - centre
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (sxy - centre) / np.sqrt(vx * vh)
    return np.where((vx == 0) | (vh == 0), np.nan, rho)


def _tau_b(cmd: FloatArray, tot: float | FloatArray, xtie: FloatArray, ytie: FloatArray) -> FloatArray:
    # Same operation order as scipy.stats.kendalltau, so exact integer counts give identical floats.
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.clip(cmd / np.sqrt(tot - xtie) / np.sqrt(tot - ytie), -1.0, 1.0)
    return np.where((xtie == tot) | (ytie == tot), np.nan, tau)


class KendallKernel(_RankKernel):
    """Kendall tau-b from the resampled concordant minus discordant pairs and tie pairs."""

    def __init__(self, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__("kendall", metrics, human)

    @staticmethod
    def _tie_pairs(t: Ties, counts: IntArray) -> FloatArray:
        weights = counts[:, t.order]
        if t.has_ties:
            weights = np.add.reduceat(weights, t.starts, axis=1)
        return np.asarray((weights * (weights - 1) // 2).sum(axis=1), dtype=np.float64)

    def _concordance_dense(self, t: Ties, counts: IntArray) -> FloatArray:
        # C - D = 1/2 w' S w with S_ij = sign(x_i - x_j) sign(h_i - h_j): one matrix product for all
        # resamples. Every partial sum is an integer of magnitude <= n, so float32 is exact (n < 2**24).
        xr, hr = t.group.astype(np.int32), self.h_ties.group.astype(np.int32)
        signs = np.multiply(
            np.sign(np.subtract.outer(xr, xr)), np.sign(np.subtract.outer(hr, hr)), dtype=np.float32
        )
        weighted = (counts.astype(np.float32) @ signs).astype(np.float64)
        return np.asarray(0.5 * np.einsum("ij,ij->i", weighted, counts.astype(np.float64)), dtype=np.float64)

    def _concordance_merge(self, t: Ties, counts: IntArray) -> FloatArray:
        hr = self.h_ties.group
        order_c, dom_c = lower_left(t.group, hr, counts)
        order_d, dom_d = lower_left(t.group, int(hr.max()) - hr, counts)
        concordant = np.einsum("ij,ij->i", counts[:, order_c], dom_c)
        discordant = np.einsum("ij,ij->i", counts[:, order_d], dom_d)
        return np.asarray(concordant - discordant, dtype=np.float64)

    def resample_numpy(self, counts: IntArray) -> FloatArray:
        """The same statistic in numpy (the reference of the compiled kernel)."""
        n = self.h.size
        drawn = counts.sum(axis=1)
        tot = (drawn * (drawn - 1) // 2).astype(np.float64)
        ytie = self._tie_pairs(self.h_ties, counts)
        concordance = self._concordance_dense if n <= _KENDALL_DENSE_MAX_N else self._concordance_merge
        out = np.empty((counts.shape[0], self.n_stats))
        for j, t in enumerate(self.x_ties):
            out[:, j] = _tau_b(concordance(t, counts), tot, self._tie_pairs(t, counts), ytie)
        return out

    def jackknife(self, compiled: bool = True) -> FloatArray:
        n = self.h.size
        m = n - 1
        tot = float(m * (m - 1) // 2)
        th = self.h_ties
        ytie = float((th.sizes * (th.sizes - 1) // 2).sum()) - (th.sizes[th.group] - 1)
        rows = []
        for t in self.x_ties:
            k = _concordance(t, th, compiled)
            xtie = float((t.sizes * (t.sizes - 1) // 2).sum()) - (t.sizes[t.group] - 1)
            rows.append(_tau_b(k.sum() / 2.0 - k, tot, xtie.astype(np.float64), ytie.astype(np.float64)))
        return np.vstack(rows)


class DifferenceKernel:
    """r(ref, h) - r(other_j, h) for every other metric, from one kernel over [ref, others...]."""

    def __init__(self, inner: Kernel) -> None:
        self.inner = inner
        self.n_stats = inner.n_stats - 1

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        v = self.inner.resample(counts, compiled)
        return v[:, :1] - v[:, 1:]

    def exact(self, idx: IntArray, j: int) -> float:
        return self.inner.exact(idx, 0) - self.inner.exact(idx, j + 1)

    def jackknife(self, compiled: bool = True) -> FloatArray:
        v = self.inner.jackknife(compiled)
        return v[:1] - v[1:]


_KERNELS: dict[str, type[PearsonKernel] | type[SpearmanKernel] | type[KendallKernel]] = {
    "pearson": PearsonKernel,
    "spearman": SpearmanKernel,
    "kendall": KendallKernel,
}


def correlation_kernel(method: CorrMethod, metrics: FloatArray, human: FloatArray) -> Kernel:
    """The kernel of ``method`` for the rows of ``metrics`` against ``human``; ValueError if unknown."""
    if method not in _KERNELS:
        raise ValueError(f"unknown correlation method {method!r}")
    return _KERNELS[method](metrics, human)
