"""Agreement between raters: Krippendorff's alpha, the intraclass correlations, quadratic kappa, per pair
of raters exact and within-one agreement and correlations, and the attenuation ceiling they set on any
metric's correlation with the mean rating.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from services.stats.core import FloatArray, check_confidence, cohen_kappa, confusion_counts
from services.stats.correlations import CorrelationResult, pearson, spearman
from services.stats.reference import f_ppf, f_sf

AlphaLevel = Literal["ordinal", "interval", "nominal"]

# Krippendorff's alpha CI is refused when more resamples than this were undefined (a single rating value).
_ALPHA_MAX_UNDEFINED_FRACTION = 0.05


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
    """One intraclass correlation with its F test and its McGraw & Wong interval at full precision (the
    figures of pingouin's ``intraclass_corr``, which rounds the interval to 2 decimals)."""

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
    """Inter-rater agreement of a raters x items matrix (docs/statistics.md §5)."""

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


def _alpha_value(data: FloatArray, level: AlphaLevel, domain: list[float]) -> float | None:
    import krippendorff

    values = data[np.isfinite(data)]
    if values.size == 0 or float(np.ptp(values)) == 0.0:
        return None
    # reliability_data is raters x items: the transpose silently gives another number (docs/statistics.md §5).
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def ordinal_alpha_resamples(data: FloatArray, domain: list[float], idx: np.ndarray) -> FloatArray:
    """Ordinal Krippendorff's alpha of every item resample ``data[:, idx[b]]`` at once (NaN where alpha is
    undefined: one value only), equal to ``krippendorff.alpha(..., level_of_measurement="ordinal",
    value_domain=domain)`` on each resample.

    The coincidence matrix of a resample is the sum of its items' own coincidence matrices, weighted by how
    often each item was drawn (items with the same value counts share one matrix), so every resample is one
    row of a matrix product; the ordinal distances depend on the resample's value counts and are computed for
    all resamples together.
    """
    dom = np.asarray(domain, dtype=float)
    v = dom.size
    # Value counts per item (items x values). Items with the same counts have the same coincidences, and a
    # study's items share a few dozen count patterns at most (2 raters on a 1-5 scale: 15), so each
    # resample's coincidence matrix is its draws per pattern times the patterns' coincidences.
    counts = np.stack([(data == value).sum(axis=0) for value in dom], axis=1).astype(float)
    patterns, pattern_of = np.unique(counts, axis=0, return_inverse=True)
    pattern_of = pattern_of.reshape(-1)
    n_patterns = patterns.shape[0]
    pairable = np.maximum(patterns.sum(axis=1), 2.0)
    per_pattern = patterns[:, :, None] * patterns[:, None, :]
    per_pattern[:, np.arange(v), np.arange(v)] -= patterns
    per_pattern = (per_pattern / (pairable - 1)[:, None, None]).reshape(n_patterns, v * v)
    out = np.empty(idx.shape[0])
    lo, hi = np.triu_indices(v)
    for start in range(0, idx.shape[0], 200):  # bounded memory: 200 resamples x items at a time
        block = idx[start : start + 200]
        b = block.shape[0]
        flat = (np.arange(b)[:, None] * n_patterns + pattern_of[block]).ravel()
        weights = np.bincount(flat, minlength=b * n_patterns).reshape(b, n_patterns).astype(float)
        o = (weights @ per_pattern).reshape(b, v, v)
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
    the complete raters x items matrix, F quantiles, Satterthwaite df for the absolute-agreement case). The
    mean squares here are summed their own way (not pingouin's order, as ``_anova_mean_squares`` does), so a
    limit can differ from pingouin's unrounded one in the last bits. Kept apart on purpose: these sums give
    an error mean square of exactly 0 for raters who agree perfectly (no interval), where pingouin's order
    leaves a rounding residue and an F of ~1e15 (tests/unit/test_stats.py, perfect agreement).
    """
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
        f1l, f1u = f1k / f_ppf(q, df1, df1kd), f1k * f_ppf(q, df1kd, df1)
        f3l, f3u = f3k / f_ppf(q, df1, df2kd), f3k * f_ppf(q, df2kd, df1)
        icc2 = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
        fj = msj / mse
        vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u, f2l = f_ppf(q, n - 1, v), f_ppf(q, v, n - 1)
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


def _compensated_means(rows: FloatArray) -> FloatArray:
    """The mean of each row, its values added left to right with Kahan's compensation and the sum divided
    by the count (pandas' groupby mean over unsorted groups)."""
    total: FloatArray = np.zeros(rows.shape[0])
    carry: FloatArray = np.zeros(rows.shape[0])
    for column in rows.T:
        y = column - carry
        t = total + y
        carry = (t - total) - y
        total = t
    means: FloatArray = total / rows.shape[1]
    return means


def _anova_mean_squares(
    data: FloatArray, names: Sequence[str]
) -> tuple[np.float64, np.float64, np.float64, np.float64]:
    """Mean squares of the two-way ANOVA (items x raters, one rating per cell) of a complete raters x items
    matrix: between items (msb), between raters (msj), residual (mse) and within items (msw).

    Each sum is taken in the order and the way pingouin's ``intraclass_corr`` takes it through pandas
    (raters sorted by name, the ratings laid out rater by rater; numpy's pairwise sums, the rater means by
    ``np.add.reduceat`` over the rater's contiguous run, the item means Kahan-compensated), so that the
    ICCs, F and p-values built on them are pingouin's to the last bit; tests/unit/test_icc.py checks them
    against pingouin.
    """
    k, n = data.shape
    flat = data[sorted(range(k), key=lambda i: names[i])].ravel()
    grand = flat.sum() / flat.size
    ss_total = ((flat - grand) ** 2).sum()
    item_means = _compensated_means(flat.reshape(k, n).T)
    rater_means = np.add.reduceat(flat, np.arange(0, k * n, n)) / np.float64(n)
    ss_items = ((item_means - grand) ** 2 * k).sum()
    ss_raters = ((rater_means - grand) ** 2 * n).sum()
    ss_error = ss_total - (ss_items + ss_raters)
    msb = ss_items / np.float64(n - 1)
    msj = ss_raters / np.float64(k - 1)
    mse = ss_error / np.float64((n - 1) * (k - 1))
    msw = (ss_raters + ss_error) / np.float64(n * (k - 1))
    return msb, msj, mse, msw


def icc_results(data: FloatArray, names: Sequence[str]) -> tuple[dict[str, IccResult], str | None]:
    """The six ICCs of a complete raters x items matrix (McGraw & Wong 1996; ICC(1,1), ICC(C,1) and the
    k forms are Shrout & Fleiss' ICC1, ICC3, ICC1k, ICC3k), each with its F test of the item effect and its
    interval, or why there are none (fewer than 3 items, every rating the same).

    As pingouin gives them: raters who agree exactly (the error mean square is 0) give F = inf, reported as
    None, with p = 0 and ICC 1, a defined value; raters who each give one constant integer score make the
    item mean square 0 and some ICCs 0/0, reported as None. Nothing raises for data.
    """
    n_raters, n_items = data.shape
    if n_items < 3:
        return {}, f"fewer than 3 items rated by every rater (n = {n_items})"
    if float(np.ptp(data)) == 0.0:
        return {}, "every rating has the same value"
    k, n = n_raters, n_items
    msb, msj, mse, msw = _anova_mean_squares(data, names)
    df1, df1kd, df2kd = n - 1, n * (k - 1), (n - 1) * (k - 1)
    # np.float64 divisions: a zero mean square gives inf or nan, not ZeroDivisionError; np.errstate is per
    # thread (reports run in threads).
    with np.errstate(divide="ignore", invalid="ignore"):
        f1k, f2k = msb / msw, msb / mse
        p1k, p2k = f_sf(f1k, df1, df1kd), f_sf(f2k, df1, df2kd)
        table = (
            ("ICC(1,1)", (msb - msw) / (msb + (k - 1) * msw), f1k, df1kd, p1k),
            ("ICC(A,1)", (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n), f2k, df2kd, p2k),
            ("ICC(C,1)", (msb - mse) / (msb + (k - 1) * mse), f2k, df2kd, p2k),
            ("ICC(1,k)", (msb - msw) / msb, f1k, df1kd, p1k),
            ("ICC(A,k)", (msb - mse) / (msb + (msj - mse) / n), f2k, df2kd, p2k),
            ("ICC(C,k)", (msb - mse) / msb, f2k, df2kd, p2k),
        )
    intervals = _icc_intervals(data)
    out: dict[str, IccResult] = {}
    for kind, icc, f_value, df2, p_value in table:
        value = float(icc)
        ci = [float(v) for v in intervals[kind]]
        finite = math.isfinite(value)
        out[kind] = IccResult(
            kind,
            value if finite else None,
            ci[0] if finite and math.isfinite(ci[0]) else None,
            ci[1] if finite and math.isfinite(ci[1]) else None,
            float(f_value) if math.isfinite(float(f_value)) else None,
            df1,
            df2,
            float(p_value) if math.isfinite(float(p_value)) else None,
        )
    return out, None


def _quadratic_kappa(
    a: FloatArray, b: FloatArray, scale_min: int, scale_max: int
) -> tuple[float | None, str | None]:
    if a.size < 2:
        return None, f"fewer than 2 items rated by both raters (n = {a.size})"
    if not (np.all(a == np.round(a)) and np.all(b == np.round(b))):
        return None, "quadratic kappa needs integer ratings"
    if np.unique(np.concatenate([a, b])).size < 2:
        return None, "both raters gave one and the same rating to every item"
    # Labels span the whole scale: built from the observed values only, the weights would be another.
    value = cohen_kappa(
        confusion_counts(a.astype(np.int64), b.astype(np.int64), scale_min, scale_max), quadratic=True
    )
    return (value, None) if math.isfinite(value) else (None, "kappa undefined")


def _checked_ratings(
    matrix: ArrayLike, rater_names: Sequence[str], scale_min: int, scale_max: int, confidence: float
) -> tuple[FloatArray, tuple[str, ...]]:
    """The raters x items matrix as floats and the rater names, after every check ``agreement`` lists."""
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
    check_confidence(confidence)
    return data, names


def _rater_pairs(
    data: FloatArray, names: tuple[str, ...], scale_min: int, scale_max: int, confidence: float
) -> tuple[list[RaterPair], float | None, str | None]:
    """Every pair of raters on the items both rated, and the quadratic kappa (with why it is undefined)."""
    rated = np.isfinite(data)
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
    return pairs, kappa, kappa_reason


def _attenuation_ceiling(icc: dict[str, IccResult]) -> float | None:
    """sqrt(ICC(A,k)): the highest correlation a metric can reach with the mean rating; None unless > 0."""
    icc_ak = icc.get("ICC(A,k)")
    if icc_ak is not None and icc_ak.estimate is not None and icc_ak.estimate > 0:
        return math.sqrt(icc_ak.estimate)
    return None


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

    Krippendorff's alpha (ordinal, interval, nominal) with an item-bootstrap percentile CI; the six ICCs
    (two-way ANOVA mean squares, ``icc_results``) on the items rated by every rater; quadratic-weighted
    Cohen kappa (exactly two raters, labels = the full scale); per pair of raters exact and within-one
    agreement and Pearson/Spearman with CIs; the attenuation ceiling sqrt(ICC(A,k)). Items with fewer than
    two ratings are excluded and counted. Raises ValueError when the matrix is not 2-D, the names do not
    match its rows (a transposed matrix usually trips this), there are fewer than two raters, or a rating
    lies outside [scale_min, scale_max].
    """
    data, names = _checked_ratings(matrix, rater_names, scale_min, scale_max, confidence)
    rated = np.isfinite(data)

    n_items = data.shape[1]
    usable = rated.sum(axis=0) >= 2
    used = data[:, usable]
    n_excluded = int(n_items - usable.sum())
    domain = sorted(
        {float(v) for v in range(scale_min, scale_max + 1)} | {float(v) for v in used[np.isfinite(used)]}
    )
    alpha = _alpha_results(used, domain, seed, n_resamples, confidence)

    complete = rated.all(axis=0)
    icc, icc_reason = icc_results(data[:, complete], names)
    n_icc_excluded = int(n_items - complete.sum())

    pairs, kappa, kappa_reason = _rater_pairs(data, names, scale_min, scale_max, confidence)
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
        attenuation_ceiling=_attenuation_ceiling(icc),
    )
