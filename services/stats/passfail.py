"""Statistics for comparing automatic RAG metrics with human ratings.

Pure functions over numpy arrays: no database, no HTTP. Formulas, library calls and test vectors come from
STATS.md. Every result is a small frozen dataclass; a statistic that cannot be computed (too few pairs,
constant input, degenerate bootstrap) has ``None`` in place of the number and a human-readable
``undefined_reason``, so a report never shows a made-up figure or a NaN.

Bootstrap intervals resample items (questions), never rater rows, and reproduce
``scipy.stats.bootstrap(..., paired=True, method='BCa')`` draw for draw: the index matrix is drawn with the
same generator calls, and the statistic of every resample is computed from per-item resample counts, all
resamples (and all metrics sharing a human score) at once.

pingouin, krippendorff, scikit-learn, statsmodels and the compiled kernels (services.stats_kernels, numba) are
imported inside the functions that use them: importing this module must stay cheap for the API process.
``warm_up()`` imports them all ahead of time (report worker processes call it when they start).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps
from scipy.special import expit, ndtr, ndtri

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

CorrMethod = Literal["pearson", "spearman", "kendall"]
BootstrapKind = Literal["bca", "percentile"]
CiChoice = Literal["analytic", "bca", "percentile", "jackknife"]
AlphaLevel = Literal["ordinal", "interval", "nominal"]

__all__ = [
    "HELD_OUT_FIGURES",
    "PASS_FAIL_FIGURES",
    "AgreementResult",
    "AlphaResult",
    "BootstrapCI",
    "CorrelationResult",
    "DependentComparison",
    "DifferenceTest",
    "IccResult",
    "Interval",
    "JackknifeCI",
    "PassFailResult",
    "PpiResult",
    "PreferenceResult",
    "RaterPair",
    "SystemLevelResult",
    "adjust_p_values",
    "agreement",
    "bootstrap_ci",
    "bootstrap_ci_many",
    "bootstrap_difference_ci",
    "bootstrap_differences_many",
    "bootstrap_p_value",
    "compare_correlations",
    "complete_pairs",
    "correlation",
    "correlations_many",
    "default_pass_threshold",
    "delong_auc",
    "expanded_confidence",
    "fisher_ci",
    "fisher_ci_width",
    "jackknife_ci_many",
    "jackknife_differences_many",
    "kendall",
    "kendall_tie_factor",
    "n_needed_to_separate",
    "near_constant",
    "pair_mean_labels",
    "pass_fail",
    "pass_fail_many",
    "pearson",
    "ppi_mean",
    "preference_agreement",
    "spearman",
    "steiger_z",
    "system_level",
    "warm_up",
    "williams_t",
    "zou_ci",
]

# pingouin.intraclass_corr switches pingouin's global rounding options off and back on around its ANOVA
# (pingouin.config._no_rounding: copy, clear, restore). Two threads inside it at once interleave the copy
# and the restore, and the process keeps rounding off for good; reports run in threads, so every call into
# it holds this lock.
_PINGOUIN_LOCK = threading.Lock()

# Values closer than this (relative to the largest magnitude, floor 1) count as equal: scores such as
# 0.1 + 0.2 and 0.3 must not produce a spurious correlation out of rounding noise.
CONSTANT_RTOL = 1e-9
# A metric whose complete values differ from its most common value in fewer than this many items is
# near-constant: its correlation with anything is decided by one or two items, so reports refuse it.
NEAR_CONSTANT_MIN_OFF_MODE = 3
# Bootstrap resamples whose variance is below this fraction of the sample's squared spread are treated as
# constant: the moment formulas cannot tell such a resample from rounding noise.
_RESAMPLE_VAR_RTOL = 1e-12
# Krippendorff's alpha CI is refused when more resamples than this were undefined (a single rating value).
_ALPHA_MAX_UNDEFINED_FRACTION = 0.05
# Up to this many items, Kendall's resample statistic uses an n x n sign matrix (16 MB at the limit) and one
# matrix product; above it, an O(n log^2 n) merge whose cost does not grow with n^2.
_KENDALL_DENSE_MAX_N = 2000
# Resamples are drawn and evaluated in blocks of about this many index entries: small enough for the
# per-block arrays to stay near the CPU caches, large enough for BLAS. Results do not depend on it.
_DEFAULT_CHUNK_ELEMENTS = 500_000


# --------------------------------------------------------------------------------------------------- results


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


@dataclass(frozen=True, slots=True)
class DifferenceTest:
    """A test statistic with its two-sided p-value (``df`` None for z statistics)."""

    statistic: float
    p_value: float
    df: int | None = None


@dataclass(frozen=True, slots=True)
class DependentComparison:
    """r(a, human) - r(b, human) on the same items, with the tests of STATS.md section 3."""

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


@dataclass(frozen=True, slots=True)
class AlphaResult:
    """Krippendorff's alpha at one level of measurement, with an item-bootstrap percentile interval (ordinal
    level only: the others report n_resamples = n_resamples_undefined = 0)."""

    level: AlphaLevel
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    n_resamples: int
    n_resamples_undefined: int
    undefined_reason: str | None = None
    ci_undefined_reason: str | None = None


@dataclass(frozen=True, slots=True)
class IccResult:
    """One intraclass correlation from pingouin, with pingouin's interval at full precision (pingouin itself
    rounds it to 2 decimals)."""

    kind: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    f_statistic: float | None
    df1: int
    df2: int
    p_value: float | None


@dataclass(frozen=True, slots=True)
class RaterPair:
    """Agreement of two raters on the items both rated."""

    rater_a: str
    rater_b: str
    n_items: int
    exact_count: int
    exact: float | None
    within_one_count: int
    within_one: float | None
    pearson: CorrelationResult
    spearman: CorrelationResult


@dataclass(frozen=True, slots=True)
class AgreementResult:
    """Inter-rater agreement of a raters x items matrix (STATS.md section 5)."""

    rater_names: tuple[str, ...]
    scale_min: int
    scale_max: int
    n_items: int
    n_items_used: int
    n_items_excluded: int
    exclusion_reason: str | None
    alpha: dict[str, AlphaResult]
    icc: dict[str, IccResult]
    icc_n_items: int
    icc_n_items_excluded: int
    icc_exclusion_reason: str | None
    icc_undefined_reason: str | None
    kappa_quadratic: float | None
    kappa_undefined_reason: str | None
    pairs: tuple[RaterPair, ...]
    attenuation_ceiling: float | None


@dataclass(frozen=True, slots=True)
class PreferenceResult:
    """Metric deltas against per-pair mean preference labels (STATS.md section 6)."""

    n_pairs: int
    n_delta_missing: int
    n_delta_imputed: int
    pearson: CorrelationResult
    spearman: CorrelationResult
    kendall: CorrelationResult
    sign_correct: int
    sign_total: int
    sign_accuracy: float | None
    n_human_ties: int


@dataclass(frozen=True, slots=True)
class SystemLevelResult:
    """Agreement of per-system metric means with per-system human means."""

    n_systems: int
    kendall: CorrelationResult
    spearman: CorrelationResult
    pearson: CorrelationResult
    pairwise_correct: int
    pairwise_total: int
    pairwise_accuracy: float | None
    n_human_ties: int


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


# ---------------------------------------------------------------------------------------------------- inputs


def _as_vector(values: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _complete(*arrays: FloatArray) -> tuple[list[FloatArray], int]:
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
    (xc, yc), dropped = _complete(_as_vector(x, "x"), _as_vector(y, "y"))
    return xc, yc, dropped


def _tolerance(x: FloatArray) -> float:
    return CONSTANT_RTOL * max(1.0, float(np.max(np.abs(x)))) if x.size else 0.0


def _is_constant(x: FloatArray) -> bool:
    return x.size == 0 or float(np.ptp(x)) <= _tolerance(x)


def near_constant(x: ArrayLike, *, min_off_mode: int = NEAR_CONSTANT_MIN_OFF_MODE) -> bool:
    """Whether a metric's scores are too close to constant to report a correlation.

    True when fewer than ``min_off_mode`` (default 3) of the finite values differ from the most common value,
    values within ``CONSTANT_RTOL`` (1e-9, relative to the largest magnitude, floor 1) counting as equal. Such
    a correlation is decided by one or two items. Missing values are ignored; an empty input is near-constant.
    """
    arr = _as_vector(x, "x")
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return True
    values, counts = np.unique(arr, return_counts=True)
    mode = values[int(np.argmax(counts))]
    off_mode = int(np.count_nonzero(np.abs(arr - mode) > _tolerance(arr)))
    return off_mode < min_off_mode


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _z(confidence: float) -> float:
    return float(ndtri(0.5 + confidence / 2.0))


# ------------------------------------------------------------------------------------ Fisher-type intervals


def _atanh_ci(r: float, se: float, confidence: float) -> tuple[float, float]:
    z = math.atanh(r)
    half = _z(confidence) * se
    return math.tanh(z - half), math.tanh(z + half)


def fisher_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher interval tanh(atanh r +- z/sqrt(n-3)) for a Pearson r.

    Returns (-1, 1) when n <= 3 (no information). Raises ValueError when |r| >= 1 (the interval degenerates)
    or the confidence is outside (0, 1).
    """
    _check_confidence(confidence)
    if not -1.0 < r < 1.0:
        raise ValueError(f"the Fisher interval needs |r| < 1, got {r}")
    if n <= 3:
        return -1.0, 1.0
    return _atanh_ci(r, 1.0 / math.sqrt(n - 3), confidence)


