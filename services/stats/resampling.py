"""The bootstrap and jackknife engine shared by every resampled statistic.

Bootstrap intervals resample items (questions), never rater rows, and reproduce
``scipy.stats.bootstrap(..., paired=True, method='BCa')`` draw for draw: the index matrix is drawn with the
same generator calls, and the statistic of every resample is computed by a ``Kernel`` from per-item resample
counts, all resamples (and all statistics sharing the items) at once. Whole clusters (the outputs of one
question) are drawn instead when they repeat. The percentile and BCa limits, the p-value by inverting the
interval and the small-sample expansion follow scipy's operations one for one.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats import special
from services.stats.core import FloatArray, IntArray, as_vector, check_confidence
from services.stats.reference import t_quantile, t_sf

BootstrapKind = Literal["bca", "percentile"]


@dataclass(frozen=True, slots=True)
class BootstrapCI:
    """A paired bootstrap interval (items, or whole clusters, resampled); ``low``/``high`` are None when
    undefined. ``n_clusters`` is set when clusters were drawn; ``p_value`` is the two-sided p of 0 from
    inverting the interval (``bootstrap_p_value``, then through the expansion when ``level`` is set)."""

    low: float | None
    high: float | None
    method: BootstrapKind
    n_resamples: int
    seed: int
    confidence: float
    n: int
    undefined_reason: str | None = None
    n_clusters: int | None = None
    p_value: float | None = None
    level: float | None = None  # the expanded level the limits were read at (``expanded_confidence``)


@dataclass(frozen=True, slots=True)
class JackknifeCI:
    """A jackknife-t interval: of a coefficient on Fisher's z, tanh(atanh r -+ t_{G-1} se), se the jackknife
    standard error of atanh r; of a difference of coefficients on its own scale, d -+ t_{G-1} se. One unit
    (an item, or a whole cluster) left out at a time, G the number of units. ``p_value`` is the two-sided
    t-test of 0 with the same se and df; ``low``/``high`` None when undefined (``undefined_reason`` says
    why). ``estimate`` is the centre (r, or d) on the same items as the interval, None when the statistic
    itself is undefined there: a metric with missing values changes the items a difference is taken on."""

    low: float | None
    high: float | None
    se: float | None
    df: int
    confidence: float
    n: int
    n_clusters: int | None = None
    p_value: float | None = None
    undefined_reason: str | None = None
    estimate: float | None = None


class Kernel(Protocol):
    """Statistics of M metrics against one human vector, evaluated on many resamples at once."""

    n_stats: int

    def resample(self, counts: IntArray, compiled: bool = True) -> FloatArray:
        """(rows, M) statistic for each resample given as per-item counts; NaN where undefined. With
        ``compiled`` False, without the compiled kernels (the same floats: see ``compiled_pays``)."""
        ...

    def exact(self, idx: IntArray, j: int) -> float:
        """The reference (scipy) statistic of metric j on one resample given by its item indices."""
        ...

    def jackknife(self, compiled: bool = True) -> FloatArray:
        """(M, n) leave-one-item-out statistics."""
        ...


@dataclass(frozen=True, slots=True)
class Units:
    """What a resample draws: the n items (``codes`` None) or q whole clusters of items."""

    n: int
    q: int
    codes: IntArray | None  # cluster (0..q-1) of each item when clustered

    @property
    def clustered(self) -> bool:
        return self.codes is not None


def units_of(clusters: ArrayLike | None, keep: NDArray[np.bool_]) -> Units:
    """Resampling units of the kept items: clusters with more than one kept item make a cluster bootstrap."""
    n = int(keep.sum())
    if clusters is None:
        return Units(n, n, None)
    labels = np.asarray(clusters)
    if labels.ndim != 1 or labels.size != keep.size:
        raise ValueError(f"clusters must give one label per item ({keep.size}), got shape {labels.shape}")
    _, first, codes = np.unique(labels[keep], return_index=True, return_inverse=True)
    # Clusters numbered in order of first appearance: a run pooled with an exact copy of itself then draws
    # the very resamples of the run alone.
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    codes = rank[codes.ravel()]
    q = first.size
    # Every cluster a single item is the item bootstrap, draw for draw (scipy's resamples).
    return Units(n, q, None) if q == n else Units(n, q, codes)


# A resample job of up to this many items and this much work (resamples x items x statistics) runs on the
# kernels' numpy versions in a process that has not loaded the compiled ones (services.stats_kernels):
# importing numba and loading a kernel from its cache takes 0.3-0.4 s, longer than numpy takes for such a job
# (a study of a few hundred outputs, 2,000 resamples; Kendall's numpy version grows with the items squared:
# bench/kernel_choice.py). Both give the same floats (tests/unit/test_kernel_choice.py).
NUMPY_MAX_ITEMS = 500
NUMPY_MAX_WORK = 6_000_000


def compiled_pays(work: int, items: int) -> bool:
    """Whether a resample job of ``work`` over ``items`` runs on the compiled kernels: when this process has
    loaded them already, or when the job is too big for numpy to finish before they would have loaded."""
    small = items <= NUMPY_MAX_ITEMS and work <= NUMPY_MAX_WORK
    return not small or "services.stats_kernels" in sys.modules


def resample_counts(idx: IntArray, size: int | None = None) -> IntArray:
    """(rows, size) how often each item is drawn in each row of the index matrix ``idx``."""
    rows, n = idx.shape
    size = n if size is None else size
    flat = idx + (np.arange(rows, dtype=np.int64) * size)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * size).reshape(rows, size).astype(np.int64, copy=False)


def bootstrap_distribution(
    kernel: Kernel, units: Units, n_resamples: int, seed: int, chunk_elements: int, compiled: bool = True
) -> FloatArray:
    """(M, n_resamples) statistics on the resamples scipy.stats.bootstrap draws for this seed.

    Clustered: the same generator draws q cluster indices per resample and every item of a drawn cluster
    counts once per draw.
    """
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, chunk_elements // max(units.n, units.q))
    out = np.empty((kernel.n_stats, n_resamples))
    everything = np.arange(units.n, dtype=np.int64)
    for start in range(0, n_resamples, rows_per_chunk):
        rows = min(rows_per_chunk, n_resamples - start)
        # Same call as scipy's _bootstrap_resample; drawing in blocks continues the same stream.
        idx = rng.integers(0, units.q, size=(rows, units.q), dtype=np.int64)
        drawn = resample_counts(idx)
        counts = drawn if units.codes is None else drawn[:, units.codes]
        values = kernel.resample(counts, compiled)
        # A resample that is a permutation of the data equals the estimate in exact arithmetic; whether it
        # lands just below or above depends on rounding, so take scipy's own value for it.
        for r in np.flatnonzero(drawn.max(axis=1) == 1):
            for j in range(kernel.n_stats):
                values[r, j] = kernel.exact(idx[r] if units.codes is None else everything, j)
        out[:, start : start + rows] = values.T
    return out


def leave_one_out(kernel: Kernel, units: Units, chunk_elements: int, compiled: bool = True) -> FloatArray:
    """(M, q) leave-one-unit-out statistics: items (closed forms) or whole clusters (through resample)."""
    if units.codes is None:
        return kernel.jackknife(compiled)
    out = np.empty((kernel.n_stats, units.q))
    rows_per_chunk = max(1, chunk_elements // units.n)
    for start in range(0, units.q, rows_per_chunk):
        left_out = np.arange(start, min(units.q, start + rows_per_chunk))
        counts = (units.codes[None, :] != left_out[:, None]).astype(np.int64)
        out[:, left_out] = kernel.resample(counts, compiled).T
    return out


@dataclass(frozen=True, slots=True)
class _Bca:
    z0: float
    a_hat: float


def _bca_constants(tb: FloatArray, theta_hat: float, jack: FloatArray) -> _Bca | str:
    """Bias correction and acceleration, following scipy's _bca_interval operation for operation."""
    if np.isnan(jack).any():
        return "statistic undefined when leaving one unit out (BCa)"
    n_resamples = tb.size
    percentile = (np.count_nonzero(tb < theta_hat) + np.count_nonzero(tb <= theta_hat)) / (2 * n_resamples)
    if percentile in (0.0, 1.0):
        return "estimate lies outside the bootstrap distribution (BCa)"
    z0 = float(special.ndtri(percentile))
    n_j = float(jack.size)
    u = (n_j - 1) * (np.mean(jack) - jack)
    den = np.sum(u**2) / n_j**2
    if den == 0:
        return "degenerate jackknife: every leave-one-out value is equal (BCa)"
    a_hat = float(1 / 6 * (np.sum(u**3) / n_j**3) / den ** (3 / 2))
    return _Bca(z0, a_hat)


