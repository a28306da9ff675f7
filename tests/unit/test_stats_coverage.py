"""Monte Carlo coverage of the intervals in services.stats (deterministic: fixed seeds).

Bivariate normal samples of n = 96 items (the size of the study). The number of data sets is chosen so that
binomial noise (about 1.96 * sqrt(.95 * .05 / N)) is small against the asserted bands; the whole file runs in
well under a minute on two CPUs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from services.stats import bootstrap_ci, kendall, pearson, spearman

pytestmark = pytest.mark.slow

N_ITEMS = 96
RHOS = (0.0, 0.3, 0.6)
FISHER_SETS = 4000  # per rho: binomial SE about 0.0035
BCA_SETS = 2500  # per rho, 7500 pooled: pooled SE about 0.0028
RANK_SETS = 3000
BCA_RESAMPLES = 1000


def _samples(seed: int, rho: float, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    z = np.random.default_rng(seed).standard_normal((k, 2, N_ITEMS))
    x = z[:, 0]
    return x, rho * x + math.sqrt(1 - rho * rho) * z[:, 1]


def _covers(low: float | None, high: float | None, truth: float) -> bool:
    assert low is not None and high is not None
    return low <= truth <= high


@pytest.mark.parametrize("rho", RHOS)
def test_fisher_interval_covers_95_percent(rho: float) -> None:
    x, y = _samples(1000 + int(rho * 10), rho, FISHER_SETS)
    hits = 0
    for xi, yi in zip(x, y, strict=True):
        res = pearson(xi, yi)
        hits += _covers(res.ci_low, res.ci_high, rho)
    assert 0.93 <= hits / FISHER_SETS <= 0.97


def test_pearson_bca_interval_covers_95_percent() -> None:
    # Measured with 6000 data sets per rho: 0.939 (rho 0), 0.936 (0.3), 0.938 (0.6). Pearson BCa at n = 96
    # under-covers by about one point; the pooled rate must still lie in the 93-97% band, and no single rho
    # may fall below 92% (3 binomial SE under the measured rate at 2500 data sets).
    pooled = 0
    for rho in RHOS:
        x, y = _samples(2000 + int(rho * 10), rho, BCA_SETS)
        hits = 0
        for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
            res = bootstrap_ci(xi, yi, n_resamples=BCA_RESAMPLES, seed=i)
            hits += _covers(res.low, res.high, rho)
        assert hits / BCA_SETS >= 0.92, rho
        pooled += hits
    assert 0.93 <= pooled / (BCA_SETS * len(RHOS)) <= 0.97


def test_rank_intervals_match_stats_md_coverage() -> None:
    # docs/statistics.md §2 (n = 96, rho = .5): Spearman Fieller .951, Bonett-Wright .955, Kendall .954.
    rho = 0.5
    rho_s = 6 / math.pi * math.asin(rho / 2)  # population Spearman rho of a bivariate normal
    tau = 2 / math.pi * math.asin(rho)  # population Kendall tau
    x, y = _samples(3000, rho, RANK_SETS)
    fieller = bonett_wright = kendall_hits = 0
    for xi, yi in zip(x, y, strict=True):
        s = spearman(xi, yi)
        fieller += _covers(s.ci_low, s.ci_high, rho_s)
        b = spearman(xi, yi, ci="bonett-wright")
        bonett_wright += _covers(b.ci_low, b.ci_high, rho_s)
        k = kendall(xi, yi)
        kendall_hits += _covers(k.ci_low, k.ci_high, tau)
    assert fieller / RANK_SETS == pytest.approx(0.951, abs=0.03)
    assert bonett_wright / RANK_SETS == pytest.approx(0.955, abs=0.03)
    assert kendall_hits / RANK_SETS == pytest.approx(0.954, abs=0.03)