def fisher_ci_width(r: float, n: int, confidence: float = 0.95) -> float:
    """Width of the Fisher interval for r at n items (STATS.md section 8); same failure modes as fisher_ci."""
    low, high = fisher_ci(r, n, confidence)
    return high - low


# ----------------------------------------------------------------------------------- analytic correlations


def _undefined_reason(x: FloatArray, y: FloatArray, min_n: int = 3) -> str | None:
    if x.size < min_n:
        return f"fewer than {min_n} complete pairs (n = {x.size})"
    const_x, const_y = _is_constant(x), _is_constant(y)
    if const_x and const_y:
        return "constant input (both x and y)"
    if const_x:
        return "constant input (x)"
    if const_y:
        return "constant input (y)"
    return None


def _reference_statistic(method: CorrMethod, x: FloatArray, y: FloatArray) -> tuple[float, float]:
    # The scipy functions are the reference the bootstrap must reproduce; callers rule out constant input.
    if method == "pearson":
        res = sps.pearsonr(x, y)
    elif method == "spearman":
        res = sps.spearmanr(x, y)
    else:
        res = sps.kendalltau(x, y)
    return float(res.statistic), float(res.pvalue)


def _reference_or_nan(method: CorrMethod, x: FloatArray, y: FloatArray) -> float:
    if float(np.ptp(x)) == 0.0 or float(np.ptp(y)) == 0.0:
        return math.nan
    return _reference_statistic(method, x, y)[0]