def _degenerate(tb: FloatArray, theta_hat: float) -> str | None:
    n_nan = int(np.count_nonzero(np.isnan(tb)))
    if n_nan:
        return f"statistic undefined in {n_nan} of {tb.size} resamples (constant scores)"
    if float(np.ptp(tb)) <= 1e-12 * max(1.0, abs(theta_hat)):
        return "degenerate bootstrap: every resample gives the same value"
    return None


def bootstrap_limits(
    tb: FloatArray, theta_hat: float, jack: FloatArray | None, confidence: float
) -> tuple[float, float] | str:
    """Percentile (jack None) or BCa limits, following scipy's _bca_interval operation for operation.

    Returns the reason instead when the interval is undefined (scipy would return NaN there).
    """
    from scipy import stats as sps

    reason = _degenerate(tb, theta_hat)
    if reason is not None:
        return reason
    alpha = (1.0 - confidence) / 2.0
    probs = np.array([alpha, 1.0 - alpha])
    if jack is not None:
        bca = _bca_constants(tb, theta_hat, jack)
        if isinstance(bca, str):
            return bca
        z0, a_hat = bca.z0, bca.a_hat
        z_alpha = float(special.ndtri(alpha))
        num1, num2 = z0 + z_alpha, z0 - z_alpha
        probs = np.array(
            [special.ndtr(z0 + num1 / (1 - a_hat * num1)), special.ndtr(z0 + num2 / (1 - a_hat * num2))]
        )
        if not np.isfinite(probs).all():
            return "BCa adjustment undefined (extreme acceleration)"
    low, high = (float(v) for v in sps.quantile(tb, probs))
    return low, high


