"""Comparisons of two metrics' correlations with the same human score, and families of comparisons.

corr(a, human) - corr(b, human) on the same items: the paired bootstrap and the jackknife-t of the
difference (for one reference against many metrics at once), Williams' t, Steiger's Z and Zou's interval
for Pearson, Zou's interval and a z-test for the rank coefficients; Holm and Benjamini-Hochberg adjustment;
and the items needed to tell two correlations apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.stats import special
from services.stats.core import (
    DEFAULT_CHUNK_ELEMENTS,
    CorrMethod,
    FloatArray,
    as_vector,
    check_confidence,
    complete_cases,
    why_undefined,
)
from services.stats.corr_kernels import DifferenceKernel, correlation_kernel
from services.stats.correlations import atanh_ci, atanh_se, fisher_ci
from services.stats.reference import norm_sf, reference_statistic, t_quantile, t_sf
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


@dataclass(frozen=True, slots=True)
class DifferenceTest:
    """A test statistic with its two-sided p-value (``df`` None for z statistics)."""

    statistic: float
    p_value: float
    df: int | None = None


@dataclass(frozen=True, slots=True)
class DependentComparison:
    """r(a, human) - r(b, human) on the same items, with the tests of docs/statistics.md §3."""

    method: CorrMethod
    n: int
    n_dropped: int
    r_a: float | None
    r_b: float | None
    r_ab: float | None
    difference: float | None
    williams: DifferenceTest | None
    steiger: DifferenceTest | None
    zou_low: float | None
    zou_high: float | None
    bootstrap: BootstrapCI | None
    undefined_reason: str | None = None
    analytic_undefined_reason: str | None = None
    # Spearman and Kendall: z on atanh with each coefficient's Fieller SE and Zou's c (rank_difference_z).
    rank_z: DifferenceTest | None = None


# ------------------------------------------------------------------------- resampled differences


def bootstrap_differences_many(
    reference: ArrayLike,
    others: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci_method: BootstrapKind = "bca",
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
    clusters: ArrayLike | None = None,
) -> dict[str, BootstrapCI]:
    """Paired bootstrap intervals of corr(reference, human) - corr(other, human) for every other metric.

    Each difference uses the items where the reference, that metric and the human score are all present,
    and equals ``scipy.stats.bootstrap((ref, other, human), lambda a, b, h: r(a, h) - r(b, h), paired=True,
    ...)`` with the same seed there. Metrics with the same missing-value pattern share the index matrix.
    ``clusters`` and the undefined cases as in ``bootstrap_ci_many``; each interval carries the p-value of
    "no difference" by inverting it.
    """
    check_bootstrap_args(ci_method, n_resamples, confidence)
    patterns, undefined, build = _difference_patterns(reference, others, human, method, clusters)
    out = {
        name: undefined_ci(ci_method, n_resamples, seed, confidence, n, reason)
        for name, (n, reason) in undefined.items()
    }
    out |= bootstrap_patterns(
        patterns, build, clusters, ci_method, n_resamples, seed, confidence, chunk_elements
    )
    return {name: out[name] for name in others}


def _difference_patterns(
    reference: ArrayLike,
    others: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod,
    clusters: ArrayLike | None,
) -> tuple[
    dict[bytes, list[str]],
    dict[str, tuple[int, str]],
    Callable[[NDArray[np.bool_], list[str]], tuple[Kernel, FloatArray]],
]:
    """The other metrics grouped by the items where the reference, the metric and the human score are all
    present (key: that mask as bytes); those whose difference is undefined, name -> (items, reason); and
    ``build(keep, names)``: the kernel of r(reference, h) - r(other, h) for a group with its estimates."""
    ref_all = as_vector(reference, "reference")
    h_all = as_vector(human, "human")
    if ref_all.size != h_all.size:
        raise ValueError(f"reference has {ref_all.size} values, human has {h_all.size}")
    patterns: dict[bytes, list[str]] = {}
    undefined: dict[str, tuple[int, str]] = {}
    arrays = {name: as_vector(x, name) for name, x in others.items()}
    for name, x in arrays.items():
        if x.size != h_all.size:
            raise ValueError(f"{name} has {x.size} values, human has {h_all.size}")
        keep = np.isfinite(x) & np.isfinite(h_all) & np.isfinite(ref_all)
        reason = (
            why_undefined(ref_all[keep], h_all[keep])
            or why_undefined(x[keep], h_all[keep])
            or min_units_reason(units_of(clusters, keep))
        )
        if reason is not None:
            undefined[name] = (int(keep.sum()), reason)
        else:
            patterns.setdefault(keep.tobytes(), []).append(name)

    def build(keep: NDArray[np.bool_], names: list[str]) -> tuple[Kernel, FloatArray]:
        h, ref = h_all[keep], ref_all[keep]
        x = np.vstack([ref, *(arrays[name][keep] for name in names)])
        r_ref = reference_statistic(method, ref, h)[0]
        theta_hat = np.array([r_ref - reference_statistic(method, row, h)[0] for row in x[1:]])
        return DifferenceKernel(correlation_kernel(method, x, h)), theta_hat

    return patterns, undefined, build


def jackknife_differences_many(
    reference: ArrayLike,
    others: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> dict[str, JackknifeCI]:
    """Jackknife-t interval of d = corr(reference, human) - corr(other, human) for every other metric.

    d -+ t_{G-1, (1+confidence)/2} se, se the jackknife standard error of d leaving out one item at a time,
    or one question (all its outputs) when ``clusters`` repeat, G the units left out; ``p_value`` is the
    two-sided t-test of d = 0 with the same se and df, so p < 1 - confidence exactly when the interval leaves
    0 out. On tied ratings the paired BCa bootstrap of d covers 92.7-94.2% at n = 50-100 where this covers
    94.6-95.5%, and 94.9-95.2% by question on pooled runs (bench/coverage.py). Items where the reference,
    the metric and the human score are all present; undefined (reason given) as in
    ``bootstrap_differences_many``, or when every leave-one-out difference is equal. Raises ValueError on
    malformed input.
    """
    check_confidence(confidence)
    patterns, undefined, build = _difference_patterns(reference, others, human, method, clusters)
    out = {
        name: JackknifeCI(None, None, None, 0, confidence, n, None, None, why)
        for name, (n, why) in undefined.items()
    }
    for key, names in patterns.items():
        keep = np.frombuffer(key, dtype=np.bool_)
        units = units_of(clusters, keep)
        kernel, theta_hat = build(keep, names)
        jack = leave_one_out(kernel, units, chunk_elements)
        n_clusters = units.q if units.clustered else None
        g = units.q
        t = t_quantile(0.5 + confidence / 2, g - 1)
        for j, name in enumerate(names):
            d = float(theta_hat[j])
            row = jack[j]
            why = None
            if not np.isfinite(row).all():
                why = "statistic undefined when leaving one unit out (jackknife)"
            else:
                se = jackknife_se(row)
                if se <= 0.0:
                    why = "degenerate jackknife: every leave-one-out difference is equal"
            if why is not None:
                out[name] = JackknifeCI(
                    None, None, None, g - 1, confidence, units.n, n_clusters, None, why, d
                )
                continue
            p = 2 * t_sf(abs(d) / se, g - 1)
            out[name] = JackknifeCI(
                d - t * se, d + t * se, se, g - 1, confidence, units.n, n_clusters, p, None, d
            )
    return {name: out[name] for name in others}


def bootstrap_difference_ci(
    a: ArrayLike,
    b: ArrayLike,
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    ci_method: BootstrapKind = "bca",
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
    clusters: ArrayLike | None = None,
) -> BootstrapCI:
    """Paired bootstrap interval of corr(a, human) - corr(b, human), items (or clusters) resampled jointly.

    Equals ``scipy.stats.bootstrap((a, b, human), lambda a, b, h: r(a, h) - r(b, h), paired=True, ...)``
    on the items where all three are present. See ``bootstrap_differences_many``.
    """
    return bootstrap_differences_many(
        a,
        {"b": b},
        human,
        method,
        ci_method=ci_method,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        chunk_elements=chunk_elements,
        clusters=clusters,
    )["b"]


# ------------------------------------------------------------- analytic tests of dependent correlations


def _check_rs(n: int, min_n: int, *rs: float) -> None:
    if n < min_n:
        raise ValueError(f"need n >= {min_n}, got {n}")
    for r in rs:
        if not -1.0 < r < 1.0:
            raise ValueError(f"correlations must lie strictly between -1 and 1, got {r}")


def williams_t(r12: float, r13: float, r23: float, n: int) -> DifferenceTest:
    """Williams' t for r12 vs r13 sharing variable 1 (df n - 3, two-sided p).

    Raises ValueError for n < 4, |r| >= 1, or correlations that cannot come from one correlation matrix.
    """
    _check_rs(n, 4, r12, r13, r23)
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    if det < 0:
        raise ValueError("r12, r13 and r23 do not form a valid correlation matrix")
    rbar = (r12 + r13) / 2
    denom = 2 * ((n - 1) / (n - 3)) * det + rbar**2 * (1 - r23) ** 3
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denom)
    df = n - 3
    return DifferenceTest(t, 2 * t_sf(abs(t), df), df)


def steiger_z(r12: float, r13: float, r23: float, n: int) -> DifferenceTest:
    """Steiger's Z (pooled r-bar) for r12 vs r13 sharing variable 1, two-sided normal p.

    Raises ValueError for n < 4 or |r| >= 1.
    """
    _check_rs(n, 4, r12, r13, r23)
    rbar = (r12 + r13) / 2
    c = (r23 * (1 - 2 * rbar**2) - 0.5 * rbar**2 * (1 - 2 * rbar**2 - r23**2)) / (1 - rbar**2) ** 2
    z = (math.atanh(r12) - math.atanh(r13)) * math.sqrt(n - 3) / math.sqrt(2 - 2 * c)
    return DifferenceTest(z, 2 * norm_sf(abs(z)))


def zou_c(r12: float, r13: float, r23: float) -> float:
    """Zou's (2007) correlation of the estimates r12 and r13, which share variable 1."""
    return ((r23 - 0.5 * r12 * r13) * (1 - r12**2 - r13**2 - r23**2) + r23**3) / ((1 - r12**2) * (1 - r13**2))


