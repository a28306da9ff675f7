"""services.stats.reference against scipy.stats, to the last bit: the coefficients and p-values of Pearson,
Spearman and Kendall (ties, n from 3 to 3,000, Kendall's exact and asymptotic p-values), average ranks,
and the t, normal and F functions the statistics read, edges included. And what it is for: a fresh process
computing a report's figures does not import scipy.stats."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from scipy import stats as sps

from services.stats import reference

SIZES = [3, 4, 5, 7, 10, 20, 33, 34, 50, 200, 1000, 3000]


def identical(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def pairs(seed: int, count: int) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Continuous, 1-5 ratings, rounded scores (ties on both sides), and permutations with 0-2 swaps
    (Kendall's exact p-value at its extremes)."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.choice(SIZES))
        kind = ("continuous", "ratings", "rounded", "permutation")[i % 4]
        if kind == "continuous":
            x = rng.normal(size=n)
            y = x * rng.uniform(-1, 1) + rng.normal(size=n)
        elif kind == "ratings":
            x = rng.integers(1, 6, n).astype(float)
            y = rng.integers(1, 6, n).astype(float)
        elif kind == "rounded":
            x = rng.uniform(size=n).round(1)
            y = (x + rng.normal(scale=0.3, size=n)).round(2)
        else:
            x = rng.permutation(n).astype(float)
            y = x.copy()
            for _ in range(int(rng.integers(0, 3))):
                a, b = rng.integers(0, n, 2)
                y[a], y[b] = y[b], y[a]
            if rng.random() < 0.5:
                y = -y
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            yield kind, x, y


@pytest.mark.parametrize("name", ["pearsonr", "spearmanr", "kendalltau"])
def test_coefficients_and_p_values_are_scipys(name: str) -> None:
    theirs_of = getattr(sps, name)
    ours_of = getattr(reference, name)
    checked = {"continuous": 0, "ratings": 0, "rounded": 0, "permutation": 0}
    for kind, x, y in pairs(7, 1200):
        theirs = theirs_of(x, y)
        ours = ours_of(x, y)
        assert identical(ours[0], float(theirs.statistic)), (name, kind, x.size, ours, theirs)
        assert identical(ours[1], float(theirs.pvalue)), (name, kind, x.size, ours, theirs)
        checked[kind] += 1
    assert min(checked.values()) > 200


def test_kendall_takes_scipys_exact_p_value_where_scipy_does() -> None:
    # No ties and n <= 33: the exact null distribution; n = 34 with all pairs concordant but one as well.
    x = np.arange(34, dtype=float)
    y = x.copy()
    y[[0, 1]] = y[[1, 0]]
    for a, b in ((x[:12], y[:12]), (x, y), (x[:5], -y[:5])):
        assert reference.kendalltau(a, b) == tuple(float(v) for v in sps.kendalltau(a, b))


def test_average_ranks_are_scipys() -> None:
    for _, x, y in pairs(11, 200):
        assert np.array_equal(reference.rankdata(x), sps.rankdata(x))
        assert np.array_equal(reference.rankdata(y), sps.rankdata(y))


def test_distribution_functions_are_scipys_edges_included() -> None:
    rng = np.random.default_rng(3)
    xs = [*rng.normal(scale=5, size=120), 0.0, -0.0, math.inf, -math.inf, math.nan, 1e-300, 40.0, -40.0]
    qs = [*rng.uniform(size=80), 0.0, 1.0, 0.5, 1e-12, 1 - 1e-12, math.nan, -0.1, 1.1]
    dfs = [1, 2, 3, 4.5, 10, 29, 99, 1000, math.inf, 0, -1, math.nan]
    for x in xs:
        assert identical(reference.norm_sf(x), float(sps.norm.sf(x))), x
        for df in dfs[:8]:
            assert identical(reference.t_sf(x, df), float(sps.t.sf(x, df))), (x, df)
        for a in dfs:
            for b in dfs:
                assert identical(float(reference.f_sf(x, a, b)), float(sps.f.sf(x, a, b))), (x, a, b)
    for q in qs:
        for df in dfs[:8]:
            if 0 < q < 1:
                assert identical(reference.t_quantile(q, df), float(sps.t.ppf(q, df))), (q, df)
        for a in dfs:
            for b in dfs:
                assert identical(float(reference.f_ppf(q, a, b)), float(sps.f.ppf(q, a, b))), (q, a, b)


def test_a_fresh_process_computing_a_reports_figures_does_not_import_scipy_stats() -> None:
    # Correlations (analytic intervals, the three methods), the comparison of two metrics, the raters'
    # agreement (ICCs), pass/fail with DeLong's AUC, and a drill-down's percentiles: what the correlation
    # report computes. scipy.stats' import was ~0.5 s of a fresh process's first report.
    code = """
import sys
import numpy as np
from services import stats
from services.reports.drilldown import _percentiles
rng = np.random.default_rng(0)
h = rng.integers(1, 6, 60).astype(float)
a, b = h + rng.normal(size=60), rng.normal(size=60)
for method in ("pearson", "spearman", "kendall"):
    stats.correlation(a, h, method)
    stats.compare_correlations(a, b, h, method=method, n_resamples=0)
r = np.vstack([h, np.clip(h + rng.integers(-1, 2, 60), 1, 5)])
stats.agreement(r, ["a", "b"], 1, 5, n_resamples=20)
stats.pass_fail(a, h, 4.0, n_resamples=50)
_percentiles(list(a))
print("scipy.stats" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
