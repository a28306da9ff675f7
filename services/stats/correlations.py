"""Correlations of metrics with a human score, each with its interval.

Estimates and p-values come from scipy (pearsonr, spearmanr, kendalltau) on complete pairs. Intervals:
analytic on Fisher's z (Fisher, Fieller, Bonett-Wright), paired bootstrap (BCa, percentile; items or whole
clusters resampled, all metrics sharing a human score at once, see ``services.stats.resampling``) or
jackknife-t. A correlation that cannot be computed has ``None`` and a reason, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats.core import (
    DEFAULT_CHUNK_ELEMENTS,
    RANK_CHUNK_ELEMENTS,
    CorrMethod,
    FloatArray,
    as_vector,
    check_confidence,
    complete_pairs,
    why_undefined,
    z_critical,
)
from services.stats.corr_kernels import correlation_kernel
from services.stats.reference import reference_statistic
from services.stats.resampling import (
    BootstrapCI,
    BootstrapKind,
    JackknifeCI,
    Kernel,
    bootstrap_patterns,
    check_bootstrap_args,
    jackknife_se,
    leave_one_out,
    min_units_reason,
    undefined_ci,
    units_of,
)

CiChoice = Literal["analytic", "bca", "percentile", "jackknife"]


@dataclass(frozen=True, slots=True)
class CorrelationResult:
    """A correlation with its interval; ``estimate is None`` means undefined (see ``undefined_reason``)."""

    method: CorrMethod
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n: int
    ci_method: str | None
    undefined_reason: str | None = None
    n_dropped: int = 0
    confidence: float = 0.95
    ci_undefined_reason: str | None = None
    p_method: str = "scipy"
    n_clusters: int | None = None


# ------------------------------------------------------------------------------------ analytic intervals


def atanh_ci(r: float, se: float, confidence: float) -> tuple[float, float]:
    """tanh(atanh r -+ z se): the interval of r from the standard error of atanh r."""
    z = math.atanh(r)
    half = z_critical(confidence) * se
    return math.tanh(z - half), math.tanh(z + half)


def fisher_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher interval tanh(atanh r +- z/sqrt(n-3)) for a Pearson r.

    Returns (-1, 1) when n <= 3 (no information). Raises ValueError when |r| >= 1 (the interval degenerates)
    or the confidence is outside (0, 1).
    """
    check_confidence(confidence)
    if not -1.0 < r < 1.0:
        raise ValueError(f"the Fisher interval needs |r| < 1, got {r}")
    if n <= 3:
        return -1.0, 1.0
    return atanh_ci(r, 1.0 / math.sqrt(n - 3), confidence)


def fisher_ci_width(r: float, n: int, confidence: float = 0.95) -> float:
    """Width of the Fisher interval for r at n items (docs/statistics.md §8); fails as fisher_ci does."""
    low, high = fisher_ci(r, n, confidence)
    return high - low


