"""The active PPI estimator and the active policy's pieces (services/active_ppi.py), against written-out
computations: the weighted difference estimator and its two-sample jackknife by plain loops, the uniform
special case against services.ppi, and the probabilities' floor and scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from services import active_ppi, ppi


def _written_out(
    y: list[float], f: list[float], pi: list[float], fu: list[float], confidence: float = 0.95
) -> tuple[float, float, float, float]:
    """theta, SE, ci_low, ci_high by loops over plain Python lists (docs/statistics.md, active PPI)."""

    def theta(ys: list[float], fs: list[float], ps: list[float], us: list[float]) -> float:
        w = [1.0 / p for p in ps]
        sw = sum(w)
        my = sum(wi * yi for wi, yi in zip(w, ys, strict=True)) / sw
        mf = sum(wi * fi for wi, fi in zip(w, fs, strict=True)) / sw
        cov = sum(wi * (yi - my) * (fi - mf) for wi, yi, fi in zip(w, ys, fs, strict=True)) / sw
        every = fs + us
        mean_all = sum(every) / len(every)
        var_all = sum((v - mean_all) ** 2 for v in every) / (len(every) - 1)
        lam = cov / var_all if var_all > 1e-12 * max(sum(v * v for v in every) / len(every), 1e-300) else 0.0
        resid = sum(wi * (yi - lam * fi) for wi, yi, fi in zip(w, ys, fs, strict=True)) / sw
        return lam * mean_all + resid

    est = theta(y, f, pi, fu)
    n, big_n = len(y), len(fu)
    left_rated = [theta(y[:i] + y[i + 1 :], f[:i] + f[i + 1 :], pi[:i] + pi[i + 1 :], fu) for i in range(n)]
    left_unrated = [theta(y, f, pi, fu[:j] + fu[j + 1 :]) for j in range(big_n)]
    mr, mu = sum(left_rated) / n, sum(left_unrated) / big_n
    var = (n - 1) / n * sum((t - mr) ** 2 for t in left_rated)
    var += (big_n - 1) / big_n * sum((t - mu) ** 2 for t in left_unrated)
    se = math.sqrt(var)
    q = float(sps.t.ppf(0.5 + confidence / 2, n - 1))
    return est, se, est - q * se, est + q * se


@pytest.mark.parametrize(("n", "big_n", "seed"), [(5, 12, 0), (12, 40, 1), (30, 7, 2)])
def test_estimator_against_a_written_out_ipw_ppi_computation(n: int, big_n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    f = rng.random(n + big_n)
    y = np.clip(np.round(1 + 4 * f[:n] + rng.normal(0, 1, n)), 1, 5)
    pi = rng.uniform(0.05, 1.0, n)
    got = active_ppi.active_mean(y, f[:n], pi, f[n:])
    want = _written_out(list(y), list(f[:n]), list(pi), list(f[n:]))
    assert (got.estimate, got.se, got.ci_low, got.ci_high) == pytest.approx(want, rel=1e-10, abs=1e-12)
    assert got.df == n - 1


@pytest.mark.parametrize(("n", "big_n"), [(3, 1), (10, 90), (25, 75), (40, 2)])
def test_equal_probabilities_reproduce_the_uniform_ppi_estimate_exactly(n: int, big_n: int) -> None:
    rng = np.random.default_rng(n * 100 + big_n)
    f = np.round(rng.random(n + big_n), 2)
    y = np.clip(np.round(1 + 3 * f[:n] + rng.normal(0, 0.8, n)), 1, 5)
    uniform = ppi.ppi_mean(y, f[:n], f[n:])
    for pi in (n / (n + big_n), 0.37, 1.0):  # pi = n/N, or any constant: the weights cancel
        active = active_ppi.active_mean(y, f[:n], np.full(n, pi), f[n:])
        for field in ("estimate", "se", "ci_low", "ci_high", "lam"):
            assert getattr(active, field) == pytest.approx(getattr(uniform, field), rel=1e-12, abs=1e-12)
        assert active.df == uniform.df


def test_unequal_probabilities_weight_the_rated_outputs() -> None:
    # A metric that says nothing (constant): lambda' = 0 and the estimate is the Hajek mean of the ratings.
    y = np.array([1.0, 2.0, 5.0, 4.0])
    pi = np.array([0.5, 0.25, 1.0, 0.5])
    got = active_ppi.active_mean(y, np.ones(4), pi, np.ones(6))
    w = 1 / pi
    assert got.estimate == pytest.approx(float((w * y).sum() / w.sum()))
    assert got.lam == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([1, 2], [0.1, 0.2], [0.5, 0.5], [0.3]), "at least 3"),
        (([1, 2, 3], [0.1, 0.2, 0.3], [0.5, 0.0, 0.5], [0.3]), "in \\(0, 1\\]"),
        (([1, 2, 3], [0.1, 0.2, 0.3], [0.5, 1.5, 0.5], [0.3]), "in \\(0, 1\\]"),
        (([1, 2, 3], [0.1, 0.2, 0.3], [0.5, 0.5], [0.3]), "probabilities"),
        (([1, 2, 3], [0.1, 0.2, 0.3], [0.5, 0.5, 0.5], []), "unrated"),
        (([1, 2, float("nan")], [0.1, 0.2, 0.3], [0.5, 0.5, 0.5], [0.3]), "missing"),
    ],
)
def test_bad_inputs_say_what_is_wrong(args: tuple[list[float], ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        active_ppi.active_mean(*args)


def test_probabilities_are_floored_capped_and_scaled_to_the_budget() -> None:
    least = active_ppi.pi_min(20, 200, 0.5)
    assert least == pytest.approx(0.05)
    assert active_ppi.inclusion_probability(0.1, 1.0, 20, 200, least) == least  # 0.01, floored
    assert active_ppi.inclusion_probability(50.0, 1.0, 20, 200, least) == 1.0  # 5.0, capped
    u2 = np.array([0.5, 1.0, 1.5])
    assert active_ppi.inclusion_probability(1.5, float(u2.mean()), 20, 200, least) == pytest.approx(0.15)
    # A constant uncertainty is uniform sampling at budget / total.
    assert active_ppi.inclusion_probability(2.0, 2.0, 20, 200, least) == pytest.approx(0.1)


def test_uncertainty_fit_is_uniform_until_enough_ratings_and_follows_a_clear_pattern() -> None:
    assert active_ppi.fit_uncertainty([1, 2, 3], [0.1, 0.2, 0.3]).uniform
    rng = np.random.default_rng(3)
    f = rng.random(400)
    # Residual SD grows with the metric: the fit must score high-metric outputs as more uncertain.
    y = 1 + 2 * f + rng.normal(0, 0.1 + 2 * f)
    fit = active_ppi.fit_uncertainty(y, f)
    assert not fit.uniform
    u = fit.score([0.05, 0.5, 0.95])
    assert u[0] < u[1] < u[2]
    # Constant residual variance: the shrinkage keeps the scores close to one another.
    y2 = 1 + 2 * f + rng.normal(0, 1, 400)
    u2 = active_ppi.fit_uncertainty(y2, f).score(np.linspace(0, 1, 11))
    assert u2.max() / u2.min() < 1.3


def test_the_stream_is_fixed_by_the_seed() -> None:
    assert active_ppi.stream_order(50, 7) == active_ppi.stream_order(50, 7)
    assert sorted(active_ppi.stream_order(50, 7)) == list(range(50))
    assert active_ppi.stream_order(50, 7) != active_ppi.stream_order(50, 8)


def test_simulated_policy_records_a_probability_for_every_output() -> None:
    rng = np.random.default_rng(5)
    f = rng.random(300)
    y = np.clip(np.round(1 + 4 * f + rng.normal(0, 1, 300)), 1, 5)
    rated, pis = active_ppi.draw_stream(rng, y, f, budget=60, floor=0.5, refit_every=10)
    assert (pis >= active_ppi.pi_min(60, 300, 0.5)).all() and (pis <= 1).all()
    assert 30 <= rated.sum() <= 90
    res = active_ppi.active_mean(y[rated], f[rated], pis[rated], f[~rated])
    assert res.ci_low < res.estimate < res.ci_high


def _written_out_r(y: list[float], f: list[float], pi: list[float]) -> float:
    """The 1/pi weighted Pearson r by loops: weighted means, variances and covariance, then their ratio."""
    w = [1.0 / p for p in pi]
    sw = sum(w)
    my = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / sw
    mf = sum(wi * fi for wi, fi in zip(w, f, strict=True)) / sw
    cov = sum(wi * (yi - my) * (fi - mf) for wi, yi, fi in zip(w, y, f, strict=True)) / sw
    vy = sum(wi * (yi - my) ** 2 for wi, yi in zip(w, y, strict=True)) / sw
    vf = sum(wi * (fi - mf) ** 2 for wi, fi in zip(w, f, strict=True)) / sw
    return cov / math.sqrt(vy * vf)


@pytest.mark.parametrize(("n", "seed"), [(4, 0), (9, 1), (40, 2)])
def test_correlation_against_a_written_out_weighted_computation(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    f = np.round(rng.random(n), 2)
    y = np.clip(np.round(1 + 4 * f + rng.normal(0, 1, n)), 1, 5)
    y[:2] = [1.0, 5.0]  # never constant
    pi = rng.uniform(0.05, 1.0, n)
    got = active_ppi.active_correlation(y, f, pi)
    assert not isinstance(got, str)
    r = _written_out_r(list(y), list(f), list(pi))
    # Jackknife on Fisher's z over the rated outputs, each left out with its weight; t(n - 1).
    z = [
        math.atanh(_written_out_r(list(np.delete(y, i)), list(np.delete(f, i)), list(np.delete(pi, i))))
        for i in range(n)
    ]
    zbar = sum(z) / n
    se = math.sqrt((n - 1) / n * sum((v - zbar) ** 2 for v in z))
    q = float(sps.t.ppf(0.975, n - 1))
    want = (r, se, math.tanh(math.atanh(r) - q * se), math.tanh(math.atanh(r) + q * se))
    assert (got.estimate, got.se_z, got.ci_low, got.ci_high) == pytest.approx(want, rel=1e-10, abs=1e-12)
    assert got.n_rated == n and got.width == pytest.approx(want[3] - want[2])


@pytest.mark.parametrize(("n", "pi"), [(4, 0.2), (25, 0.5), (60, 1.0), (60, 0.013)])
def test_equal_probabilities_reproduce_pearsons_r_exactly(n: int, pi: float) -> None:
    rng = np.random.default_rng(n)
    f = np.round(rng.random(n), 2)
    y = np.clip(np.round(1 + 3 * f + rng.normal(0, 0.8, n)), 1, 5)
    y[:2] = [1.0, 5.0]
    got = active_ppi.active_correlation(y, f, np.full(n, pi))
    assert not isinstance(got, str)
    assert got.estimate == pytest.approx(float(sps.pearsonr(f, y).statistic), rel=1e-12, abs=1e-14)
    # and the interval is the item-level jackknife-t on Fisher's z of services.stats.correlations
    from services.stats.correlations import jackknife_ci_many

    jk = jackknife_ci_many({"m": f}, y)["m"]
    assert (got.ci_low, got.ci_high) == pytest.approx((jk.low, jk.high), rel=1e-10)


def test_unequal_probabilities_change_the_correlation() -> None:
    # Outputs drawn with a small probability stand for many: their weight pulls r towards their pattern.
    f = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    y = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 1.0, 4.0, 5.0])
    equal = active_ppi.active_correlation(y, f, np.full(8, 0.5))
    tilted = active_ppi.active_correlation(y, f, np.array([0.5] * 5 + [0.05] + [0.5] * 2))
    assert not isinstance(equal, str) and not isinstance(tilted, str)
    assert tilted.estimate < equal.estimate
    assert tilted.estimate == pytest.approx(_written_out_r(list(y), list(f), [0.5] * 5 + [0.05] + [0.5] * 2))


@pytest.mark.parametrize(
    ("y", "f", "reason"),
    [
        ([1.0, 2.0, 3.0], [0.1, 0.2, 0.4], "at least 4"),
        ([3.0, 3.0, 3.0, 3.0], [0.1, 0.2, 0.4, 0.5], "constant"),
        ([1.0, 2.0, 3.0, 4.0], [0.1, 0.2, 0.3, 0.4], "perfect"),
    ],
)
def test_an_undefined_correlation_says_why(y: list[float], f: list[float], reason: str) -> None:
    got = active_ppi.active_correlation(y, f, [0.5] * len(y))
    assert isinstance(got, str) and reason in got


def test_fisher_width_is_the_uniform_designs_interval() -> None:
    w = active_ppi.fisher_width(0.6, 96, 0.95)
    assert w == pytest.approx(0.2604, abs=5e-4)  # docs/statistics.md section 8: r = .6, n = 96
    assert active_ppi.fisher_width(0.6, 3, 0.95) is None