def bootstrap_p_value(
    tb: ArrayLike, theta_hat: float, jack: ArrayLike | None = None, null: float = 0.0
) -> float | None:
    """Two-sided p-value of ``null`` by inverting the percentile (jack None) or BCa interval.

    The smallest 1 - confidence at which the interval of the same kind excludes ``null``: p < 0.05 exactly
    when the 95% interval (before quantile interpolation) leaves ``null`` out. A null beyond every resample
    gets p = 1/n_resamples, the resolution of the bootstrap. None when the interval is undefined.
    """
    values = as_vector(tb, "tb")
    if _degenerate(values, theta_hat) is not None:
        return None
    n_resamples = values.size
    below = int(np.count_nonzero(values < null) + np.count_nonzero(values <= null))
    if below in (0, 2 * n_resamples):
        # Every limit at every level lies among the resamples, so every interval leaves the null out; the
        # BCa map of a clamped position would give a p that contradicts it.
        return 1.0 / n_resamples
    position = min(max(below / (2 * n_resamples), 0.5 / n_resamples), 1 - 0.5 / n_resamples)
    z = float(special.ndtri(position))
    if jack is not None:
        bca = _bca_constants(values, theta_hat, as_vector(jack, "jack"))
        if isinstance(bca, str):
            return None
        # BCa maps a level z_alpha to the quantile Phi(z0 + u / (1 - a u)), u = z0 + z_alpha; solve for the
        # level whose limit is the null.
        d = z - bca.z0
        if 1 + bca.a_hat * d <= 0:
            return None
        z = d / (1 + bca.a_hat * d) - bca.z0
    return float(min(1.0, 2 * min(special.ndtr(z), special.ndtr(-z))))


def _intervals(
    theta_hat: FloatArray,
    theta_b: FloatArray,
    jack: FloatArray | None,
    kind: BootstrapKind,
    confidence: float,
    seed: int,
    units: Units,
    expand: bool = False,
) -> list[BootstrapCI]:
    n_stats, n_resamples = theta_b.shape
    n_clusters = units.q if units.clustered else None
    level = expanded_confidence(confidence, units.q) if expand else None
    too_few = level is not None and (1.0 - level) / 2 * n_resamples < _MIN_TAIL_RESAMPLES
    out: list[BootstrapCI] = []
    for j in range(n_stats):
        jj = None if jack is None else jack[j]
        if too_few:
            assert level is not None
            limits: tuple[float, float] | str = (
                f"the small-sample expanded level {level:.6f} ({units.q} units) leaves fewer than "
                f"{_MIN_TAIL_RESAMPLES} of {n_resamples} resamples beyond each limit"
            )
        else:
            limits = bootstrap_limits(
                theta_b[j], float(theta_hat[j]), jj, confidence if level is None else level
            )
        if isinstance(limits, str):
            out.append(
                BootstrapCI(
                    None, None, kind, n_resamples, seed, confidence, units.n, limits, n_clusters, None, level
                )
            )
        else:
            p = bootstrap_p_value(theta_b[j], float(theta_hat[j]), jj)
            if level is not None and p is not None and p > 1.0 / n_resamples:
                p = _expanded_p(p, units.q)
            out.append(
                BootstrapCI(
                    limits[0],
                    limits[1],
                    kind,
                    n_resamples,
                    seed,
                    confidence,
                    units.n,
                    None,
                    n_clusters,
                    p,
                    level,
                )
            )
    return out


