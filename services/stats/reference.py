"""The reference statistics: Pearson's, Spearman's and Kendall's coefficients with their p-values, average
ranks, and the few distribution functions the statistics read, equal to ``scipy.stats`` to the last bit.

Each follows scipy.stats' own steps (scipy 1.17) with the same numpy calls and scipy's special functions
(``scipy.special``), so the floats are scipy's: ``tests/unit/test_reference_stats.py`` compares them with
scipy.stats on thousands of vectors (ties, small and large n, exact and asymptotic Kendall p-values). What
they spare is importing scipy.stats, about half a second of a fresh process's first report (scipy.stats
rewrites the docstrings of its functions as it loads).

Inputs are what the callers pass: 1-D float64 vectors of equal length, complete pairs, n >= 3 and neither
side constant (``reference_or_nan`` covers constant input as scipy does, with NaN).
"""

from __future__ import annotations

import math

import numpy as np

from services.stats import special
from services.stats.core import CorrMethod, FloatArray, IntArray
from services.stats.ranks import lower_left, tie_groups

__all__ = [
    "f_ppf",
    "f_sf",
    "kendalltau",
    "norm_sf",
    "pearsonr",
    "rankdata",
    "reference_or_nan",
    "reference_statistic",
    "spearmanr",
    "t_quantile",
    "t_sf",
]


# ------------------------------------------------------------------------------------------ distributions
# scipy.stats' continuous distributions call these ufuncs for a value inside the support (loc 0, scale 1);
# outside it they answer with the support's limits, which the callers never ask for.
def norm_sf(x: float) -> float:
    """``scipy.stats.norm.sf(x)``."""
    return float(special.ndtr(-x))


def t_sf(x: float, df: float) -> float:
    """``scipy.stats.t.sf(x, df)``."""
    return float(special.stdtr(df, -x))


def t_quantile(p: float, df: float) -> float:
    """``scipy.stats.t.ppf(p, df)`` for 0 < p < 1."""
    return float(special.stdtrit(df, p))


def _f_args(dfn: float, dfd: float) -> bool:
    return dfn > 0 and dfd > 0  # False for NaN too: scipy.stats' argument check, whose answer is NaN


def f_sf(x: float, dfn: float, dfd: float) -> np.float64:
    """``scipy.stats.f.sf(x, dfn, dfd)``: 1 at x <= 0 and 0 at x = inf (the support's limits), NaN for NaN
    or invalid degrees of freedom. A numpy float, so that dividing by it follows numpy's rules."""
    if not _f_args(dfn, dfd) or math.isnan(x):
        return np.float64(math.nan)
    if x <= 0:
        return np.float64(1.0)
    if math.isinf(x):
        return np.float64(0.0)
    return np.float64(special.fdtrc(dfn, dfd, x))


def f_ppf(q: float, dfn: float, dfd: float) -> np.float64:
    """``scipy.stats.f.ppf(q, dfn, dfd)``: 0 at q = 0, inf at q = 1, NaN outside [0, 1] or for invalid
    degrees of freedom. A numpy float, so that dividing by it follows numpy's rules."""
    if not _f_args(dfn, dfd) or not 0 <= q <= 1:
        return np.float64(math.nan)
    if q == 0:
        return np.float64(0.0)
    if q == 1:
        return np.float64(math.inf)
    return np.float64(special.fdtri(dfn, dfd, q))


# ------------------------------------------------------------------------------------------------ ranks
def rankdata(a: FloatArray) -> FloatArray:
    """``scipy.stats.rankdata(a)`` (average ranks, 1-based) of a vector without NaN: each rank is an integer
    or a half, exact in float64 however it is computed."""
    t = tie_groups(np.asarray(a, dtype=np.float64))
    return (t.starts[t.group] + (t.sizes[t.group] + 1) / 2).astype(np.float64)


