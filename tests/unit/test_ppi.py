"""services.ppi against the published closed forms (docs/statistics.md §7; PPI++ of Angelopoulos, Duchi &
Zrnic 2023 as ppi_py 0.2.3 computes it) and its jackknife SE against brute-force leave-one-out, all written
out here with numpy/scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from services import ppi

# docs/statistics.md §7.
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


def _lam(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    """PPI++'s lambda, unclipped: Cov(Y, f) over the rated (ddof 0) / ((1 + n/N) Var(f) over all, ddof 1)."""
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    return cov / ((1 + y.size / fu.size) * float(np.var(np.concatenate([f, fu]), ddof=1)))


def _theta(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    lam = _lam(y, f, fu)
    return lam * float(fu.mean()) + float(np.mean(y - lam * f))


def _jackknife_se(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    """Two-sample delete-one jackknife (Arvesen 1969) by brute force: theta with lambda re-tuned, leaving out
    each rated output, then each unrated output."""
    n, big_n = y.size, fu.size
    t_i = np.array([_theta(np.delete(y, i), np.delete(f, i), fu) for i in range(n)])
    t_j = np.array([_theta(y, f, np.delete(fu, j)) for j in range(big_n)])
    var = (n - 1) / n * np.sum((t_i - t_i.mean()) ** 2) + (big_n - 1) / big_n * np.sum(
        (t_j - t_j.mean()) ** 2
    )
    return math.sqrt(var)


def test_tuned_lambda_on_a_hand_case() -> None:
    # n = 4 rated, N = 2 unrated. Cov(Y, f) over the rated (ddof 0) = (0.45 + 0.05 + 0.05 + 0.45) / 4 = 1/4;
    # Var(f) over all six (ddof 1) = 0.23333.../5 = 7/150; lambda = (1/4) / ((1 + 4/2) * 7/150) = 25/14;
    # theta = lambda * 0.4 + (3.5 - lambda * 0.5) = 3.5 - 25/140 = 93/28.
    y, f, fu = [2, 4, 3, 5], [0.2, 0.6, 0.4, 0.8], [0.5, 0.3]
    res = ppi.ppi_mean(y, f, fu)
    assert res.lam == pytest.approx(25 / 14, abs=1e-12)
    assert res.estimate == pytest.approx(93 / 28, abs=1e-12)
    se = _jackknife_se(np.array(y, float), np.array(f), np.array(fu))
    assert res.se == pytest.approx(se, abs=1e-12)
    half = sps.t.ppf(0.975, 3) * se
    assert (res.ci_low, res.ci_high) == (pytest.approx(93 / 28 - half), pytest.approx(93 / 28 + half))
    assert res.df == 3
    # The plug-in interval (lambda treated as known): t(n - 2) with ddof-1 variances, by hand.
    old = ppi.ppi_mean(y, f, fu, se_method="plug-in")
    lam = 25 / 14
    r = [2 - lam * 0.2, 4 - lam * 0.6, 3 - lam * 0.4, 5 - lam * 0.8]
    rm = sum(r) / 4
    var_r = sum((x - rm) ** 2 for x in r) / 3
    se_old = math.sqrt(lam * lam * 0.02 / 2 + var_r / 4)
    assert (old.estimate, old.se, old.df) == (pytest.approx(93 / 28), pytest.approx(se_old, abs=1e-12), 2)
    assert old.ci_high - old.estimate == pytest.approx(sps.t.ppf(0.975, 2) * se_old)


@pytest.mark.parametrize(("n", "big_n", "seed"), [(3, 5, 0), (10, 90, 1), (25, 75, 2), (12, 2, 3)])
def test_jackknife_se_is_the_leave_one_out_variance(n: int, big_n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n + big_n)
    human = np.clip(np.round(3 + z + rng.normal(0, 0.6, z.size)), 1, 5)
    metric = np.round(np.clip(0.5 + 0.2 * z + rng.normal(0, 0.15, z.size), 0, 1), 2)
    y, f, fu = human[:n], metric[:n], metric[n:]
    res = ppi.ppi_mean(y, f, fu, confidence=0.9)
    assert res.estimate == pytest.approx(_theta(y, f, fu), abs=1e-12)
    assert res.se == pytest.approx(_jackknife_se(y, f, fu), rel=1e-9)
    half = sps.t.ppf(0.95, n - 1) * res.se
    assert (res.ci_low, res.ci_high) == (
        pytest.approx(res.estimate - half),
        pytest.approx(res.estimate + half),
    )
    # Vectorised over runs: the same figures row by row.
    many = ppi.ppi_intervals(
        np.stack([y, y[::-1]]), np.stack([f, f[::-1]]), np.stack([fu, fu]), confidence=0.9
    )
    assert many.se == pytest.approx([res.se, res.se], rel=1e-12)
    assert many.ci_low[0] == pytest.approx(res.ci_low, rel=1e-12)


def test_jackknife_with_one_unrated_output() -> None:
    # It cannot be left out: its share is lambda^2 Var(metric over all outputs) (ddof 1) / 1.
    y, f, fu = np.array([1.0, 3, 2, 5, 4]), np.array([0.1, 0.5, 0.2, 0.9, 0.6]), np.array([0.4])
    t_i = np.array([_theta(np.delete(y, i), np.delete(f, i), fu) for i in range(5)])
    lam = _lam(y, f, fu)
    var = 4 / 5 * np.sum((t_i - t_i.mean()) ** 2) + lam**2 * np.var(np.append(f, fu), ddof=1)
    assert ppi.ppi_mean(y, f, fu).se == pytest.approx(math.sqrt(var), rel=1e-12)


def test_jackknife_is_wider_than_the_plug_in_se_on_few_ratings() -> None:
    # lambda tuned on the rated outputs makes their residual variance as small as it can be: the plug-in SE
    # is optimistic with few ratings, the jackknife carries lambda's estimation (bench/ppi.py: coverage).
    rng = np.random.default_rng(7)
    ratios = []
    for _ in range(200):
        z = rng.normal(size=100)
        human = np.clip(np.round(3 + z + rng.normal(0, 0.6, 100)), 1, 5)
        metric = np.clip(0.5 + 0.2 * z + rng.normal(0, 0.1, 100), 0, 1)
        y, f, fu = human[:10], metric[:10], metric[10:]
        ratios.append(ppi.ppi_mean(y, f, fu).se / ppi.ppi_mean(y, f, fu, se_method="plug-in").se)
    assert np.mean(ratios) > 1.1


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


def test_plug_in_z_interval_is_ppi_pys_when_lambda_is_inside_0_1() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(1, 6, 40).astype(float)
    f = np.clip(y + rng.normal(0, 2.5, 40), 0, 6)  # same scale, noisy: lambda < 1
    fu = np.clip(rng.integers(1, 6, 200) + rng.normal(0, 2.5, 200), 0, 6)
    lam, lo, hi = _ppi_py_mean_ci(y, f, fu, 0.1)
    assert 0 < lam < 1
    res = ppi.ppi_mean(y, f, fu, confidence=0.9, quantile="z", se_method="plug-in")
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
    var_f_rated = float(np.var(f, ddof=1))
    width = [ppi.projected_width(n, 200, var_y, var_f, cov, 0.95, var_f_rated) for n in range(20, 201)]
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
