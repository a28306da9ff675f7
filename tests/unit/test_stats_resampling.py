"""Cluster bootstrap (resampling questions), bootstrap p-values and many differences from one reference."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats as sps
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from services import stats
from services.stats import bootstrap_ci, bootstrap_differences_many, bootstrap_p_value

A = np.array([0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40])
B = np.array([0.50, 0.45, 0.30, 0.60, 0.55, 0.40, 0.70, 0.65, 0.80, 0.35, 0.25, 0.75])
H = (
    np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 2, 4], dtype=float)
    + np.array([1, 1, 3, 3, 4, 4, 5, 5, 4, 2, 2, 3], dtype=float)
) / 2
METHODS: tuple[stats.CorrMethod, ...] = ("pearson", "spearman", "kendall")
REFERENCE: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], float]] = {
    "pearson": lambda x, y: float(sps.pearsonr(x, y).statistic),
    "spearman": lambda x, y: float(sps.spearmanr(x, y).statistic),
    "kendall": lambda x, y: float(sps.kendalltau(x, y).statistic),
}


def _pooled_study(seed: int = 4, q: int = 40) -> tuple[NDArray[np.float64], ...]:
    """Two runs of q questions: half the second run's answers repeat the first run's (same scores)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(2, q))
    quality[1, : q // 2] = quality[0, : q // 2]
    human = np.clip(np.round(3 + quality + rng.normal(0, 0.5, (2, q))), 1, 5)
    human[1, : q // 2] = human[0, : q // 2]
    metric = np.round(0.5 * quality + rng.normal(0, 0.8, (2, q)), 1)
    metric[1, : q // 2] = metric[0, : q // 2]
    questions = np.tile(np.arange(q), 2)
    return metric.ravel(), human.ravel(), questions


# ------------------------------------------------------------------------------------- cluster bootstrap


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["bca", "percentile"])
def test_two_identical_runs_give_the_interval_of_one(method: stats.CorrMethod, kind: str) -> None:
    one = bootstrap_ci(A, H, method, ci_method=kind, n_resamples=1500, seed=3)  # type: ignore[arg-type]
    twice = bootstrap_ci(
        np.tile(A, 2),
        np.tile(H, 2),
        method,
        ci_method=kind,  # type: ignore[arg-type]
        n_resamples=1500,
        seed=3,
        clusters=np.tile(np.arange(12), 2),
    )
    assert one.low is not None and twice.low is not None and one.high is not None and twice.high is not None
    assert (twice.low, twice.high) == (pytest.approx(one.low, abs=1e-9), pytest.approx(one.high, abs=1e-9))
    assert (twice.n, twice.n_clusters, one.n_clusters) == (24, 12, None)
    # Resampling the 24 outputs one by one is what the cluster bootstrap prevents: a falsely narrow interval.
    naive = bootstrap_ci(np.tile(A, 2), np.tile(H, 2), method, ci_method=kind, n_resamples=1500, seed=3)  # type: ignore[arg-type]
    assert naive.low is not None and naive.high is not None
    assert naive.high - naive.low < 0.85 * (one.high - one.low)


def test_singleton_clusters_are_the_item_bootstrap() -> None:
    plain = bootstrap_ci(A, H, "spearman", n_resamples=999, seed=1)
    labelled = bootstrap_ci(A, H, "spearman", n_resamples=999, seed=1, clusters=[f"q{i}" for i in range(12)])
    assert labelled == plain


def _naive_cluster_bca(
    x: NDArray[np.float64],
    h: NDArray[np.float64],
    clusters: NDArray[np.int64],
    method: str,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """The cluster BCa interval written out: a loop over resamples and left-out clusters, scipy statistics."""
    stat = REFERENCE[method]
    labels = np.unique(clusters)
    members = [np.flatnonzero(clusters == c) for c in labels]
    rng = np.random.default_rng(seed)
    theta = stat(x, h)
    boot = []
    for draw in rng.integers(0, labels.size, size=(n_resamples, labels.size)):
        idx = np.concatenate([members[c] for c in draw])
        boot.append(stat(x[idx], h[idx]) if np.ptp(x[idx]) and np.ptp(h[idx]) else np.nan)
    tb = np.array(boot)
    jack = np.array([stat(x[clusters != c], h[clusters != c]) for c in labels])
    z0 = ndtri((np.mean(tb < theta) + np.mean(tb <= theta)) / 2)
    u = (jack.size - 1) * (jack.mean() - jack)
    a = (u**3).sum() / 6 / ((u**2).sum()) ** 1.5
    za = ndtri(0.025)
    p = [ndtr(z0 + (z0 + zz) / (1 - a * (z0 + zz))) for zz in (za, -za)]
    low, high = np.quantile(tb, p)
    return float(low), float(high)


@pytest.mark.parametrize("method", METHODS)
def test_cluster_bca_equals_a_loop_over_clusters(method: stats.CorrMethod) -> None:
    metric, human, questions = _pooled_study()
    got = bootstrap_ci(metric, human, method, n_resamples=800, seed=9, clusters=questions)
    low, high = _naive_cluster_bca(metric, human, questions, method, 800, 9)
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert got.n_clusters == 40


def test_cluster_bootstrap_drops_incomplete_items_before_counting_clusters() -> None:
    metric, human, questions = _pooled_study()
    metric = metric.copy()
    metric[np.isin(questions, [0, 1])] = np.nan  # both outputs of two questions unscored
    got = bootstrap_ci(metric, human, n_resamples=300, seed=0, clusters=questions)
    assert (got.n, got.n_clusters) == (76, 38)


def test_too_few_clusters_is_undefined() -> None:
    got = bootstrap_ci([0.1, 0.5, 0.2, 0.9], [1, 3, 2, 4], n_resamples=100, clusters=[0, 0, 1, 1])
    assert got.low is None and got.undefined_reason is not None and "clusters" in got.undefined_reason


def test_clusters_must_label_every_item() -> None:
    with pytest.raises(ValueError, match="one label per item"):
        bootstrap_ci(A, H, clusters=[0, 1])


# ----------------------------------------------------------------------------------------- p-values


def test_percentile_p_value_is_the_share_beyond_the_null() -> None:
    tb = np.array([-0.2, 0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    # 1 of 8 below 0: two-sided p = 2 * 1/8
    assert bootstrap_p_value(tb, 0.5) == pytest.approx(0.25)
    assert bootstrap_p_value(tb + 1, 1.5) == pytest.approx(2 * 0.5 / 8)  # beyond every resample


@pytest.mark.parametrize("kind", ["percentile", "bca"])
def test_p_value_inverts_the_interval(kind: str) -> None:
    # At confidence 1 - p the interval of the same kind has 0 as one of its limits.
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    h = 0.9 * x + rng.normal(size=30)
    kernel = stats._kernel("pearson", x[None, :], h)
    units = stats._units(None, np.ones(30, dtype=bool))
    tb = stats._bootstrap_distribution(kernel, units, 4000, 0, 10**6)[0]
    jack = kernel.jackknife()[0] if kind == "bca" else None
    theta = REFERENCE["pearson"](x, h)
    p = bootstrap_p_value(tb, theta, jack)
    assert p is not None and 0.001 < p < 0.5
    limits = stats._interval(tb, theta, jack, 1 - p)
    assert not isinstance(limits, str)
    spacing = float(np.max(np.diff(np.sort(tb))))
    assert min(abs(limits[0]), abs(limits[1])) <= spacing
    # and the bootstrap CI object carries the same p
    res = bootstrap_ci(x, h, ci_method=kind, n_resamples=4000, seed=0)  # type: ignore[arg-type]
    assert res.p_value == pytest.approx(p, abs=1e-12)


# --------------------------------------------------------------------------- differences from a reference


@pytest.mark.parametrize("method", METHODS)
def test_differences_many_equal_single_scipy_calls(method: stats.CorrMethod) -> None:
    rng = np.random.default_rng(2)
    human = np.round(rng.normal(3, 1, 50) * 2) / 2
    ref = human + rng.normal(size=50)
    others = {f"m{j}": 0.5 * j * human + rng.normal(size=50) for j in range(3)}
    gappy = others["m1"].copy()
    gappy[[4, 7]] = np.nan
    others["gappy"] = gappy
    stat = REFERENCE[method]
    got = bootstrap_differences_many(ref, others, human, method, n_resamples=600, seed=4)
    for name, x in others.items():
        keep = np.isfinite(x)
        res = sps.bootstrap(
            (ref[keep], x[keep], human[keep]),
            lambda a, b, h: stat(a, h) - stat(b, h),
            paired=True,
            vectorized=False,
            method="BCa",
            n_resamples=600,
            rng=np.random.default_rng(4),
        )
        ci = res.confidence_interval
        assert (got[name].low, got[name].high) == (
            pytest.approx(float(ci.low), abs=1e-9),
            pytest.approx(float(ci.high), abs=1e-9),
        ), name
    assert got["gappy"].n == 48


def test_cluster_differences_of_two_identical_runs_equal_one_run() -> None:
    one = bootstrap_differences_many(A, {"B": B}, H, "spearman", n_resamples=700, seed=0)["B"]
    two = bootstrap_differences_many(
        np.tile(A, 2),
        {"B": np.tile(B, 2)},
        np.tile(H, 2),
        "spearman",
        n_resamples=700,
        seed=0,
        clusters=np.tile(np.arange(12), 2),
    )["B"]
    assert one.low is not None and one.high is not None
    assert (two.low, two.high) == (pytest.approx(one.low, abs=1e-9), pytest.approx(one.high, abs=1e-9))
    assert two.p_value == pytest.approx(one.p_value)


# ----------------------------------------------------------------------------- jackknife-t on Fisher's z


def _jackknife_t_reference(
    x: NDArray[np.float64], h: NDArray[np.float64], method: str, clusters: NDArray[np.int64]
) -> tuple[float, float, float]:
    """Leave each question out with scipy's coefficient, jackknife SE of atanh r, t quantile with G - 1 df."""
    stat = REFERENCE[method]
    labels = np.unique(clusters)
    z = np.array([np.arctanh(stat(x[clusters != g], h[clusters != g])) for g in labels])
    g = labels.size
    se = np.sqrt((g - 1) / g * np.sum((z - z.mean()) ** 2))
    t = sps.t.ppf(0.975, g - 1)
    centre = np.arctanh(stat(x, h))
    p = 2 * sps.t.sf(abs(centre) / se, g - 1)
    return float(np.tanh(centre - t * se)), float(np.tanh(centre + t * se)), float(p)


@pytest.mark.parametrize("method", METHODS)
def test_jackknife_t_by_question_equals_a_loop_over_questions(method: stats.CorrMethod) -> None:
    x, h, questions = _pooled_study()
    res = stats.jackknife_ci_many({"m": x}, h, method, clusters=questions)["m"]
    low, high, p = _jackknife_t_reference(x, h, method, questions)
    assert (res.low, res.high, res.p_value) == (pytest.approx(low), pytest.approx(high), pytest.approx(p))
    assert (res.n, res.n_clusters, res.df) == (80, 40, 39)
    # Items one by one (no clusters): the closed-form leave-one-item-out values give the same construction.
    alone = stats.jackknife_ci_many({"m": A}, H, method)["m"]
    low1, high1, _ = _jackknife_t_reference(A, H, method, np.arange(12))
    assert (alone.low, alone.high, alone.n_clusters) == (pytest.approx(low1), pytest.approx(high1), None)


@pytest.mark.parametrize("method", METHODS)
def test_jackknife_t_of_two_identical_runs_is_the_interval_of_one(method: stats.CorrMethod) -> None:
    one = stats.jackknife_ci_many({"a": A}, H, method)["a"]
    twice = stats.jackknife_ci_many(
        {"a": np.tile(A, 2)}, np.tile(H, 2), method, clusters=np.tile(np.arange(12), 2)
    )["a"]
    assert one.low is not None and one.high is not None
    assert (twice.low, twice.high) == (pytest.approx(one.low, abs=1e-9), pytest.approx(one.high, abs=1e-9))
    # Treating the 24 outputs as independent items narrows the interval.
    naive = stats.jackknife_ci_many({"a": np.tile(A, 2)}, np.tile(H, 2), method)["a"]
    assert naive.low is not None and naive.high is not None
    assert naive.high - naive.low < 0.8 * (one.high - one.low)


def test_jackknife_t_in_correlations_many_and_its_undefined_cases() -> None:
    x, h, questions = _pooled_study()
    res = stats.correlations_many({"m": x}, h, "spearman", ci="jackknife", clusters=questions)["m"]
    low, high, p = _jackknife_t_reference(x, h, "spearman", questions)
    assert (res.ci_method, res.p_method, res.n_clusters) == ("jackknife-t", "cluster jackknife", 40)
    assert (res.ci_low, res.ci_high, res.p_value) == (
        pytest.approx(low),
        pytest.approx(high),
        pytest.approx(p),
    )
    assert res.estimate == pytest.approx(sps.spearmanr(x, h).statistic)
    # Without clusters scipy's p stays.
    plain = stats.correlations_many({"a": A}, H, "pearson", ci="jackknife")["a"]
    assert (plain.p_method, plain.p_value) == ("scipy", pytest.approx(0.0061809251010300015))
    undefined = stats.jackknife_ci_many(
        {"perfect": H.copy(), "constant": np.ones(12), "few": np.r_[A[:2], [np.nan] * 10]}, H
    )
    assert undefined["perfect"].low is None and "perfect" in (undefined["perfect"].undefined_reason or "")
    assert undefined["constant"].undefined_reason == "constant input (x)"
    assert undefined["few"].low is None and undefined["few"].n == 2
    two_questions = stats.jackknife_ci_many({"a": A}, H, clusters=np.arange(12) % 2)["a"]
    assert "fewer than 3 distinct clusters" in (two_questions.undefined_reason or "")


# ------------------------------------------------------------------- jackknife-t of a difference


def _jackknife_difference_reference(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    h: NDArray[np.float64],
    method: str,
    clusters: NDArray[np.int64],
) -> tuple[float, float, float]:
    """d -+ t(G-1) se of d = r(a, h) - r(b, h): scipy's coefficients leaving each question out."""
    stat = REFERENCE[method]
    labels = np.unique(clusters)
    d = np.array(
        [stat(a[clusters != g], h[clusters != g]) - stat(b[clusters != g], h[clusters != g]) for g in labels]
    )
    g = labels.size
    se = np.sqrt((g - 1) / g * np.sum((d - d.mean()) ** 2))
    t = sps.t.ppf(0.975, g - 1)
    centre = stat(a, h) - stat(b, h)
    return float(centre - t * se), float(centre + t * se), float(2 * sps.t.sf(abs(centre) / se, g - 1))


@pytest.mark.parametrize("method", METHODS)
def test_jackknife_difference_equals_a_loop_over_items_and_questions(method: stats.CorrMethod) -> None:
    x, h, questions = _pooled_study()
    rng = np.random.default_rng(8)
    other = np.round(x + rng.normal(0, 1.0, x.size), 1)
    res = stats.jackknife_differences_many(x, {"o": other}, h, method, clusters=questions)["o"]
    low, high, p = _jackknife_difference_reference(x, other, h, method, questions)
    assert (res.low, res.high, res.p_value) == (pytest.approx(low), pytest.approx(high), pytest.approx(p))
    assert (res.n, res.n_clusters, res.df) == (80, 40, 39)
    # One item at a time without clusters, and missing values leave their item out of both coefficients.
    gappy = B.copy()
    gappy[[2, 7]] = np.nan
    alone = stats.jackknife_differences_many(A, {"B": B, "gappy": gappy}, H, method)
    low1, high1, p1 = _jackknife_difference_reference(A, B, H, method, np.arange(12))
    assert (alone["B"].low, alone["B"].high, alone["B"].p_value) == (
        pytest.approx(low1),
        pytest.approx(high1),
        pytest.approx(p1),
    )
    keep = np.isfinite(gappy)
    low2, high2, _ = _jackknife_difference_reference(A[keep], B[keep], H[keep], method, np.arange(10))
    assert (alone["gappy"].low, alone["gappy"].high, alone["gappy"].n) == (
        pytest.approx(low2),
        pytest.approx(high2),
        10,
    )
    # Two identical runs by question: the interval of one run, not a narrower one.
    twice = stats.jackknife_differences_many(
        np.tile(A, 2), {"B": np.tile(B, 2)}, np.tile(H, 2), method, clusters=np.tile(np.arange(12), 2)
    )["B"]
    assert (twice.low, twice.high) == (pytest.approx(low1), pytest.approx(high1))


def test_jackknife_difference_undefined_cases() -> None:
    res = stats.jackknife_differences_many(
        A, {"same": A.copy(), "constant": np.ones(12), "few": np.r_[B[:2], [np.nan] * 10]}, H
    )
    assert res["same"].low is None and "every leave-one-out difference is equal" in (
        res["same"].undefined_reason or ""
    )
    assert res["constant"].undefined_reason == "constant input (x)"
    assert res["few"].low is None and res["few"].n == 2
    two_questions = stats.jackknife_differences_many(A, {"B": B}, H, clusters=np.arange(12) % 2)["B"]
    assert "fewer than 3 distinct clusters" in (two_questions.undefined_reason or "")
    with pytest.raises(ValueError, match="reference has 11 values"):
        stats.jackknife_differences_many(A[:11], {"B": B}, H)


# ------------------------------------------------------------------ small-sample expanded bootstrap


def test_expanded_bootstrap_is_scipy_at_the_expanded_level_and_its_p_inverts_it() -> None:
    g = 12
    level = 2 * sps.norm.cdf(np.sqrt(g / (g - 1)) * sps.t.ppf(0.975, g - 1)) - 1
    assert stats.expanded_confidence(0.95, g) == pytest.approx(level, abs=1e-12)
    assert stats.expanded_confidence(0.95, 50) == pytest.approx(0.9577, abs=5e-4)
    assert stats.expanded_confidence(0.95, 10_000) == pytest.approx(0.95, abs=1e-4)
    with pytest.raises(ValueError, match="at least 2 units"):
        stats.expanded_confidence(0.95, 1)
    res = stats.bootstrap_ci_many({"a": A}, H, "spearman", n_resamples=2000, seed=1, expand=True)["a"]
    plain = stats.bootstrap_ci_many({"a": A}, H, "spearman", n_resamples=2000, seed=1)["a"]
    ref = sps.bootstrap(
        (A, H),
        REFERENCE["spearman"],
        paired=True,
        vectorized=False,
        method="BCa",
        n_resamples=2000,
        rng=np.random.default_rng(1),
        confidence_level=level,
    ).confidence_interval
    assert (res.low, res.high, res.level) == (pytest.approx(ref.low), pytest.approx(ref.high), level)
    assert res.confidence == 0.95 and plain.level is None
    assert res.low is not None and plain.low is not None and res.high is not None and plain.high is not None
    assert res.low < plain.low and res.high > plain.high
    # The plain interval reaches 0 at level 1 - p_plain; the expanded one at the nominal c whose expanded
    # level is that, so its p is 1 - c.
    assert plain.p_value is not None

    def expanded(v: float) -> float:
        return float(2 * sps.norm.cdf(np.sqrt(g / (g - 1)) * sps.t.ppf(0.5 + v / 2, g - 1)) - 1)

    c = brentq(lambda v: expanded(v) - (1 - plain.p_value), 0.01, 0.999999)
    assert res.p_value == pytest.approx(1 - c, abs=1e-9)
    # Clusters: G is the number of questions resampled.
    twice = stats.bootstrap_ci_many(
        {"a": np.tile(A, 2)},
        np.tile(H, 2),
        "spearman",
        n_resamples=2000,
        seed=1,
        clusters=np.tile(np.arange(g), 2),
        expand=True,
    )["a"]
    assert (twice.low, twice.high, twice.level) == (pytest.approx(ref.low), pytest.approx(ref.high), level)


@pytest.mark.parametrize("expand", [False, True])
def test_bootstrap_p_below_005_exactly_when_the_95_interval_leaves_0_out(expand: bool) -> None:
    """Small clustered data sets, some with 0 beyond every resample: p and the interval never disagree."""
    rng = np.random.default_rng(21)
    checked = beyond = 0
    for _ in range(150):
        g = int(rng.integers(12, 25))
        quality = rng.normal(size=g)
        human = np.repeat(np.round(3 + quality + rng.normal(0, 0.4, g)), 2)
        metric = np.repeat(rng.uniform(0.2, 1.2) * quality, 2) + rng.normal(0, 0.5, 2 * g)
        res = stats.bootstrap_ci_many(
            {"m": metric},
            human,
            "pearson",
            n_resamples=999,
            seed=int(rng.integers(1000)),
            clusters=np.repeat(np.arange(g), 2),
            expand=expand,
        )["m"]
        if res.low is None or res.high is None or res.p_value is None:
            continue
        checked += 1
        beyond += int(res.p_value == pytest.approx(1 / 999))
        if (res.p_value < 0.05) != (not res.low <= 0.0 <= res.high):
            # Only where 0 falls in the gap between the resample at the limit and its neighbour: p reads
            # the resamples' mid-rank there, the limit interpolates between the two.
            assert abs(res.p_value - 0.05) < 0.01, (g, res)
    assert checked > 90 and beyond > 0


def test_expanded_interval_is_undefined_when_its_tails_hold_too_few_resamples() -> None:
    g = 4  # level 0.99976: 0.24 of 2,000 resamples beyond each limit
    res = stats.bootstrap_ci_many(
        {"a": A}, H, "pearson", n_resamples=2000, clusters=np.arange(12) % g, expand=True
    )["a"]
    assert res.low is None and "fewer than 10 of 2000 resamples beyond each limit" in (
        res.undefined_reason or ""
    )
    plain = stats.bootstrap_ci_many({"a": A}, H, "pearson", n_resamples=2000, clusters=np.arange(12) % g)["a"]
    assert plain.low is not None


def test_p_of_a_null_beyond_every_resample_is_the_resolution() -> None:
    draws = np.linspace(0.2, 0.9, 500)
    jack = np.linspace(0.5, 0.6, 12)
    assert stats.bootstrap_p_value(draws, 0.55) == pytest.approx(1 / 500)
    assert stats.bootstrap_p_value(draws, 0.55, jack) == pytest.approx(1 / 500)
    assert stats.bootstrap_p_value(-draws, -0.55, jack) == pytest.approx(1 / 500)


@pytest.mark.parametrize("method", METHODS)
def test_jackknife_estimate_is_taken_on_the_items_of_its_interval(method: stats.CorrMethod) -> None:
    # A metric missing on two items: the difference and the coefficient are those of the ten complete
    # items, where the interval is; the interval is centred on the difference.
    gappy = B.copy()
    gappy[[0, 2]] = np.nan
    keep = np.isfinite(gappy)
    stat = REFERENCE[method]
    diff = stats.jackknife_differences_many(A, {"gappy": gappy}, H, method)["gappy"]
    on_both = stat(A[keep], H[keep]) - stat(B[keep], H[keep])
    assert diff.estimate == pytest.approx(on_both, abs=1e-12)
    assert stat(A, H) - stat(B[keep], H[keep]) != pytest.approx(on_both, abs=0.05)
    assert ((diff.low or 0) + (diff.high or 0)) / 2 == pytest.approx(on_both, abs=1e-12)
    coef = stats.jackknife_ci_many({"gappy": gappy}, H, method)["gappy"]
    assert coef.estimate == pytest.approx(stat(B[keep], H[keep]), abs=1e-12)
    # Every leave-one-out difference equal: no interval, the difference still shown.
    same = stats.jackknife_differences_many(A, {"same": A.copy()}, H, method)["same"]
    assert same.low is None and same.estimate == 0.0