# An expanded interval reads its limits this many resamples or more inside each tail; at fewer (a handful
# of units, or few resamples) it is undefined rather than the range of the resamples.
_MIN_TAIL_RESAMPLES = 10


def expanded_confidence(confidence: float, units: int) -> float:
    """The level at which an expanded bootstrap interval is read: 2 Phi(sqrt(G / (G - 1)) t_{G-1}) - 1,
    t_{G-1} the (1 + confidence) / 2 quantile of Student's t with G - 1 df, G the units resampled
    (Hesterberg 2015, "What teachers should know about the bootstrap", section 4.2; the default of
    CI.bca and CI.percentile in the R package resample). It undoes the bootstrap's narrowness at small
    samples, which divides by n where the unbiased variance divides by n - 1 and uses normal quantiles
    where t quantiles belong: 0.9577 at G = 50, 0.9539 at G = 100, 0.95 + O(1/G). Raises ValueError for
    G < 2."""
    check_confidence(confidence)
    if units < 2:
        raise ValueError(f"need at least 2 units to expand an interval, got {units}")
    t = t_quantile(0.5 + confidence / 2, units - 1)
    return float(2 * special.ndtr(math.sqrt(units / (units - 1)) * t) - 1)


def _expanded_p(p: float, units: int) -> float:
    """The p of an expanded interval from the p of the plain one: the nominal 1 - confidence at which the
    expanded interval's limit reaches the null (the plain interval's limit there is at level 1 - p). Not
    for the floor p = 1/n_resamples of a null beyond every resample, which every interval excludes."""
    z = float(special.ndtri(1 - p / 2))
    return float(min(1.0, 2 * t_sf(z / math.sqrt(units / (units - 1)), units - 1)))


def check_bootstrap_args(kind: str, n_resamples: int, confidence: float) -> None:
    """ValueError for an unknown interval kind, no resamples, or a confidence outside (0, 1)."""
    check_confidence(confidence)
    if kind not in ("bca", "percentile"):
        raise ValueError(f"unknown bootstrap interval {kind!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")


def undefined_ci(
    kind: BootstrapKind, n_resamples: int, seed: int, confidence: float, n: int, reason: str
) -> BootstrapCI:
    """An interval that is not computed, with the reason."""
    return BootstrapCI(None, None, kind, n_resamples, seed, confidence, n, reason)


def min_units_reason(units: Units, min_n: int = 3) -> str | None:
    """Why too few clusters are left to resample, or None."""
    if units.clustered and units.q < min_n:
        return f"fewer than {min_n} distinct clusters (questions) to resample (q = {units.q})"
    return None


def bootstrap_patterns(
    patterns: Mapping[bytes, list[str]],
    build: Callable[[NDArray[np.bool_], list[str]], tuple[Kernel, FloatArray]],
    clusters: ArrayLike | None,
    ci_method: BootstrapKind,
    n_resamples: int,
    seed: int,
    confidence: float,
    chunk_elements: int,
    expand: bool = False,
) -> dict[str, BootstrapCI]:
    """Intervals of the statistics of every group of names sharing a missing-value pattern (the key: the
    kept items' mask as bytes); ``build(keep, names)`` gives the group's kernel and point estimates. Each
    group draws its own resamples with ``seed``; ``expand`` reads its limits at ``expanded_confidence``."""
    out: dict[str, BootstrapCI] = {}
    for key, names in patterns.items():
        keep = np.frombuffer(key, dtype=np.bool_)
        units = units_of(clusters, keep)
        kernel, theta_hat = build(keep, names)
        compiled = compiled_pays(n_resamples * units.n * kernel.n_stats, units.n)
        theta_b = bootstrap_distribution(kernel, units, n_resamples, seed, chunk_elements, compiled)
        jack = leave_one_out(kernel, units, chunk_elements, compiled) if ci_method == "bca" else None
        results = _intervals(theta_hat, theta_b, jack, ci_method, confidence, seed, units, expand)
        out.update(zip(names, results, strict=True))
    return out


def jackknife_se(values: FloatArray) -> float:
    """The jackknife standard error from the G leave-one-out values: sqrt((G - 1) / G * sum((v - mean)^2))."""
    g = values.size
    return math.sqrt((g - 1) / g * float(np.sum((values - values.mean()) ** 2)))