def _tie_pairs_of(x: FloatArray) -> int:
    _, sizes = np.unique(x, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


def kendall_tie_factor(x: ArrayLike, y: ArrayLike) -> float:
    """n0 / sqrt((n0 - n1)(n0 - n2)) on complete pairs: how much ties inflate tau-b over tau-a.

    n0 = n(n - 1)/2; n1, n2 = sum t(t - 1)/2 over the tie groups of x and of y. 1 without ties. Multiplying
    the Fieller SE of atanh(tau-b) by it restores 95% coverage on tied ratings (STATS.md section 2, and
    bench/coverage.py). Raises ValueError when either variable is constant (tau-b is undefined).
    """
    xc, yc, _ = complete_pairs(x, y)
    n0 = xc.size * (xc.size - 1) // 2
    n1, n2 = _tie_pairs_of(xc), _tie_pairs_of(yc)
    if n0 == 0 or n1 == n0 or n2 == n0:
        raise ValueError("tau-b is undefined: fewer than 2 pairs or a constant variable")
    return n0 / math.sqrt((n0 - n1) * (n0 - n2))


def _atanh_se(
    method: CorrMethod, ci_method: str, r: float, n: int, x: FloatArray, y: FloatArray
) -> float | None:
    """Standard error of atanh(r) (STATS.md sections 1-2); None when n is too small for the formula."""
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
    _check_confidence(confidence)
    xc, yc, dropped = complete_pairs(x, y)
    n = xc.size
    reason = _undefined_reason(xc, yc)
    if reason is not None:
        return CorrelationResult(
            method, None, None, None, None, n, None, reason, dropped, confidence, "correlation undefined"
        )
    estimate, p_value = _reference_statistic(method, xc, yc)
    se = _atanh_se(method, ci_method, estimate, n, xc, yc)
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
        ci_low, ci_high = _atanh_ci(estimate, se, confidence)
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
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


# -------------------------------------------------------------------------------- ranks, ties, dominance


@dataclass(frozen=True, slots=True)
class _Ties:
    order: IntArray  # stable argsort of the values
    starts: IntArray  # first sorted position of each tie group
    group: IntArray  # tie group (dense rank, 0-based) of each item
    sizes: IntArray  # size of each tie group

    @property
    def has_ties(self) -> bool:
        return self.sizes.size < self.group.size


def _ties(x: FloatArray) -> _Ties:
    n = x.size
    order = np.argsort(x, kind="stable").astype(np.int64)
    xs = x[order]
    first = np.ones(n, dtype=np.bool_)
    first[1:] = xs[1:] != xs[:-1]
    starts = np.flatnonzero(first).astype(np.int64)
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(first) - 1
    sizes = np.diff(np.append(starts, n)).astype(np.int64)
    return _Ties(order, starts, group, sizes)


def _doubled_midranks(t: _Ties) -> FloatArray:
    # Twice the 1-based average rank is an integer, which keeps every rank sum exact in float64.
    return (2 * t.starts[t.group] + t.sizes[t.group] + 1).astype(np.float64)


def _signed_sums(t: _Ties, c: FloatArray) -> FloatArray:
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


def _lower_left(xr: IntArray, yr: IntArray, w: IntArray) -> tuple[IntArray, IntArray]:
    """Per position of the (x asc, y desc) order: weight of items strictly below in both x and y."""
    # Sorting ties in x by descending y keeps pairs tied in x out of the strict count.
    order = np.lexsort((-yr, xr)).astype(np.int64)
    return order, _dominance(yr[order], w[:, order])


def _concordance_per_item(xr: IntArray, yr: IntArray) -> FloatArray:
    """K_i = sum_j sign(x_j - x_i) * sign(y_j - y_i) for every item i (integer valued), from the dense ranks
    (tie groups) of x and y; compiled (services.stats_kernels), equal to _concordance_per_item_numpy."""
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


def _concordance_per_item_numpy(xr: IntArray, yr: IntArray) -> FloatArray:
    """K_i = sum_j sign(x_j - x_i) * sign(y_j - y_i) for every item i (integer valued)."""
    n = xr.size
    ones = np.ones((1, n), dtype=np.int64)
    xf, yf = int(xr.max()) - xr, int(yr.max()) - yr
    k = np.zeros(n, dtype=np.int64)
    for a, b, sign in ((xr, yr, 1), (xf, yf, 1), (xr, yf, -1), (xf, yr, -1)):
        order, d = _lower_left(a, b, ones)
        k[order] += sign * d[0]
    return k.astype(np.float64)


# ---------------------------------------------------------------------------------------- bootstrap kernels


class _Kernel(Protocol):
    """Statistics of M metrics against one human vector, evaluated on many resamples at once."""

    n_stats: int

    def resample(self, counts: IntArray) -> FloatArray:
        """(rows, M) statistic for each resample given as per-item counts; NaN where undefined."""
        ...

    def exact(self, idx: IntArray, j: int) -> float:
        """The reference (scipy) statistic of metric j on one resample given by its item indices."""
        ...

    def jackknife(self) -> FloatArray:
        """(M, n) leave-one-item-out statistics."""
        ...


class _CorrelationKernel:
    def __init__(self, method: CorrMethod, metrics: FloatArray, human: FloatArray) -> None:
        self.method: CorrMethod = method
        self.x = metrics
        self.h = human
        self.n_stats = metrics.shape[0]

    def exact(self, idx: IntArray, j: int) -> float:
        return _reference_or_nan(self.method, self.x[j, idx], self.h[idx])


class _PearsonKernel(_CorrelationKernel):
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

    def resample(self, counts: IntArray) -> FloatArray:
        m = self.n_stats
        # Items drawn per resample: n for an item bootstrap, varying when whole clusters are drawn.
        n = counts.sum(axis=1, keepdims=True).astype(np.float64)
        s = counts.astype(np.float64) @ self.design
        sh, shh = s[:, 3 * m : 3 * m + 1], s[:, 3 * m + 1 : 3 * m + 2]
        return self._r(s[:, :m], s[:, m : 2 * m], s[:, 2 * m : 3 * m], sh, shh, n, self.floor_x)

    def jackknife(self) -> FloatArray:
        xc, hc, m = self.xc, self.hc, self.h.size - 1
        sx = xc.sum(axis=1, keepdims=True) - xc
        sh = hc.sum() - hc
        sxx = (xc**2).sum(axis=1, keepdims=True) - xc**2
        shh = (hc**2).sum() - hc**2
        sxy = (xc * hc).sum(axis=1, keepdims=True) - xc * hc
        return self._r(sx, sxx, sxy, sh, shh, m, self.floor_x[:, None])


def _doubled_group_ranks(t: _Ties, counts: IntArray) -> tuple[IntArray, IntArray]:
    """Per resample: twice the midrank of each tie group, and sum of w * (2 rank)^2."""
    weights = counts[:, t.order]
    if t.has_ties:
        weights = np.add.reduceat(weights, t.starts, axis=1)
    ranks2 = 2 * np.cumsum(weights, axis=1) - weights + 1
    return ranks2, np.einsum("ij,ij,ij->i", weights, ranks2, ranks2)


def _sorted_layout(ties: list[_Ties], human: _Ties) -> tuple[IntArray, NDArray[np.bool_], IntArray]:
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


class _RankKernel(_CorrelationKernel):
    """Spearman or Kendall: tie groups of every metric and of the human score, laid out for the compiled
    per-resample kernel ``stats_kernels.<method>_rows``."""

    def __init__(self, method: CorrMethod, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__(method, metrics, human)
        self.x_ties = [_ties(row) for row in metrics]
        self.h_ties = _ties(human)
        self.layout = _sorted_layout(self.x_ties, self.h_ties)

    def resample(self, counts: IntArray) -> FloatArray:
        out = np.empty((counts.shape[0], self.n_stats))
        h = self.h_ties
        orders, last, levels = self.layout
        from services import stats_kernels  # numba: imported on first use

        rows = stats_kernels.spearman_rows if self.method == "spearman" else stats_kernels.kendall_rows
        stats_kernels.in_threads(
            rows, np.ascontiguousarray(counts), h.group, h.sizes.size, orders, last, levels, out
        )
        return out


class _SpearmanKernel(_RankKernel):
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

    def jackknife(self) -> FloatArray:
        return np.vstack([_spearman_jackknife(t, self.h_ties) for t in self.x_ties])


def _spearman_jackknife(tx: _Ties, th: _Ties) -> FloatArray:
    # Leaving item i out lowers the doubled rank of item j by 1 + sign(x_j - x_i); expanding the rank sums
    # gives every leave-one-out rho from a few O(n log n) sums (all integer valued, so exact in float64).
    n = tx.group.size
    m = n - 1
    a = _doubled_midranks(tx) - 1.0
    b = _doubled_midranks(th) - 1.0
    k = _concordance_per_item(tx.group, th.group)
    sxy = float((a * b).sum()) - a * b - _signed_sums(th, a) - _signed_sums(tx, b) + k
    sxx = float((a * a).sum()) - a * a - 2.0 * _signed_sums(tx, a) + (n - tx.sizes[tx.group])
    shh = float((b * b).sum()) - b * b - 2.0 * _signed_sums(th, b) + (n - th.sizes[th.group])
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


class _KendallKernel(_RankKernel):
    def __init__(self, metrics: FloatArray, human: FloatArray) -> None:
        super().__init__("kendall", metrics, human)

    @staticmethod
    def _tie_pairs(t: _Ties, counts: IntArray) -> FloatArray:
        weights = counts[:, t.order]
        if t.has_ties:
            weights = np.add.reduceat(weights, t.starts, axis=1)
        return np.asarray((weights * (weights - 1) // 2).sum(axis=1), dtype=np.float64)

    def _concordance_dense(self, t: _Ties, counts: IntArray) -> FloatArray:
        # C - D = 1/2 w' S w with S_ij = sign(x_i - x_j) sign(h_i - h_j): one matrix product for all
        # resamples. Every partial sum is an integer of magnitude <= n, so float32 is exact (n < 2**24).
        xr, hr = t.group.astype(np.int32), self.h_ties.group.astype(np.int32)
        signs = np.multiply(
            np.sign(np.subtract.outer(xr, xr)), np.sign(np.subtract.outer(hr, hr)), dtype=np.float32
        )
        weighted = (counts.astype(np.float32) @ signs).astype(np.float64)
        return np.asarray(0.5 * np.einsum("ij,ij->i", weighted, counts.astype(np.float64)), dtype=np.float64)

    def _concordance_merge(self, t: _Ties, counts: IntArray) -> FloatArray:
        hr = self.h_ties.group
        order_c, dom_c = _lower_left(t.group, hr, counts)
        order_d, dom_d = _lower_left(t.group, int(hr.max()) - hr, counts)
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

    def jackknife(self) -> FloatArray:
        n = self.h.size
        m = n - 1
        tot = float(m * (m - 1) // 2)
        th = self.h_ties
        ytie = float((th.sizes * (th.sizes - 1) // 2).sum()) - (th.sizes[th.group] - 1)
        rows = []
        for t in self.x_ties:
            k = _concordance_per_item(t.group, th.group)
            xtie = float((t.sizes * (t.sizes - 1) // 2).sum()) - (t.sizes[t.group] - 1)
            rows.append(_tau_b(k.sum() / 2.0 - k, tot, xtie.astype(np.float64), ytie.astype(np.float64)))
        return np.vstack(rows)


class _DifferenceKernel:
    """r(ref, h) - r(other_j, h) for every other metric, from one kernel over [ref, others...]."""

    def __init__(self, inner: _Kernel) -> None:
        self.inner = inner
        self.n_stats = inner.n_stats - 1

    def resample(self, counts: IntArray) -> FloatArray:
        v = self.inner.resample(counts)
        return v[:, :1] - v[:, 1:]

    def exact(self, idx: IntArray, j: int) -> float:
        return self.inner.exact(idx, 0) - self.inner.exact(idx, j + 1)

    def jackknife(self) -> FloatArray:
        v = self.inner.jackknife()
        return v[:1] - v[1:]


_KERNELS: dict[str, type[_PearsonKernel] | type[_SpearmanKernel] | type[_KendallKernel]] = {
    "pearson": _PearsonKernel,
    "spearman": _SpearmanKernel,
    "kendall": _KendallKernel,
}


def _kernel(method: CorrMethod, metrics: FloatArray, human: FloatArray) -> _Kernel:
    if method not in _KERNELS:
        raise ValueError(f"unknown correlation method {method!r}")
    return _KERNELS[method](metrics, human)


# ----------------------------------------------------------------------------------------- bootstrap engine


@dataclass(frozen=True, slots=True)
class _Units:
    """What a resample draws: the n items (``codes`` None) or q whole clusters of items."""

    n: int
    q: int
    codes: IntArray | None  # cluster (0..q-1) of each item when clustered

    @property
    def clustered(self) -> bool:
        return self.codes is not None


def _units(clusters: ArrayLike | None, keep: NDArray[np.bool_]) -> _Units:
    """Resampling units of the kept items: clusters with more than one kept item make a cluster bootstrap."""
    n = int(keep.sum())
    if clusters is None:
        return _Units(n, n, None)
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
    return _Units(n, q, None) if q == n else _Units(n, q, codes)


def _resample_counts(idx: IntArray, size: int | None = None) -> IntArray:
    rows, n = idx.shape
    size = n if size is None else size
    flat = idx + (np.arange(rows, dtype=np.int64) * size)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * size).reshape(rows, size).astype(np.int64, copy=False)


def _bootstrap_distribution(
    kernel: _Kernel, units: _Units, n_resamples: int, seed: int, chunk_elements: int
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
        drawn = _resample_counts(idx)
        counts = drawn if units.codes is None else drawn[:, units.codes]
        values = kernel.resample(counts)
        # A resample that is a permutation of the data equals the estimate in exact arithmetic; whether it
        # lands just below or above depends on rounding, so take scipy's own value for it.
        for r in np.flatnonzero(drawn.max(axis=1) == 1):
            for j in range(kernel.n_stats):
                values[r, j] = kernel.exact(idx[r] if units.codes is None else everything, j)
        out[:, start : start + rows] = values.T
    return out


def _jackknife(kernel: _Kernel, units: _Units, chunk_elements: int) -> FloatArray:
    """(M, q) leave-one-unit-out statistics: items (closed forms) or whole clusters (through resample)."""
    if units.codes is None:
        return kernel.jackknife()
    out = np.empty((kernel.n_stats, units.q))
    rows_per_chunk = max(1, chunk_elements // units.n)
    for start in range(0, units.q, rows_per_chunk):
        left_out = np.arange(start, min(units.q, start + rows_per_chunk))
        counts = (units.codes[None, :] != left_out[:, None]).astype(np.int64)
        out[:, left_out] = kernel.resample(counts).T
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
    z0 = float(ndtri(percentile))
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


def _interval(
    tb: FloatArray, theta_hat: float, jack: FloatArray | None, confidence: float
) -> tuple[float, float] | str:
    """Percentile (jack None) or BCa limits, following scipy's _bca_interval operation for operation.

    Returns the reason instead when the interval is undefined (scipy would return NaN there).
    """
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
        z_alpha = float(ndtri(alpha))
        num1, num2 = z0 + z_alpha, z0 - z_alpha
        probs = np.array([ndtr(z0 + num1 / (1 - a_hat * num1)), ndtr(z0 + num2 / (1 - a_hat * num2))])
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
    values = _as_vector(tb, "tb")
    if _degenerate(values, theta_hat) is not None:
        return None
    n_resamples = values.size
    below = int(np.count_nonzero(values < null) + np.count_nonzero(values <= null))
    if below in (0, 2 * n_resamples):
        # Every limit at every level lies among the resamples, so every interval leaves the null out; the
        # BCa map of a clamped position would give a p that contradicts it.
        return 1.0 / n_resamples
    position = min(max(below / (2 * n_resamples), 0.5 / n_resamples), 1 - 0.5 / n_resamples)
    z = float(ndtri(position))
    if jack is not None:
        bca = _bca_constants(values, theta_hat, _as_vector(jack, "jack"))
        if isinstance(bca, str):
            return None
        # BCa maps a level z_alpha to the quantile Phi(z0 + u / (1 - a u)), u = z0 + z_alpha; solve for the
        # level whose limit is the null.
        d = z - bca.z0
        if 1 + bca.a_hat * d <= 0:
            return None
        z = d / (1 + bca.a_hat * d) - bca.z0
    return float(min(1.0, 2 * min(ndtr(z), ndtr(-z))))


def _intervals(
    theta_hat: FloatArray,
    theta_b: FloatArray,
    jack: FloatArray | None,
    kind: BootstrapKind,
    confidence: float,
    seed: int,
    units: _Units,
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
            limits = _interval(theta_b[j], float(theta_hat[j]), jj, confidence if level is None else level)
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
    _check_confidence(confidence)
    if units < 2:
        raise ValueError(f"need at least 2 units to expand an interval, got {units}")
    t = float(sps.t.ppf(0.5 + confidence / 2, units - 1))
    return float(2 * ndtr(math.sqrt(units / (units - 1)) * t) - 1)


def _expanded_p(p: float, units: int) -> float:
    """The p of an expanded interval from the p of the plain one: the nominal 1 - confidence at which the
    expanded interval's limit reaches the null (the plain interval's limit there is at level 1 - p). Not
    for the floor p = 1/n_resamples of a null beyond every resample, which every interval excludes."""
    z = float(ndtri(1 - p / 2))
    return float(min(1.0, 2 * sps.t.sf(z / math.sqrt(units / (units - 1)), units - 1)))


def _check_bootstrap_args(kind: str, n_resamples: int, confidence: float) -> None:
    _check_confidence(confidence)
    if kind not in ("bca", "percentile"):
        raise ValueError(f"unknown bootstrap interval {kind!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")


def _undefined_ci(
    kind: BootstrapKind, n_resamples: int, seed: int, confidence: float, n: int, reason: str
) -> BootstrapCI:
    return BootstrapCI(None, None, kind, n_resamples, seed, confidence, n, reason)


def _min_units_reason(units: _Units, min_n: int = 3) -> str | None:
    if units.clustered and units.q < min_n:
        return f"fewer than {min_n} distinct clusters (questions) to resample (q = {units.q})"
    return None


def _bootstrap_patterns(
    patterns: Mapping[bytes, list[str]],
    build: Callable[[NDArray[np.bool_], list[str]], tuple[_Kernel, FloatArray]],
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
        units = _units(clusters, keep)
        kernel, theta_hat = build(keep, names)
        theta_b = _bootstrap_distribution(kernel, units, n_resamples, seed, chunk_elements)
        jack = _jackknife(kernel, units, chunk_elements) if ci_method == "bca" else None
        results = _intervals(theta_hat, theta_b, jack, ci_method, confidence, seed, units, expand)
        out.update(zip(names, results, strict=True))
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
        reason = _undefined_reason(x[keep], h_all[keep]) or _min_units_reason(_units(clusters, keep))
        if reason is not None:
            undefined[name] = (int(keep.sum()), reason)
        else:
            patterns.setdefault(keep.tobytes(), []).append(name)
    return patterns, undefined


def _jackknife_se(values: FloatArray) -> float:
    """The jackknife standard error from the G leave-one-out values: sqrt((G - 1) / G * sum((v - mean)^2))."""
    g = values.size
    return math.sqrt((g - 1) / g * float(np.sum((values - values.mean()) ** 2)))


def _jackknife_t(
    estimate: float, jack: FloatArray, confidence: float
) -> tuple[float, float, float, float] | str:
    """(low, high, se, p) of the jackknife-t interval on Fisher's z, or why it is undefined."""
    if not np.isfinite(jack).all():
        return "statistic undefined when leaving one unit out (jackknife)"
    if abs(estimate) >= 1.0 or bool((np.abs(jack) >= 1.0).any()):
        return "a perfect correlation (|r| = 1) has no interval on Fisher's z"
    g = jack.size
    z = np.arctanh(jack)
    se = _jackknife_se(z)
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
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
    _check_confidence(confidence)
    h_all = _as_vector(human, "human")
    arrays = {name: _as_vector(x, name) for name, x in metrics.items()}
    patterns, undefined = _missing_patterns(arrays, h_all, clusters)
    out = {
        name: JackknifeCI(None, None, None, 0, confidence, n, None, None, why)
        for name, (n, why) in undefined.items()
    }
    for key, names in patterns.items():
        keep = np.frombuffer(key, dtype=np.bool_)
        units = _units(clusters, keep)
        h = h_all[keep]
        x = np.vstack([arrays[name][keep] for name in names])
        jack = _jackknife(_kernel(method, x, h), units, chunk_elements)
        n_clusters = units.q if units.clustered else None
        for j, name in enumerate(names):
            estimate = _reference_statistic(method, x[j], h)[0]
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
    clusters: ArrayLike | None = None,
    expand: bool = False,
) -> dict[str, BootstrapCI]:
    """Paired bootstrap intervals of corr(metric, human) for many metrics sharing one resample index matrix.

    Each metric's interval equals ``scipy.stats.bootstrap((x, h), stat, paired=True, method=...,
    n_resamples=n_resamples, rng=np.random.default_rng(seed))`` on its complete pairs. Metrics with the same
    missing-value pattern share the index matrix; each pattern is drawn with the same seed. Memory stays at a
    few blocks of ``chunk_elements`` entries.

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
    _check_bootstrap_args(ci_method, n_resamples, confidence)
    h_all = _as_vector(human, "human")
    arrays = {name: _as_vector(x, name) for name, x in metrics.items()}
    patterns, undefined = _missing_patterns(arrays, h_all, clusters)
    out = {
        name: _undefined_ci(ci_method, n_resamples, seed, confidence, n, reason)
        for name, (n, reason) in undefined.items()
    }

    def build(keep: NDArray[np.bool_], names: list[str]) -> tuple[_Kernel, FloatArray]:
        h = h_all[keep]
        x = np.vstack([arrays[name][keep] for name in names])
        theta_hat = np.array([_reference_statistic(method, row, h)[0] for row in x])
        return _kernel(method, x, h), theta_hat

    out |= _bootstrap_patterns(
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
    clusters: ArrayLike | None = None,
) -> dict[str, BootstrapCI]:
    """Paired bootstrap intervals of corr(reference, human) - corr(other, human) for every other metric.

    Each difference uses the items where the reference, that metric and the human score are all present,
    and equals ``scipy.stats.bootstrap((ref, other, human), lambda a, b, h: r(a, h) - r(b, h), paired=True,
    ...)`` with the same seed there. Metrics with the same missing-value pattern share the index matrix.
    ``clusters`` and the undefined cases as in ``bootstrap_ci_many``; each interval carries the p-value of
    "no difference" by inverting it.
    """
    _check_bootstrap_args(ci_method, n_resamples, confidence)
    patterns, undefined, build = _difference_patterns(reference, others, human, method, clusters)
    out = {
        name: _undefined_ci(ci_method, n_resamples, seed, confidence, n, reason)
        for name, (n, reason) in undefined.items()
    }
    out |= _bootstrap_patterns(
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
    Callable[[NDArray[np.bool_], list[str]], tuple[_Kernel, FloatArray]],
]:
    """The other metrics grouped by the items where the reference, the metric and the human score are all
    present (key: that mask as bytes); those whose difference is undefined, name -> (items, reason); and
    ``build(keep, names)``: the kernel of r(reference, h) - r(other, h) for a group with its estimates."""
    ref_all = _as_vector(reference, "reference")
    h_all = _as_vector(human, "human")
    if ref_all.size != h_all.size:
        raise ValueError(f"reference has {ref_all.size} values, human has {h_all.size}")
    patterns: dict[bytes, list[str]] = {}
    undefined: dict[str, tuple[int, str]] = {}
    arrays = {name: _as_vector(x, name) for name, x in others.items()}
    for name, x in arrays.items():
        if x.size != h_all.size:
            raise ValueError(f"{name} has {x.size} values, human has {h_all.size}")
        keep = np.isfinite(x) & np.isfinite(h_all) & np.isfinite(ref_all)
        reason = (
            _undefined_reason(ref_all[keep], h_all[keep])
            or _undefined_reason(x[keep], h_all[keep])
            or _min_units_reason(_units(clusters, keep))
        )
        if reason is not None:
            undefined[name] = (int(keep.sum()), reason)
        else:
            patterns.setdefault(keep.tobytes(), []).append(name)

    def build(keep: NDArray[np.bool_], names: list[str]) -> tuple[_Kernel, FloatArray]:
        h, ref = h_all[keep], ref_all[keep]
        x = np.vstack([ref, *(arrays[name][keep] for name in names)])
        r_ref = _reference_statistic(method, ref, h)[0]
        theta_hat = np.array([r_ref - _reference_statistic(method, row, h)[0] for row in x[1:]])
        return _DifferenceKernel(_kernel(method, x, h)), theta_hat

    return patterns, undefined, build


def jackknife_differences_many(
    reference: ArrayLike,
    others: Mapping[str, ArrayLike],
    human: ArrayLike,
    method: CorrMethod = "pearson",
    *,
    confidence: float = 0.95,
    clusters: ArrayLike | None = None,
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
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
    _check_confidence(confidence)
    patterns, undefined, build = _difference_patterns(reference, others, human, method, clusters)
    out = {
        name: JackknifeCI(None, None, None, 0, confidence, n, None, None, why)
        for name, (n, why) in undefined.items()
    }
    for key, names in patterns.items():
        keep = np.frombuffer(key, dtype=np.bool_)
        units = _units(clusters, keep)
        kernel, theta_hat = build(keep, names)
        jack = _jackknife(kernel, units, chunk_elements)
        n_clusters = units.q if units.clustered else None
        g = units.q
        t = float(sps.t.ppf(0.5 + confidence / 2, g - 1))
        for j, name in enumerate(names):
            d = float(theta_hat[j])
            row = jack[j]
            why = None
            if not np.isfinite(row).all():
                why = "statistic undefined when leaving one unit out (jackknife)"
            else:
                se = _jackknife_se(row)
                if se <= 0.0:
                    why = "degenerate jackknife: every leave-one-out difference is equal"
            if why is not None:
                out[name] = JackknifeCI(
                    None, None, None, g - 1, confidence, units.n, n_clusters, None, why, d
                )
                continue
            p = float(2 * sps.t.sf(abs(d) / se, g - 1))
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
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


# ------------------------------------------------------------------ dependent correlations (STATS.md §3)


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
    return DifferenceTest(t, float(2 * sps.t.sf(abs(t), df)), df)


def steiger_z(r12: float, r13: float, r23: float, n: int) -> DifferenceTest:
    """Steiger's Z (pooled r-bar) for r12 vs r13 sharing variable 1, two-sided normal p.

    Raises ValueError for n < 4 or |r| >= 1.
    """
    _check_rs(n, 4, r12, r13, r23)
    rbar = (r12 + r13) / 2
    c = (r23 * (1 - 2 * rbar**2) - 0.5 * rbar**2 * (1 - 2 * rbar**2 - r23**2)) / (1 - rbar**2) ** 2
    z = (math.atanh(r12) - math.atanh(r13)) * math.sqrt(n - 3) / math.sqrt(2 - 2 * c)
    return DifferenceTest(z, float(2 * sps.norm.sf(abs(z))))


def _zou_c(r12: float, r13: float, r23: float) -> float:
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
    c = _zou_c(r12, r13, r23)
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
    r_a = _reference_statistic(method, a, human)[0]
    r_b = _reference_statistic(method, b, human)[0]
    r_ab = _reference_statistic(method, a, b)[0]
    n = human.size
    _check_rs(n, 5 if method == "kendall" else 4, r_a, r_b, r_ab)
    se_a = _atanh_se(method, ci_kind, r_a, n, a, human)
    se_b = _atanh_se(method, ci_kind, r_b, n, b, human)
    if se_a is None or se_b is None:
        raise ValueError(f"n = {n} is too small for the {ci_kind} SE")
    c = _zou_c(r_a, r_b, r_ab)
    ci = mover_ci(r_a, _atanh_ci(r_a, se_a, confidence), r_b, _atanh_ci(r_b, se_b, confidence), c)
    var = se_a**2 + se_b**2 - 2 * c * se_a * se_b
    if var <= 0:
        raise ValueError("the two coefficients' estimates are perfectly correlated")
    z = (math.atanh(r_a) - math.atanh(r_b)) / math.sqrt(var)
    return ci, DifferenceTest(z, float(2 * sps.norm.sf(abs(z))))


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
    _check_confidence(confidence)
    (av, bv, hv), dropped = _complete(_as_vector(a, "a"), _as_vector(b, "b"), _as_vector(human, "human"))
    n = hv.size
    reason = _undefined_reason(av, hv, 4) or _undefined_reason(bv, hv, 4)
    if reason is not None:
        return DependentComparison(
            method, n, dropped, None, None, None, None, None, None, None, None, None, reason
        )
    r_a = _reference_statistic(method, av, hv)[0]
    r_b = _reference_statistic(method, bv, hv)[0]
    r_ab = _reference_statistic(method, av, bv)[0]
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
        # as multipletests(method='holm' / 'fdr_bh'), checked against STATS.md section 4.
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


# -------------------------------------------------------------------------------- inter-rater agreement (§5)


def _alpha_value(data: FloatArray, level: AlphaLevel, domain: list[float]) -> float | None:
    import krippendorff

    values = data[np.isfinite(data)]
    if values.size == 0 or float(np.ptp(values)) == 0.0:
        return None
    # reliability_data is raters x items: the transpose silently gives another number (STATS.md §5).
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def ordinal_alpha_resamples(data: FloatArray, domain: list[float], idx: np.ndarray) -> FloatArray:
    """Ordinal Krippendorff's alpha of every item resample ``data[:, idx[b]]`` at once (NaN where alpha is
    undefined: one value only), equal to ``krippendorff.alpha(..., level_of_measurement="ordinal",
    value_domain=domain)`` on each resample.

    The coincidence matrix of a resample is the sum of its items' own coincidence matrices, weighted by how
    often each item was drawn, so every resample is one row of a matrix product; the ordinal distances
    depend on the resample's value counts and are computed for all resamples together.
    """
    n_items = data.shape[1]
    dom = np.asarray(domain, dtype=float)
    v = dom.size
    # Value counts per item (items x values), then each item's coincidences (items x V*V).
    counts = np.stack([(data == value).sum(axis=0) for value in dom], axis=1).astype(float)
    pairable = np.maximum(counts.sum(axis=1), 2.0)
    per_item = counts[:, :, None] * counts[:, None, :]
    per_item[:, np.arange(v), np.arange(v)] -= counts
    per_item = (per_item / (pairable - 1)[:, None, None]).reshape(n_items, v * v)
    out = np.empty(idx.shape[0])
    lo, hi = np.triu_indices(v)
    for start in range(0, idx.shape[0], 200):  # bounded memory: 200 resamples x items weights at a time
        block = idx[start : start + 200]
        b = block.shape[0]
        flat = (np.arange(b)[:, None] * n_items + block).ravel()
        weights = np.bincount(flat, minlength=b * n_items).reshape(b, n_items).astype(float)
        o = (weights @ per_item).reshape(b, v, v)
        n_v = o.sum(axis=1)
        n = n_v.sum(axis=1)
        cum = np.concatenate([np.zeros((b, 1)), np.cumsum(n_v, axis=1)], axis=1)
        d = np.zeros((b, v, v))
        between = cum[:, hi + 1] - cum[:, lo] - (n_v[:, lo] + n_v[:, hi]) / 2
        d[:, lo, hi] = between**2
        d[:, hi, lo] = between**2
        e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(v)) / (n - 1)[:, None, None]
        num, den = (o * d).sum(axis=(1, 2)), (e * d).sum(axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start : start + b] = np.where(den > 0, 1 - num / den, np.nan)
    return out


def _alpha_results(
    data: FloatArray, domain: list[float], seed: int, n_resamples: int, confidence: float
) -> dict[str, AlphaResult]:
    n_items = data.shape[1]
    levels: tuple[AlphaLevel, ...] = ("ordinal", "interval", "nominal")
    estimates = {level: _alpha_value(data, level, domain) for level in levels}
    boot: dict[str, list[float]] = {level: [] for level in levels}
    # Only the primary figure (ordinal) gets a bootstrap interval: each level costs one krippendorff call
    # per resample, and the report must stay fast.
    if n_resamples > 0 and n_items >= 2:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n_items, size=(n_resamples, n_items))
        values = ordinal_alpha_resamples(data, domain, idx)
        boot["ordinal"] = [float(v) for v in values[np.isfinite(values)]]
    alpha = (1 - confidence) / 2
    out: dict[str, AlphaResult] = {}
    for level in levels:
        estimate = estimates[level]
        reason = None if estimate is not None else "every rating has the same value"
        values = np.array(boot[level])
        # Only the ordinal level is resampled: the others ran no bootstrap and count no resample.
        drawn = n_resamples if level == "ordinal" else 0
        n_undefined = drawn - values.size if n_items >= 2 else drawn
        low = high = None
        ci_reason: str | None = None
        if n_resamples == 0:
            ci_reason = "no resamples requested"
        elif level != "ordinal":
            ci_reason = "the bootstrap interval is computed for the ordinal level only"
        elif estimate is None or n_items < 2:
            ci_reason = "alpha undefined" if estimate is None else "fewer than 2 items"
        elif n_undefined > _ALPHA_MAX_UNDEFINED_FRACTION * n_resamples:
            ci_reason = f"alpha undefined in {n_undefined} of {n_resamples} item resamples"
        else:
            low, high = (float(v) for v in np.quantile(values, [alpha, 1 - alpha]))
        out[level] = AlphaResult(level, estimate, low, high, n_items, drawn, n_undefined, reason, ci_reason)
    return out


def _icc_intervals(data: FloatArray, confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """The McGraw & Wong (1996) intervals pingouin.intraclass_corr computes, at full precision.

    pingouin rounds its CI95 column to two decimals; these are its formulas (two-way ANOVA mean squares of
    the complete raters x items matrix, F quantiles, Satterthwaite df for the absolute-agreement case).
    """
    from scipy.stats import f

    k, n = data.shape
    x = data.T  # items x raters
    grand = float(x.mean())
    ssb = k * float(((x.mean(axis=1) - grand) ** 2).sum())
    ssj = n * float(((x.mean(axis=0) - grand) ** 2).sum())
    sse = float(((x - grand) ** 2).sum()) - ssb - ssj
    df1, df1kd, df2kd = n - 1, n * (k - 1), (n - 1) * (k - 1)
    # numpy floats: perfect agreement gives mse = 0, and the divisions below must give inf/nan (no interval),
    # not a ZeroDivisionError.
    msb, msj, mse = np.float64(ssb) / df1, np.float64(ssj) / (k - 1), np.float64(sse) / df2kd
    msw = (np.float64(ssj) + sse) / df1kd
    q = 1 - (1 - confidence) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        f1k, f3k = msb / msw, msb / mse
        f1l, f1u = f1k / f.ppf(q, df1, df1kd), f1k * f.ppf(q, df1kd, df1)
        f3l, f3u = f3k / f.ppf(q, df1, df2kd), f3k * f.ppf(q, df2kd, df1)
        icc2 = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
        fj = msj / mse
        vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u, f2l = f.ppf(q, n - 1, v), f.ppf(q, v, n - 1)
        l2 = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
        u2 = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
        return {
            "ICC(1,1)": ((f1l - 1) / (f1l + (k - 1)), (f1u - 1) / (f1u + (k - 1))),
            "ICC(A,1)": (l2, u2),
            "ICC(C,1)": ((f3l - 1) / (f3l + (k - 1)), (f3u - 1) / (f3u + (k - 1))),
            "ICC(1,k)": (1 - 1 / f1l, 1 - 1 / f1u),
            "ICC(A,k)": (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
            "ICC(C,k)": (1 - 1 / f3l, 1 - 1 / f3u),
        }


def _icc_results(data: FloatArray, names: Sequence[str]) -> tuple[dict[str, IccResult], str | None]:
    import pandas as pd
    import pingouin

    n_raters, n_items = data.shape
    if n_items < 3:
        return {}, f"fewer than 3 items rated by every rater (n = {n_items})"
    if float(np.ptp(data)) == 0.0:
        return {}, "every rating has the same value"
    frame = pd.DataFrame(
        {
            "item": np.tile(np.arange(n_items), n_raters),
            "rater": np.repeat(np.asarray(names, dtype=object), n_items),
            "score": data.ravel(),
        }
    )
    # Raters who agree exactly (the mean square error is 0) make pingouin divide by zero: its F is then inf
    # and the ICC 1, a defined value. np.errstate is per thread (the report runs in threads).
    with np.errstate(divide="ignore", invalid="ignore"), _PINGOUIN_LOCK:
        table = pingouin.intraclass_corr(frame, targets="item", raters="rater", ratings="score")
    intervals = _icc_intervals(data)
    out: dict[str, IccResult] = {}
    for row in table.itertuples(index=False):
        kind = str(row.Type)
        value = float(row.ICC)
        ci = [float(v) for v in intervals[kind]]
        finite = math.isfinite(value)
        out[kind] = IccResult(
            kind,
            value if finite else None,
            ci[0] if finite and math.isfinite(ci[0]) else None,
            ci[1] if finite and math.isfinite(ci[1]) else None,
            float(row.F) if math.isfinite(float(row.F)) else None,
            int(row.df1),
            int(row.df2),
            float(row.pval) if math.isfinite(float(row.pval)) else None,
        )
    return out, None


def _quadratic_kappa(
    a: FloatArray, b: FloatArray, scale_min: int, scale_max: int
) -> tuple[float | None, str | None]:
    from sklearn.metrics import cohen_kappa_score

    if a.size < 2:
        return None, f"fewer than 2 items rated by both raters (n = {a.size})"
    if not (np.all(a == np.round(a)) and np.all(b == np.round(b))):
        return None, "quadratic kappa needs integer ratings"
    if np.unique(np.concatenate([a, b])).size < 2:
        return None, "both raters gave one and the same rating to every item"
    # Labels span the whole scale: sklearn otherwise builds the weights from the observed values only.
    labels = list(range(scale_min, scale_max + 1))
    value = float(
        cohen_kappa_score(a.astype(np.int64), b.astype(np.int64), weights="quadratic", labels=labels)
    )
    return (value, None) if math.isfinite(value) else (None, "kappa undefined")


def agreement(
    matrix: ArrayLike,
    rater_names: Sequence[str],
    scale_min: int,
    scale_max: int,
    seed: int = 0,
    n_resamples: int = 1000,
    *,
    confidence: float = 0.95,
) -> AgreementResult:
    """Inter-rater agreement of a raters x items matrix (NaN = not rated).

    Krippendorff's alpha (ordinal, interval, nominal) with an item-bootstrap percentile CI; the six ICCs from
    pingouin on the items rated by every rater; quadratic-weighted Cohen kappa (exactly two raters, labels =
    the full scale); per pair of raters exact and within-one agreement and Pearson/Spearman with CIs; the
    attenuation ceiling sqrt(ICC(A,k)). Items with fewer than two ratings are excluded and counted. Raises
    ValueError when the matrix is not 2-D, the names do not match its rows (a transposed matrix usually trips
    this), there are fewer than two raters, or a rating lies outside [scale_min, scale_max].
    """
    data = np.asarray(matrix, dtype=np.float64)
    names = tuple(str(name) for name in rater_names)
    if data.ndim != 2:
        raise ValueError(f"matrix must be raters x items, got shape {data.shape}")
    if data.shape[0] != len(names):
        raise ValueError(f"matrix has {data.shape[0]} rows (raters) but {len(names)} rater names were given")
    if len(names) < 2:
        raise ValueError("agreement needs at least two raters")
    if len(set(names)) != len(names):
        raise ValueError("rater names must be unique")
    if scale_min >= scale_max:
        raise ValueError("scale_min must be below scale_max")
    if np.isinf(data).any():
        raise ValueError("ratings must be finite or NaN")
    rated = np.isfinite(data)
    if ((data[rated] < scale_min) | (data[rated] > scale_max)).any():
        raise ValueError(f"ratings must lie in [{scale_min}, {scale_max}]")
    _check_confidence(confidence)

    n_items = data.shape[1]
    usable = rated.sum(axis=0) >= 2
    used = data[:, usable]
    n_excluded = int(n_items - usable.sum())
    domain = sorted(
        {float(v) for v in range(scale_min, scale_max + 1)} | {float(v) for v in used[np.isfinite(used)]}
    )
    alpha = _alpha_results(used, domain, seed, n_resamples, confidence)

    complete = rated.all(axis=0)
    icc, icc_reason = _icc_results(data[:, complete], names)
    n_icc_excluded = int(n_items - complete.sum())

    kappa: float | None = None
    kappa_reason: str | None = "quadratic kappa is reported for exactly two raters"
    pairs: list[RaterPair] = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            both = rated[i] & rated[j]
            a, b = data[i, both], data[j, both]
            diff = np.abs(a - b)
            n_pair = int(both.sum())
            exact = int(np.count_nonzero(diff == 0))
            within = int(np.count_nonzero(diff <= 1))
            pairs.append(
                RaterPair(
                    names[i],
                    names[j],
                    n_pair,
                    exact,
                    exact / n_pair if n_pair else None,
                    within,
                    within / n_pair if n_pair else None,
                    pearson(a, b, confidence=confidence),
                    spearman(a, b, confidence=confidence),
                )
            )
            if len(names) == 2:
                kappa, kappa_reason = _quadratic_kappa(a, b, scale_min, scale_max)

    icc_ak = icc.get("ICC(A,k)")
    ceiling = None
    if icc_ak is not None and icc_ak.estimate is not None and icc_ak.estimate > 0:
        ceiling = math.sqrt(icc_ak.estimate)
    return AgreementResult(
        rater_names=names,
        scale_min=scale_min,
        scale_max=scale_max,
        n_items=n_items,
        n_items_used=int(usable.sum()),
        n_items_excluded=n_excluded,
        exclusion_reason="fewer than two ratings" if n_excluded else None,
        alpha=alpha,
        icc=icc,
        icc_n_items=int(complete.sum()),
        icc_n_items_excluded=n_icc_excluded,
        icc_exclusion_reason="not rated by every rater" if n_icc_excluded else None,
        icc_undefined_reason=icc_reason,
        kappa_quadratic=kappa,
        kappa_undefined_reason=None if kappa is not None else kappa_reason,
        pairs=tuple(pairs),
        attenuation_ceiling=ceiling,
    )


# ------------------------------------------------------------------- pairwise preference, system level (§6)


def pair_mean_labels(labels: ArrayLike) -> FloatArray:
    """Mean label of each compared pair from an annotators x pairs matrix (NaN = not labelled).

    Correlate metric deltas with this mean, one row per pair: duplicating the delta for each annotator row
    doubles n and narrows intervals falsely. A pair nobody labelled gets NaN. Raises ValueError if not 2-D.
    """
    data = np.asarray(labels, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"labels must be annotators x pairs, got shape {data.shape}")
    rated = np.isfinite(data)
    counts = rated.sum(axis=0)
    sums = np.where(rated, data, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def preference_agreement(
    labels: ArrayLike,
    score1: ArrayLike,
    score2: ArrayLike,
    *,
    impute_missing_delta: bool = False,
    confidence: float = 0.95,
) -> PreferenceResult:
    """Agreement of metric deltas (score2 - score1) with per-pair mean preference labels (response 2 vs 1).

    Missing deltas are dropped and counted, or replaced by the median delta when ``impute_missing_delta``
    (the published RAGChecker procedure). Sign accuracy leaves out pairs the humans tied (mean label 0); a
    zero metric delta on a non-tied pair counts as wrong. Raises ValueError on mismatched lengths.
    """
    human = pair_mean_labels(labels)
    delta = _as_vector(score2, "score2") - _as_vector(score1, "score1")
    if delta.size != human.size:
        raise ValueError(f"{delta.size} deltas for {human.size} labelled pairs")
    missing = ~np.isfinite(delta)
    n_missing = int(missing.sum())
    n_imputed = 0
    if impute_missing_delta and n_missing and n_missing < delta.size:
        delta = np.where(missing, np.median(delta[~missing]), delta)
        n_imputed = n_missing
    h, d, _ = complete_pairs(human, delta)
    not_tied = h != 0
    correct = int(np.count_nonzero(np.sign(d[not_tied]) == np.sign(h[not_tied])))
    total = int(not_tied.sum())
    return PreferenceResult(
        n_pairs=human.size,
        n_delta_missing=n_missing,
        n_delta_imputed=n_imputed,
        pearson=pearson(human, delta, confidence=confidence),
        spearman=spearman(human, delta, confidence=confidence),
        kendall=kendall(human, delta, confidence=confidence),
        sign_correct=correct,
        sign_total=total,
        sign_accuracy=correct / total if total else None,
        n_human_ties=int(h.size - total),
    )


def system_level(
    human_means: ArrayLike, metric_means: ArrayLike, *, confidence: float = 0.95
) -> SystemLevelResult:
    """System-level agreement: tau-b, Spearman, Pearson and pairwise accuracy over systems.

    Pairwise accuracy counts system pairs ordered the same way by metric and humans; pairs the humans tie are
    left out, a metric tie counts as wrong. Systems with a missing mean are dropped (see each correlation's
    n_dropped). Raises ValueError on mismatched lengths.
    """
    h, m, _ = complete_pairs(human_means, metric_means)
    dh = np.sign(h[:, None] - h[None, :])
    dm = np.sign(m[:, None] - m[None, :])
    upper = np.triu(np.ones_like(dh, dtype=np.bool_), k=1)
    compared = upper & (dh != 0)
    correct = int(np.count_nonzero(compared & (dh == dm)))
    total = int(compared.sum())
    return SystemLevelResult(
        n_systems=h.size,
        kendall=kendall(human_means, metric_means, confidence=confidence),
        spearman=spearman(human_means, metric_means, confidence=confidence),
        pearson=pearson(human_means, metric_means, confidence=confidence),
        pairwise_correct=correct,
        pairwise_total=total,
        pairwise_accuracy=correct / total if total else None,
        n_human_ties=int(np.count_nonzero(upper & (dh == 0))),
    )


# --------------------------------------------------------------------------------- pass/fail alignment (§9)


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
    """How well a metric's pass/fail decision agrees with the binarised human reference (STATS.md §9).

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


class _PassFailKernel:
    """Every pass/fail figure of one metric on many resamples (per-item counts) at once.

    Items are grouped by tie in the metric; per resample the weight of passes and fails in each group gives
    the ROC curve, AUC (ties count one half, as roc_auc_score), the Youden threshold (the highest among
    equal maxima, J compared exactly as in ``_youden_cut``) and the confusion matrix there.
    """

    n_stats = len(PASS_FAIL_FIGURES)

    def __init__(self, score: FloatArray, passed: NDArray[np.bool_]) -> None:
        self.ties = _ties(score)
        self.values = score[self.ties.order][self.ties.starts]  # ascending distinct values
        self.passed = passed.astype(np.int64)

    def _groups(self, counts: IntArray, flags: IntArray) -> IntArray:
        w = (counts * flags)[:, self.ties.order]
        return np.add.reduceat(w, self.ties.starts, axis=1) if self.ties.has_ties else w

    def resample(self, counts: IntArray) -> FloatArray:
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
            key = _youden_key(tp_int, fp_int, tp_int[:, :1], fp_int[:, :1])
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
        return float(self.resample(counts)[0, j])

    def jackknife(self) -> FloatArray:
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


def _youden_key(tp: IntArray, fp: IntArray, p: IntArray | int, n: IntArray | int) -> IntArray:
    """Youden's J = TP/P - FP/N times P N, an integer: J compared exactly. Equal J in floats can differ by
    rounding (14/15 - 8/9 is 6e-17 above 4/15 - 2/9) and pick a lower threshold than "the highest among
    equal maxima". Exact in int64 while P N < 2**63."""
    return np.asarray(tp, dtype=np.int64) * n - np.asarray(fp, dtype=np.int64) * p


def _youden_cut(y: IntArray, score: FloatArray) -> tuple[float, float]:
    """(threshold, J): the highest observed value maximising J = TPR - FPR, passing at or above it (every
    observed value is a threshold, as roc_curve's; its "nothing passes" left out: a decision rule passes
    something). J is compared exactly (``_youden_key``) and returned as tpr - fpr in floats."""
    values, group = np.unique(score, return_inverse=True)
    yy = np.asarray(y, dtype=np.int64)
    tp = np.bincount(group, weights=yy, minlength=values.size).astype(np.int64)[::-1].cumsum()[::-1]
    fp = np.bincount(group, weights=1 - yy, minlength=values.size).astype(np.int64)[::-1].cumsum()[::-1]
    p, n = int(tp[0]), int(fp[0])
    key = _youden_key(tp, fp, p, n)
    best = values.size - 1 - int(np.argmax(key[::-1]))
    return float(values[best]), float(tp[best] / p - fp[best] / n)


def _decision_figures(y: IntArray, pred: IntArray) -> tuple[dict[str, float], Any]:
    from sklearn.metrics import (
        accuracy_score,
        cohen_kappa_score,
        confusion_matrix,
        precision_score,
        recall_score,
    )

    cm = confusion_matrix(y, pred, labels=[0, 1])
    tn, fp = int(cm[0, 0]), int(cm[0, 1])
    recall = float(recall_score(y, pred))
    return {
        "youden_j": recall - fp / (fp + tn) if fp + tn else math.nan,
        "kappa": float(cohen_kappa_score(y, pred)),
        "accuracy": float(accuracy_score(y, pred)),
        "precision": float(precision_score(y, pred, zero_division=np.nan)),
        "recall": recall,
    }, cm


def _halves(units: _Units, passed: NDArray[np.bool_], seed: int) -> IntArray:
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


def _cross_fit(score: FloatArray, passed: NDArray[np.bool_], units: _Units, seed: int) -> _HeldOut | str:
    """Judge each half of the questions (``_halves``) at the Youden threshold of the other half."""
    fold = _halves(units, passed, seed)
    y = passed.astype(np.int64)
    pred = np.zeros(units.n, dtype=np.int64)
    cuts = []
    for f in (0, 1):
        other = fold != f
        if y[other].min() == y[other].max():
            return "a half of the questions has no pass or no fail to choose a threshold on (cross-fitting)"
        cut = _youden_cut(y[other], score[other])[0]
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

    def __init__(self, kernels: Sequence[_PassFailKernel]) -> None:
        self.kernels = kernels
        self.width = kernels[0].n_stats
        self.n_stats = len(kernels) * self.width

    def resample(self, counts: IntArray) -> FloatArray:
        return np.hstack([k.resample(counts) for k in self.kernels])

    def exact(self, idx: IntArray, j: int) -> float:
        return self.kernels[j // self.width].exact(idx, j % self.width)

    def jackknife(self) -> FloatArray:
        return np.vstack([k.jackknife() for k in self.kernels])


@dataclass(frozen=True, slots=True)
class _PassFailPoint:
    """One metric's complete pairs, units, point figures (scikit-learn) and the reason it is undefined."""

    x: FloatArray
    score: FloatArray
    passed: NDArray[np.bool_]
    keep: NDArray[np.bool_]
    units: _Units
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
    from sklearn.metrics import roc_auc_score

    if x_all.size != h_all.size:
        raise ValueError(f"metric has {x_all.size} values, human has {h_all.size}")
    keep = np.isfinite(x_all) & np.isfinite(h_all)
    units = _units(clusters, keep)
    x, h = x_all[keep], h_all[keep]
    score = x if higher_is_better else -x
    passed = h >= human_threshold
    n_pass = int(passed.sum())
    n_fail = int(passed.size - n_pass)
    reason = None
    if n_pass < 2 or n_fail < 2:
        reason = f"needs at least 2 passes and 2 fails by the human threshold ({n_pass} pass, {n_fail} fail)"
    elif _is_constant(x):
        reason = "constant metric"
    else:
        reason = _min_units_reason(units)
    if reason is not None:
        return _PassFailPoint(x, score, passed, keep, units, higher_is_better, {}, None, reason)
    y = passed.astype(np.int64)
    cut, j = _youden_cut(y, score)
    pred = (score >= cut).astype(np.int64)
    at_cut, cm = _decision_figures(y, pred)
    point = {"auc": float(roc_auc_score(y, score)), "threshold": cut, "youden_j": j, **at_cut}
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
    se = _jackknife_se(jack)
    # Precision is a mean over the outputs the metric passes, a domain whose size the thresholds set: its t
    # takes the domain's df, the questions in it - 1 (Korn & Graubard 1999, 5.2). With G - 1 it covered
    # 92.9-93.1 % at rho 0.3 (bench/coverage.py); recall's domain, the raters' passes, is fixed by the data,
    # and with its domain df recall over-covers (97.0 % at n = 50).
    df = max(held.passed_questions - 1, 1) if name == "precision" else g - 1
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se
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
        limits = _interval(draws[defined], value, jack[i] if kind == "bca" else None, confidence)
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
    x = _as_vector(score, "score")
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
    both = sps.rankdata(np.concatenate([pos, neg]))
    v10 = (both[:m] - sps.rankdata(pos)) / n
    v01 = 1.0 - (both[m:] - sps.rankdata(neg)) / m
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
    half = _z(confidence) * math.sqrt(var) / (auc * (1.0 - auc))
    centre = math.log(auc / (1.0 - auc))
    return Interval(auc, float(expit(centre - half)), float(expit(centre + half)), "delong-logit")


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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
) -> dict[str, PassFailResult]:
    """``pass_fail`` of every metric against the same human score, keyed like ``metrics``.

    Metrics with the same missing-value pattern share one set of resamples (drawn once): each result equals
    ``pass_fail`` on that metric alone with the same seed. ``higher_is_better`` maps a metric to its
    direction (default True).
    """
    _check_bootstrap_args("bca", max(n_resamples, 1), confidence)
    h_all = _as_vector(human, "human")
    directions = higher_is_better or {}
    points = {
        name: _pass_fail_point(
            _as_vector(x, "metric"), h_all, human_threshold, directions.get(name, True), clusters, seed
        )
        for name, x in metrics.items()
    }
    patterns: dict[bytes, list[str]] = {}
    for name, pt in points.items():
        if pt.reason is None:
            patterns.setdefault(pt.keep.tobytes(), []).append(name)
    draws: dict[str, tuple[FloatArray | None, FloatArray | None]] = {}
    width = _PassFailKernel.n_stats
    for names in patterns.values():
        units = points[names[0]].units
        kernel = _PassFailManyKernel([_PassFailKernel(points[n].score, points[n].passed) for n in names])
        # Only AUC on clustered data is bootstrapped: on independent outputs it has DeLong's interval.
        if n_resamples > 0 and units.clustered:
            theta_b = _bootstrap_distribution(kernel, units, n_resamples, seed, chunk_elements)
            jack = _jackknife(kernel, units, chunk_elements)
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
    chunk_elements: int = _DEFAULT_CHUNK_ELEMENTS,
) -> PassFailResult:
    """Pass/fail alignment of a metric with humans: human pass = reference score >= ``human_threshold``.

    Point figures come from scikit-learn (roc_auc_score; confusion_matrix at the observed value maximising
    Youden's J = TPR - FPR, compared on exact counts, the highest among equal maxima; cohen_kappa_score,
    accuracy/precision/recall and J on the held-out decisions, see ``PassFailResult``). Intervals: for AUC,
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


# --------------------------------------------------------------------------- prediction-powered mean (§7)


def ppi_mean(
    y_labeled: ArrayLike, yhat_labeled: ArrayLike, yhat_unlabeled: ArrayLike, *, confidence: float = 0.95
) -> PpiResult:
    """Prediction-powered mean: mean(f_unlabeled) + mean(Y - f_labeled), normal CI (ddof 0 variances).

    ppi_py's ppi_mean_ci defaults to a 90% interval; this defaults to 95%. Raises ValueError for missing
    values, mismatched labelled lengths, or fewer than 2 labelled / 1 unlabelled items.
    """
    _check_confidence(confidence)
    y = _as_vector(y_labeled, "y_labeled")
    f = _as_vector(yhat_labeled, "yhat_labeled")
    fu = _as_vector(yhat_unlabeled, "yhat_unlabeled")
    if y.size != f.size:
        raise ValueError(f"{y.size} labels for {f.size} labelled predictions")
    if not (np.isfinite(y).all() and np.isfinite(f).all() and np.isfinite(fu).all()):
        raise ValueError("ppi_mean needs complete data: drop missing values first")
    if y.size < 2 or fu.size < 1:
        raise ValueError("need at least 2 labelled and 1 unlabelled items")
    rectifier = y - f
    estimate = float(fu.mean() + rectifier.mean())
    se = math.sqrt(float(fu.var()) / fu.size + float(rectifier.var()) / y.size)
    half = _z(confidence) * se
    return PpiResult(estimate, se, estimate - half, estimate + half, y.size, fu.size, confidence)


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
    c = _zou_c(r1, r2, r12_between_metrics)
    z = float(ndtri(1 - alpha / 2)) + float(ndtri(power))
    return math.ceil(3 + z**2 * (2 - 2 * c) / (math.atanh(r1) - math.atanh(r2)) ** 2)


def warm_up() -> None:
    """Import the libraries the statistics load on first use and compile (or load from numba's cache) the
    resample kernels, so that a process's first report does not pay for them (about 1-2 s, more when the
    kernels are not cached yet)."""
    import krippendorff  # noqa: F401
    import pingouin  # noqa: F401
    import sklearn.metrics  # noqa: F401

    from services import stats_kernels

    stats_kernels.warm_up()