# ------------------------------------------------------------------------------------------ coefficients
def pearsonr(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """``scipy.stats.pearsonr(x, y)``: (r, two-sided p-value from the beta distribution on (-1, 1))."""
    n = np.asarray(x.shape[-1], dtype=np.float64)
    xmean = np.mean(x, axis=-1, keepdims=True)
    ymean = np.mean(y, axis=-1, keepdims=True)
    xm = x - xmean
    ym = y - ymean
    xmax = np.max(np.abs(xm), axis=-1, keepdims=True)
    ymax = np.max(np.abs(ym), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        normxm = xmax * np.linalg.norm(xm / xmax, ord=2, axis=-1, keepdims=True)
        normym = ymax * np.linalg.norm(ym / ymax, ord=2, axis=-1, keepdims=True)
        r = np.vecdot(xm / normxm, ym / normym, axis=-1)  # type: ignore[call-overload]
    r = np.clip(r, -1.0, 1.0)
    ab = np.asarray(n / 2 - 1, dtype=np.float64)
    pvalue = 2 * special.betaincc(ab, ab, (np.abs(r) - -1) / 2)
    return float(r), float(pvalue)


def spearmanr(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """``scipy.stats.spearmanr(x, y)``: (rho, two-sided p-value from Student's t with n - 2 df)."""
    ranked = np.column_stack((rankdata(x), rankdata(y)))
    rs: FloatArray = np.asarray(np.corrcoef(ranked, rowvar=False), dtype=np.float64)
    dof = x.size - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt((dof / ((rs + 1.0) * (1.0 - rs))).clip(0))
    prob = 2 * special.stdtr(dof, -np.abs(t))
    return float(rs[1, 0]), float(prob[1, 0])


# Up to this many cells (tie groups of x times tie groups of y), pairs are counted from the joint table of
# the two (a metric against mean ratings: thousands of values by a few); beyond, by a merge over the items.
_TABLE_CELLS = 1_000_000


def _discordant_and_joint_ties(xr: IntArray, yr: IntArray, kx: int, ky: int) -> tuple[int, int]:
    """Discordant pairs and pairs tied in both x and y, from the tie groups (dense ranks) of each item."""
    if kx * ky <= _TABLE_CELLS:
        table = np.bincount(xr * ky + yr, minlength=kx * ky).reshape(kx, ky)
        below_x = np.cumsum(table, axis=0) - table  # items with a lower x, per y group
        # items with a lower x and a higher y than each cell
        lower_x_higher_y = np.cumsum(below_x[:, ::-1], axis=1)[:, ::-1] - below_x
        return int((table * lower_x_higher_y).sum()), int((table * (table - 1) // 2).sum())
    ones = np.ones((1, xr.size), dtype=np.int64)
    dis = int(lower_left(xr, (ky - 1) - yr, ones)[1].sum())
    joint = np.unique(xr * ky + yr, return_counts=True)[1].astype(np.int64)
    return dis, int((joint * (joint - 1) // 2).sum())


def _tie_stats(sizes: IntArray) -> tuple[int, int, int]:
    cnt = sizes.astype(np.int64)
    cnt = cnt[cnt > 1]
    return (
        int((cnt * (cnt - 1) // 2).sum()),
        int((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
        int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()),
    )


def kendalltau(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """``scipy.stats.kendalltau(x, y)``: (tau-b, two-sided p-value), the exact null distribution without
    ties for n <= 33 (or at most one discordant or concordant pair), the normal approximation otherwise.

    The pair counts are exact integers (``_discordant_and_joint_ties``), from which tau-b and the p-value
    follow in scipy's order of operations."""
    size = x.size
    tx, ty = tie_groups(x), tie_groups(y)
    dis, ntie = _discordant_and_joint_ties(tx.group, ty.group, tx.sizes.size, ty.sizes.size)
    xtie, x0, x1 = _tie_stats(tx.sizes)
    ytie, y0, y1 = _tie_stats(ty.sizes)
    tot = (size * (size - 1)) // 2
    if xtie == tot or ytie == tot:
        return math.nan, math.nan
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = np.minimum(1.0, max(-1.0, tau))
    if xtie == 0 and ytie == 0 and (size <= 33 or min(dis, tot - dis) <= 1):
        pvalue = _kendall_p_exact(size, tot - dis)
    else:
        m = size * (size - 1.0)
        var = (m * (2 * size + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (size - 2))
        z = con_minus_dis / np.sqrt(var)
        pvalue = 2 * special.ndtr(-np.abs(z))
    return float(tau), float(pvalue)


def _kendall_p_exact(n: int, c: int) -> float:
    """The two-sided exact p-value of c concordant pairs among n untied items (Kendall's recursion, in
    scipy.stats' steps; the distribution is symmetric, so the left tail of min(c, pairs - c) is counted)."""
    c = int(min(c, (n * (n - 1)) // 2 - c))
    if n <= 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    elif n < 171:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new) / j
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = np.sum(new)
    return float(np.clip(prob, 0, 1))


def reference_statistic(method: CorrMethod, x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """(coefficient, p-value), scipy.stats' (the figure the bootstrap must reproduce); callers rule out
    constant input."""
    if method == "pearson":
        return pearsonr(x, y)
    if method == "spearman":
        return spearmanr(x, y)
    return kendalltau(x, y)


def reference_or_nan(method: CorrMethod, x: FloatArray, y: FloatArray) -> float:
    """The scipy coefficient, NaN when either side is exactly constant (as scipy's own result there)."""
    if float(np.ptp(x)) == 0.0 or float(np.ptp(y)) == 0.0:
        return math.nan
    return reference_statistic(method, x, y)[0]