def _tie_pairs_of(x: FloatArray) -> int:
    _, sizes = np.unique(x, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


def kendall_tie_factor(x: ArrayLike, y: ArrayLike) -> float:
    """n0 / sqrt((n0 - n1)(n0 - n2)) on complete pairs: how much ties inflate tau-b over tau-a.

    n0 = n(n - 1)/2; n1, n2 = sum t(t - 1)/2 over the tie groups of x and of y. 1 without ties. Multiplying
    the Fieller SE of atanh(tau-b) by it restores 95% coverage on tied ratings (docs/statistics.md §2, and
    bench/coverage.py). Raises ValueError when either variable is constant (tau-b is undefined).
    """
    xc, yc, _ = complete_pairs(x, y)
    n0 = xc.size * (xc.size - 1) // 2
    n1, n2 = _tie_pairs_of(xc), _tie_pairs_of(yc)
    if n0 == 0 or n1 == n0 or n2 == n0:
        raise ValueError("tau-b is undefined: fewer than 2 pairs or a constant variable")
    return n0 / math.sqrt((n0 - n1) * (n0 - n2))


def atanh_se(
    method: CorrMethod, ci_method: str, r: float, n: int, x: FloatArray, y: FloatArray
) -> float | None:
    """Standard error of atanh(r) (docs/statistics.md §1-2); None when n is too small for the formula."""
    if method == "kendall":
        if n <= 4:
            return None
        se = math.sqrt(0.437 / (n - 4))
        return se * kendall_tie_factor(x, y) if ci_method == "fieller-ties" else se
    if n <= 3:
        return None
    if method == "pearson":
        return 1.0 / math.sqrt(n - 3)
    if ci_method == "bonett-wright":
        return math.sqrt((1.0 + r * r / 2.0) / (n - 3))
    return math.sqrt(1.06 / (n - 3))


def _analytic(
    method: CorrMethod, x: ArrayLike, y: ArrayLike, confidence: float, ci_method: str
) -> CorrelationResult:
    check_confidence(confidence)
    xc, yc, dropped = complete_pairs(x, y)
    n = xc.size
    reason = why_undefined(xc, yc)
    if reason is not None:
        return CorrelationResult(
            method, None, None, None, None, n, None, reason, dropped, confidence, "correlation undefined"
        )
    estimate, p_value = reference_statistic(method, xc, yc)
    se = atanh_se(method, ci_method, estimate, n, xc, yc)
    ci_low: float | None
    ci_high: float | None
    ci_reason: str | None = None
    if se is None:
        # Too few items for the variance formula: the only honest interval is the whole range.
        ci_low, ci_high = -1.0, 1.0
    elif abs(estimate) >= 1.0:
        ci_low = ci_high = None
        ci_reason = f"{ci_method} interval degenerates at |r| = 1"
    else:
        ci_low, ci_high = atanh_ci(estimate, se, confidence)
    return CorrelationResult(
        method, estimate, ci_low, ci_high, p_value, n, ci_method, None, dropped, confidence, ci_reason
    )


def pearson(x: ArrayLike, y: ArrayLike, *, confidence: float = 0.95) -> CorrelationResult:
    """Pearson r (scipy.stats.pearsonr) with the Fisher interval, on complete pairs.

    Undefined (estimate None, with reason) for fewer than 3 complete pairs or constant input. n = 3 gives the
    interval (-1, 1); |r| = 1 leaves the interval undefined. Raises ValueError on malformed input.
    """
    return _analytic("pearson", x, y, confidence, "fisher")


def spearman(
    x: ArrayLike,
    y: ArrayLike,
    *,
    confidence: float = 0.95,
    ci: Literal["fieller", "bonett-wright"] = "fieller",
) -> CorrelationResult:
    """Spearman rho (scipy.stats.spearmanr) with the Fieller (SE^2 = 1.06/(n-3)) or Bonett-Wright interval.

    Same undefined cases as ``pearson``.
    """
    if ci not in ("fieller", "bonett-wright"):
        raise ValueError(f"unknown Spearman interval {ci!r}")
    return _analytic("spearman", x, y, confidence, ci)


def kendall(
    x: ArrayLike,
    y: ArrayLike,
    *,
    confidence: float = 0.95,
    ci: Literal["fieller-ties", "fieller"] = "fieller-ties",
) -> CorrelationResult:
    """Kendall tau-b (scipy.stats.kendalltau) with a Fieller-type interval on atanh(tau).

    ``fieller-ties`` (default): SE^2 = 0.437/(n-4) times the squared tie factor (``kendall_tie_factor``);
    equal to ``fieller`` without ties. Plain ``fieller`` under-covers on tied data (92-93% on averaged 1-5
    ratings). Same undefined cases as ``pearson``; n = 3 or 4 gives the interval (-1, 1).
    """
    if ci not in ("fieller-ties", "fieller"):
        raise ValueError(f"unknown Kendall interval {ci!r}")
    return _analytic("kendall", x, y, confidence, ci)


def correlation(
    x: ArrayLike,
    y: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci: CiChoice = "analytic",
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    spearman_ci: Literal["fieller", "bonett-wright"] = "fieller",
    kendall_ci: Literal["fieller-ties", "fieller"] = "fieller-ties",
    clusters: ArrayLike | None = None,
) -> CorrelationResult:
    """One correlation with an analytic (Fisher/Fieller) or paired bootstrap (BCa/percentile) interval.

    The estimate and p-value always come from scipy; ``ci`` only chooses the interval. A bootstrap interval
    that cannot be computed leaves ci_low/ci_high None with ``ci_undefined_reason``.
    """
    return correlations_many(
        {"x": x},
        y,
        method,
        ci=ci,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        spearman_ci=spearman_ci,
        kendall_ci=kendall_ci,
        clusters=clusters,
    )["x"]


def correlations_many(
    metrics: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci: CiChoice = "analytic",
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    chunk_elements: int | None = None,
    spearman_ci: Literal["fieller", "bonett-wright"] = "fieller",
    kendall_ci: Literal["fieller-ties", "fieller"] = "fieller-ties",
    clusters: ArrayLike | None = None,
    expand: bool = False,
) -> dict[str, CorrelationResult]:
    """Correlation of every metric with the same human score, keyed like ``metrics``.

    ``ci="analytic"`` gives Fisher (Pearson), Fieller or Bonett-Wright (Spearman, ``spearman_ci``) or Fieller
    (Kendall) intervals. With a bootstrap ``ci`` all metrics share one resample index matrix (see
    ``bootstrap_ci_many``), so each interval equals scipy.stats.bootstrap with the same seed on that metric's
    complete pairs. ``ci="jackknife"``: the jackknife-t interval on Fisher's z (``jackknife_ci_many``),
    leaving out one question at a time when ``clusters`` repeat. With clusters that repeat, the p-value
    comes from the same bootstrap or jackknife (scipy's assumes independent items). ``expand`` reads the
    bootstrap limits at ``expanded_confidence`` (see ``bootstrap_ci_many``). Raises ValueError for an
    unknown method or interval.
    """
    analytic_ci = {"pearson": "fisher", "spearman": spearman_ci, "kendall": kendall_ci}.get(method)
    if (
        analytic_ci is None
        or spearman_ci not in ("fieller", "bonett-wright")
        or kendall_ci not in ("fieller-ties", "fieller")
    ):
        raise ValueError(
            f"unknown correlation method {method!r} or interval {spearman_ci!r} / {kendall_ci!r}"
        )
    out = {name: _analytic(method, x, human, confidence, analytic_ci) for name, x in metrics.items()}
    if ci == "analytic":
        return out
    defined = {name: metrics[name] for name, res in out.items() if res.estimate is not None}
    if ci == "jackknife":
        jack = jackknife_ci_many(defined, human, method, confidence=confidence, clusters=clusters)
        for name, jk in jack.items():
            out[name] = replace(
                out[name],
                ci_low=jk.low,
                ci_high=jk.high,
                ci_method="jackknife-t",
                ci_undefined_reason=jk.undefined_reason,
            )
            if jk.n_clusters is not None:
                # scipy's p assumes independent items; with clusters the jackknife's t-test holds.
                out[name] = replace(
                    out[name], p_value=jk.p_value, p_method="cluster jackknife", n_clusters=jk.n_clusters
                )
        return out
    if ci not in ("bca", "percentile"):
        raise ValueError(f"unknown interval {ci!r}")
    boot = bootstrap_ci_many(
        defined,
        human,
        method,
        ci_method=ci,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        chunk_elements=chunk_elements,
        clusters=clusters,
        expand=expand,
    )
    for name, b in boot.items():
        out[name] = replace(
            out[name], ci_low=b.low, ci_high=b.high, ci_method=ci, ci_undefined_reason=b.undefined_reason
        )
        if b.n_clusters is not None:
            # scipy's p assumes independent items; with clusters only the bootstrap's p holds.
            out[name] = replace(
                out[name], p_value=b.p_value, p_method="cluster bootstrap", n_clusters=b.n_clusters
            )
    return out


def _missing_patterns(
    arrays: Mapping[str, FloatArray], h_all: FloatArray, clusters: ArrayLike | None
) -> tuple[dict[bytes, list[str]], dict[str, tuple[int, str]]]:
    """Metrics grouped by their complete items with the human score (key: the mask as bytes), and those
    whose statistic is undefined: name -> (complete items, reason)."""
    patterns: dict[bytes, list[str]] = {}
    undefined: dict[str, tuple[int, str]] = {}
    for name, x in arrays.items():
        if x.size != h_all.size:
            raise ValueError(f"{name} has {x.size} values, human has {h_all.size}")
        keep = np.isfinite(x) & np.isfinite(h_all)
        reason = why_undefined(x[keep], h_all[keep]) or min_units_reason(units_of(clusters, keep))
        if reason is not None:
            undefined[name] = (int(keep.sum()), reason)
        else:
            patterns.setdefault(keep.tobytes(), []).append(name)
    return patterns, undefined


def _jackknife_t(
    estimate: float, jack: FloatArray, confidence: float
) -> tuple[float, float, float, float] | str:
    """(low, high, se, p) of the jackknife-t interval on Fisher's z, or why it is undefined."""
    from scipy import stats as sps

    if not np.isfinite(jack).all():
        return "statistic undefined when leaving one unit out (jackknife)"
    if abs(estimate) >= 1.0 or bool((np.abs(jack) >= 1.0).any()):
        return "a perfect correlation (|r| = 1) has no interval on Fisher's z"
    g = jack.size
    z = np.arctanh(jack)
    se = jackknife_se(z)
    if se <= 0.0:
        return "degenerate jackknife: every leave-one-out value is equal"
    t = float(sps.t.ppf(0.5 + confidence / 2, g - 1))
    centre = math.atanh(estimate)
    p = float(2 * sps.t.sf(abs(centre) / se, g - 1))
    return math.tanh(centre - t * se), math.tanh(centre + t * se), se, p


def jackknife_ci_many(
    metrics: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> dict[str, JackknifeCI]:
    """Jackknife-t interval of corr(metric, human) on Fisher's z for every metric, keyed like ``metrics``.

    se is the jackknife standard error of atanh r leaving out one question at a time when ``clusters``
    repeat (all outputs of the question together; the cluster-robust CR3 variance), else one item at a
    time; the interval is tanh(atanh r -+ t_{G-1, (1+confidence)/2} se) with G the questions (items) left
    out. On pooled runs whose answers repeat across runs, the question BCa bootstrap covers 0.91-0.95 at 50
    questions where this covers 0.945-0.957, for every coefficient (bench/coverage.py). Complete pairs per
    metric; undefined (reason given) with fewer than 3 pairs or clusters, constant input, |r| = 1, or a
    leave-one-out statistic that is undefined or +-1. Raises ValueError on malformed input.
    """
    check_confidence(confidence)
    h_all = as_vector(human, "human")
    arrays = {name: as_vector(x, name) for name, x in metrics.items()}
    patterns, undefined = _missing_patterns(arrays, h_all, clusters)
    out = {
        name: JackknifeCI(None, None, None, 0, confidence, n, None, None, why)
        for name, (n, why) in undefined.items()
    }
    for key, names in patterns.items():
        keep = np.frombuffer(key, dtype=np.bool_)
        units = units_of(clusters, keep)
        h = h_all[keep]
        x = np.vstack([arrays[name][keep] for name in names])
        jack = leave_one_out(correlation_kernel(method, x, h), units, chunk_elements)
        n_clusters = units.q if units.clustered else None
        for j, name in enumerate(names):
            estimate = reference_statistic(method, x[j], h)[0]
            res = _jackknife_t(estimate, jack[j], confidence)
            if isinstance(res, str):
                out[name] = JackknifeCI(
                    None, None, None, units.q - 1, confidence, units.n, n_clusters, None, res, estimate
                )
            else:
                low, high, se, p = res
                out[name] = JackknifeCI(
                    low, high, se, units.q - 1, confidence, units.n, n_clusters, p, None, estimate
                )
    return {name: out[name] for name in metrics}


def bootstrap_ci_many(
    metrics: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci_method: BootstrapKind = "bca",
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
    chunk_elements: int | None = None,
    clusters: ArrayLike | None = None,
    expand: bool = False,
) -> dict[str, BootstrapCI]:
    """Paired bootstrap intervals of corr(metric, human) for many metrics sharing one resample index matrix.

    Each metric's interval equals ``scipy.stats.bootstrap((x, h), stat, paired=True, method=...,
    n_resamples=n_resamples, rng=np.random.default_rng(seed))`` on its complete pairs. Metrics with the same
    missing-value pattern share the index matrix; each pattern is drawn with the same seed. Memory stays at a
    few blocks of ``chunk_elements`` entries (by default ``DEFAULT_CHUNK_ELEMENTS`` for Pearson,
    ``RANK_CHUNK_ELEMENTS`` for the rank coefficients).

    ``clusters`` (one label per item, e.g. the question of each output of pooled runs): when some cluster
    holds several complete items, resamples draw whole clusters (cluster bootstrap; BCa's jackknife leaves
    one cluster out) and ``n_clusters`` says how many there were. Items that share a question are not
    independent: resampling them one by one narrows the interval falsely.

    ``expand``: limits read at ``expanded_confidence(confidence, G)``, G the items (clusters) resampled, and
    the p-value through the same expansion; the result's ``level`` says which level was read. Without it
    (the default) the interval is scipy's.

    Undefined intervals (fewer than 3 pairs or clusters, constant input, a constant resample, degenerate
    distribution) carry a reason. Each defined interval carries the p-value of 0 by inverting it. Raises
    ValueError on malformed input.
    """
    check_bootstrap_args(ci_method, n_resamples, confidence)
    if chunk_elements is None:
        chunk_elements = DEFAULT_CHUNK_ELEMENTS if method == "pearson" else RANK_CHUNK_ELEMENTS
    h_all = as_vector(human, "human")
    arrays = {name: as_vector(x, name) for name, x in metrics.items()}
    patterns, undefined = _missing_patterns(arrays, h_all, clusters)
    out = {
        name: undefined_ci(ci_method, n_resamples, seed, confidence, n, reason)
        for name, (n, reason) in undefined.items()
    }

    def build(keep: NDArray[np.bool_], names: list[str]) -> tuple[Kernel, FloatArray]:
        h = h_all[keep]
        x = np.vstack([arrays[name][keep] for name in names])
        theta_hat = np.array([reference_statistic(method, row, h)[0] for row in x])
        return correlation_kernel(method, x, h), theta_hat

    out |= bootstrap_patterns(
        patterns, build, clusters, ci_method, n_resamples, seed, confidence, chunk_elements, expand
    )
    return {name: out[name] for name in metrics}


def bootstrap_ci(
    x: ArrayLike,
    y: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci_method: BootstrapKind = "bca",
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
) -> BootstrapCI:
    """Paired bootstrap interval of corr(x, y), equal to scipy.stats.bootstrap with the same seed.

    See ``bootstrap_ci_many`` for clusters and the undefined cases.
    """
    return bootstrap_ci_many(
        {"x": x},
        y,
        method,
        ci_method=ci_method,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        clusters=clusters,
    )["x"]
