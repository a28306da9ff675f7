"""services.ppi against the published closed forms (STATS.md section 7; PPI++ of Angelopoulos, Duchi & Zrnic
2023 as ppi_py 0.2.3 computes it, written out here with numpy/scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from services import ppi

# STATS.md section 7.
Y7 = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
F7 = [1, 1, 1, 1, 1, 1, 1, 0, 1, 1]
U7 = [1, 1, 1, 1, 0, 1, 1, 1, 1, 0] * 4


def test_plain_ppi_is_stats_md_section_7() -> None:
    res = ppi.ppi_mean(Y7, F7, U7, lam=1.0, quantile="z")
    assert res.estimate == pytest.approx(0.6, abs=1e-12)
    assert res.se == pytest.approx(0.14142135623730953, abs=1e-12)
    assert (res.ci_low, res.ci_high) == (
        pytest.approx(0.3228192351300645, abs=1e-12),
        pytest.approx(0.8771807648699357, abs=1e-12),
    )


def test_tuned_lambda_on_a_hand_case() -> None:
    # n = 4 rated, N = 2 unrated. Cov(Y, f) over the rated (ddof 0) = (0.45 + 0.05 + 0.05 + 0.45) / 4 = 1/4;
    # Var(f) over all six (ddof 1) = 0.23333.../5 = 7/150; lambda = (1/4) / ((1 + 4/2) * 7/150) = 25/14;
    # theta = lambda * 0.4 + (3.5 - lambda * 0.5) = 3.5 - 25/140 = 93/28.
    y, f, fu = [2, 4, 3, 5], [0.2, 0.6, 0.4, 0.8], [0.5, 0.3]
    res = ppi.ppi_mean(y, f, fu)
    assert res.lam == pytest.approx(25 / 14, abs=1e-12)
    assert res.estimate == pytest.approx(93 / 28, abs=1e-12)
    lam = 25 / 14
    # t(n - 2) with ddof-1 variances: Var(lam * fu) = lam^2 * 0.02, Var(y - lam f) by hand below.
    r = [2 - lam * 0.2, 4 - lam * 0.6, 3 - lam * 0.4, 5 - lam * 0.8]
    rm = sum(r) / 4
    var_r = sum((x - rm) ** 2 for x in r) / 3
    se = math.sqrt(lam * lam * 0.02 / 2 + var_r / 4)
    assert res.se == pytest.approx(se, abs=1e-12)
    half = sps.t.ppf(0.975, 2) * se
    assert (res.ci_low, res.ci_high) == (pytest.approx(93 / 28 - half), pytest.approx(93 / 28 + half))
    assert res.df == 2


def _ppi_py_mean_ci(y: np.ndarray, f: np.ndarray, fu: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """ppi_py 0.2.3 ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha, lam=None), one dimension, written out:
    lambda from _calc_lam_glm (clip=True), point estimate, then _zconfint_generic with ddof-0 stds."""
    n, big_n = y.size, fu.size
    theta1 = fu.mean() + (y - f).mean()
    g, gh = y - theta1, f - theta1
    num = (1 / n) * 2 * float((g - g.mean()) @ (gh - gh.mean()))  # cov_grads = (1/n)(g'h + h'g)
    denom = 2 * (1 + n / big_n) * float(np.cov(np.concatenate([gh, fu - theta1])))
    lam = float(np.clip(num / denom, 0, 1))
    est = (lam * fu).mean() + (y - lam * f).mean()
    se = math.sqrt(((lam * fu).std() / math.sqrt(big_n)) ** 2 + ((y - lam * f).std() / math.sqrt(n)) ** 2)
    z = sps.norm.ppf(1 - alpha / 2)
    return lam, est - z * se, est + z * se


def test_tuned_z_interval_is_ppi_pys_when_lambda_is_inside_0_1() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(1, 6, 40).astype(float)
    f = np.clip(y + rng.normal(0, 2.5, 40), 0, 6)  # same scale, noisy: lambda < 1
    fu = np.clip(rng.integers(1, 6, 200) + rng.normal(0, 2.5, 200), 0, 6)
    lam, lo, hi = _ppi_py_mean_ci(y, f, fu, 0.1)
    assert 0 < lam < 1
    res = ppi.ppi_mean(y, f, fu, confidence=0.9, quantile="z")
    assert res.lam == pytest.approx(lam, abs=1e-12)
    assert (res.ci_low, res.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


def test_lambda_is_not_clipped_for_a_metric_on_another_scale_or_reversed() -> None:
    rng = np.random.default_rng(4)
    z = rng.normal(size=300)
    human = np.clip(np.round(3 + z), 1, 5)
    metric = np.clip(0.5 + 0.2 * z + rng.normal(0, 0.05, 300), 0, 1)
    y, f, fu = human[:60], metric[:60], metric[60:]
    res = ppi.ppi_mean(y, f, fu)
    assert res.lam > 1  # the slope of a 1-5 score on a 0-1 metric
    assert ppi.ppi_mean(y, 1 - f, 1 - fu).lam == pytest.approx(-res.lam)
    assert ppi.ppi_mean(y, 1 - f, 1 - fu).estimate == pytest.approx(res.estimate)
    assert res.width < ppi.rated_mean(y).width


def test_rated_mean_is_the_t_interval() -> None:
    y = np.array([3, 4, 4.5, 2, 5, 3.5, 1.5])
    res = ppi.rated_mean(y, confidence=0.9)
    lo, hi = sps.t.interval(0.9, y.size - 1, loc=y.mean(), scale=sps.sem(y))
    assert (res.estimate, res.ci_low, res.ci_high) == (
        pytest.approx(y.mean()),
        pytest.approx(lo, abs=1e-12),
        pytest.approx(hi, abs=1e-12),
    )
    assert res.lam == 0.0


def test_plan_width_finds_the_smallest_number_of_ratings() -> None:
    rng = np.random.default_rng(5)
    z = rng.normal(size=200)
    y = np.clip(np.round(3 + z[:20]), 1, 5)
    m = np.clip(0.5 + 0.2 * z + rng.normal(0, 0.1, 200), 0, 1)
    f, fu = m[:20], m[20:]
    var_y, var_f = float(np.var(y, ddof=1)), float(np.var(m, ddof=1))
    cov = float(np.cov(y, f)[0, 1])
    target = 0.4
    plan = ppi.plan_width(y, f, fu, target)
    assert plan.n_rated_needed is not None and plan.more_ratings == plan.n_rated_needed - 20
    width = [ppi.projected_width(n, 200, var_y, var_f, cov, 0.95) for n in range(20, 201)]
    assert width[plan.n_rated_needed - 20] <= target < width[plan.n_rated_needed - 21]
    # Everything rated: the rated-only t interval on 200 outputs with the same SD.
    assert plan.width_if_all_rated == pytest.approx(2 * sps.t.ppf(0.975, 199) * math.sqrt(var_y / 200))
    assert ppi.plan_width(y, f, fu, 0.01).n_rated_needed is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([1, 2], [0.1, 0.2], [0.3]), "at least 3"),
        (([1, 2, 3], [0.1, 0.2], [0.3]), "3 ratings for 2"),
        (([1, 2, 3], [0.1, 0.2, 0.3], []), "unrated"),
        (([1, 2, float("nan")], [0.1, 0.2, 0.3], [0.3]), "missing"),
    ],
)
def test_bad_input(args: tuple[list[float], ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ppi.ppi_mean(*args)