def mover_ci(
    r12: float, ci12: tuple[float, float], r13: float, ci13: tuple[float, float], c: float
) -> tuple[float, float]:
    """Zou's (2007) interval for r12 - r13 from each coefficient's own limits and the correlation c of the
    two estimates (the "method of variance estimates recovery")."""
    (l1, u1), (l2, u2) = ci12, ci13
    d = r12 - r13
    low = d - math.sqrt(max(0.0, (r12 - l1) ** 2 + (u2 - r13) ** 2 - 2 * c * (r12 - l1) * (u2 - r13)))
    high = d + math.sqrt(max(0.0, (u1 - r12) ** 2 + (r13 - l2) ** 2 - 2 * c * (u1 - r12) * (r13 - l2)))
    return low, high


def zou_ci(r12: float, r13: float, r23: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Zou (2007) interval for r12 - r13 sharing variable 1, from the Fisher limits of each r.

    Raises ValueError for n < 4 or |r| >= 1.
    """
    _check_rs(n, 4, r12, r13, r23)
    c = zou_c(r12, r13, r23)
    return mover_ci(r12, fisher_ci(r12, n, confidence), r13, fisher_ci(r13, n, confidence), c)


def rank_difference(
    method: Literal["spearman", "kendall"],
    a: FloatArray,
    b: FloatArray,
    human: FloatArray,
    confidence: float = 0.95,
) -> tuple[tuple[float, float], DifferenceTest]:
    """Zou's interval and a z-test for rank(a, human) - rank(b, human) on the same complete items.

    Each coefficient's own interval is its Fieller interval (Kendall: with the tie factor), c is Zou's
    formula applied to the three rank coefficients, and z = (atanh r_a - atanh r_b) / sqrt(se_a^2 + se_b^2
    - 2 c se_a se_b) with the same SEs. On averaged 1-5 ratings and judge scores piled at 0 and 1 the
    interval covers 0.938-0.942 at n = 50 and 100, where the paired BCa bootstrap of the difference covers
    0.930-0.942 (bench/coverage.py, 1,000 data sets per cell). Raises ValueError when a coefficient is
    +-1, n is too small for the SE formula (Spearman n <= 3, Kendall n <= 4), or a variable is constant.
    """
    ci_kind = "fieller" if method == "spearman" else "fieller-ties"
    r_a = reference_statistic(method, a, human)[0]
    r_b = reference_statistic(method, b, human)[0]
    r_ab = reference_statistic(method, a, b)[0]
    n = human.size
    _check_rs(n, 5 if method == "kendall" else 4, r_a, r_b, r_ab)
    se_a = atanh_se(method, ci_kind, r_a, n, a, human)
    se_b = atanh_se(method, ci_kind, r_b, n, b, human)
    if se_a is None or se_b is None:
        raise ValueError(f"n = {n} is too small for the {ci_kind} SE")
    c = zou_c(r_a, r_b, r_ab)
    ci = mover_ci(r_a, atanh_ci(r_a, se_a, confidence), r_b, atanh_ci(r_b, se_b, confidence), c)
    var = se_a**2 + se_b**2 - 2 * c * se_a * se_b
    if var <= 0:
        raise ValueError("the two coefficients' estimates are perfectly correlated")
    z = (math.atanh(r_a) - math.atanh(r_b)) / math.sqrt(var)
    return ci, DifferenceTest(z, 2 * norm_sf(abs(z)))


def compare_correlations(
    a: ArrayLike,
    b: ArrayLike,
    human: ArrayLike,
    *,
    method: CorrMethod = "pearson",
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
) -> DependentComparison:
    """Compare corr(a, human) with corr(b, human) on the items where all three are present.

    Pearson gets Williams' t, Steiger's Z and Zou's interval; Spearman and Kendall Zou's interval from their
    Fieller intervals and a z-test (``rank_difference``); every method gets a paired BCa bootstrap of the
    difference (skipped when n_resamples = 0). Undefined (reason given) for fewer than 4 complete items,
    constant input, or a perfect correlation that the analytic formulas cannot take.
    """
    check_confidence(confidence)
    (av, bv, hv), dropped = complete_cases(as_vector(a, "a"), as_vector(b, "b"), as_vector(human, "human"))
    n = hv.size
    reason = why_undefined(av, hv, 4) or why_undefined(bv, hv, 4)
    if reason is not None:
        return DependentComparison(
            method, n, dropped, None, None, None, None, None, None, None, None, None, reason
        )
    r_a = reference_statistic(method, av, hv)[0]
    r_b = reference_statistic(method, bv, hv)[0]
    r_ab = reference_statistic(method, av, bv)[0]
    williams = steiger = rank_z = None
    zou_low = zou_high = None
    analytic_reason = None
    try:
        if method == "pearson":
            williams = williams_t(r_a, r_b, r_ab, n)
            steiger = steiger_z(r_a, r_b, r_ab, n)
            zou_low, zou_high = zou_ci(r_a, r_b, r_ab, n, confidence)
        else:
            (zou_low, zou_high), rank_z = rank_difference(method, av, bv, hv, confidence)
    except ValueError as exc:
        # Perfect or collinear correlations: the formulas divide by zero there.
        analytic_reason = f"analytic tests undefined: {exc}"
    boot = None
    if n_resamples > 0:
        boot = bootstrap_difference_ci(
            av, bv, hv, method, n_resamples=n_resamples, seed=seed, confidence=confidence
        )
    return DependentComparison(
        method,
        n,
        dropped,
        r_a,
        r_b,
        r_ab,
        r_a - r_b,
        williams,
        steiger,
        zou_low,
        zou_high,
        boot,
        None,
        analytic_reason,
        rank_z,
    )


# ----------------------------------------------------------------------------- multiple comparisons (§4)


def adjust_p_values(p_values: Sequence[float | None], method: Literal["holm", "bh"]) -> list[float | None]:
    """Holm (family-wise) or Benjamini-Hochberg (FDR) adjusted p-values, in input order.

    Undefined p-values (None or NaN) stay None and are not counted in the family. Raises ValueError for a
    p-value outside [0, 1] or an unknown method.
    """
    if method not in ("holm", "bh"):
        raise ValueError(f"unknown adjustment {method!r}")
    defined = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    values = np.array([p_values[i] for i in defined], dtype=np.float64)
    if ((values < 0) | (values > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    out: list[float | None] = [None] * len(p_values)
    m = values.size
    if m:
        # Written out rather than statsmodels.multipletests: its Holm branch calls gc.collect() on every call
        # (0.25 s in a service process holding models), and the two formulas are a few lines. Same results
        # as multipletests(method='holm' / 'fdr_bh'), checked against docs/statistics.md §4.
        order = np.argsort(values, kind="stable")
        ranked = values[order]
        if method == "holm":
            adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ranked))
        else:
            adjusted = np.minimum(1.0, np.minimum.accumulate(m / np.arange(m, 0, -1) * ranked[::-1])[::-1])
        result = np.empty(m)
        result[order] = adjusted
        for i, p in zip(defined, result, strict=True):
            out[i] = float(p)
    return out


# ------------------------------------------------------------------------------------------------ power (§8)


def n_needed_to_separate(
    r1: float, r2: float, r12_between_metrics: float, power: float = 0.8, alpha: float = 0.05
) -> int:
    """Items needed to tell corr(metric1, human) = r1 from r2 = corr(metric2, human) on the same items.

    Two-sided test on atanh r1 - atanh r2 with variance (2 - 2c)/(n - 3), c the correlation of the two
    estimates (Zou's c, from r1, r2 and the correlation between the metrics). Raises ValueError when r1 = r2
    or an argument is out of range.
    """
    if not (0.0 < power < 1.0 and 0.0 < alpha < 1.0):
        raise ValueError("power and alpha must lie in (0, 1)")
    _check_rs(4, 4, r1, r2, r12_between_metrics)
    if r1 == r2:
        raise ValueError("equal correlations cannot be separated at any n")
    c = zou_c(r1, r2, r12_between_metrics)
    z = float(special.ndtri(1 - alpha / 2)) + float(special.ndtri(power))
    return math.ceil(3 + z**2 * (2 - 2 * c) / (math.atanh(r1) - math.atanh(r2)) ** 2)
