"""services.stats.stability against independent recomputation: pingouin's ICC, Spearman-Brown and the
disattenuation written out, the jackknife-t by question written out, and scipy's BCa bootstrap (or the BCa
formulas written out on a question bootstrap with the same seed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pingouin
import pytest
import scipy.stats

from services.stats import (
    DISATTENUATION_RULE,
    corrected_agreement,
    disattenuate,
    retest,
    spearman_brown,
)


def noisy_judge(n: int, k: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True quality per output, and k noisy askings of a judge on a 0-1 scale (outputs x repeats)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n)
    scores = np.clip(0.5 + 0.15 * (truth[:, None] + rng.normal(scale=noise, size=(n, k))), 0, 1)
    return truth, scores


def pingouin_icc(x: np.ndarray, kind: str) -> float:
    n, k = x.shape
    long = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": x.ravel()}
    )
    table = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score")
    return float(table.set_index("Type").loc[kind, "ICC"])


def written_icc(x: np.ndarray, kind: str) -> float:
    """McGraw & Wong's two-way ANOVA ICC(A,1) / ICC(A,k) of an items x raters matrix, written out with loops
    (pingouin is the check on whole data sets; this is fast enough for every resample)."""
    n, k = x.shape
    grand = sum(sum(row) for row in x) / (n * k)
    row_means = [sum(row) / k for row in x]
    col_means = [sum(x[i][j] for i in range(n)) / n for j in range(k)]
    ssr = k * sum((m - grand) ** 2 for m in row_means)
    ssc = n * sum((m - grand) ** 2 for m in col_means)
    sst = sum((x[i][j] - grand) ** 2 for i in range(n) for j in range(k))
    msr, msc, mse = ssr / (n - 1), ssc / (k - 1), (sst - ssr - ssc) / ((n - 1) * (k - 1))
    if kind == "ICC(A,1)":
        return float((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))
    return float((msr - mse) / (msr + (msc - mse) / n))


def written_sb(r: float, k: int) -> float:
    return k * r / (1 + (k - 1) * r)


def written_resamples(groups: list[object], b: int, seed: int) -> list[np.ndarray]:
    uniq = list(dict.fromkeys(groups))
    members = [np.flatnonzero(np.asarray([g == u for g in groups])) for u in uniq]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(b):
        pick = rng.integers(0, len(uniq), len(uniq))
        out.append(np.concatenate([members[j] for j in pick]))
    return out


def test_spearman_brown_and_disattenuation_are_the_written_rules() -> None:
    assert spearman_brown(0.5, 3) == pytest.approx(written_sb(0.5, 3))
    assert spearman_brown(0.6, 1) == pytest.approx(0.6)
    assert disattenuate(0.5, 0.81, 0.64) == pytest.approx(0.5 / (0.9 * 0.8))
    assert disattenuate(0.5, 0.0, 0.64) is None
    with pytest.raises(ValueError):
        spearman_brown(0.5, 0)


def written_jackknife_t(est: float, loo: list[float], to_z, from_z) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    g = len(loo)
    zs = np.array([to_z(v) for v in loo])
    se = math.sqrt((g - 1) / g * float(np.sum((zs - zs.mean()) ** 2)))
    t = float(scipy.stats.t.ppf(0.975, g - 1))
    return from_z(to_z(est) - t * se), from_z(to_z(est) + t * se)


def test_retest_icc_sd_and_reliability_match_pingouin_and_a_written_jackknife_by_question() -> None:
    _, x = noisy_judge(40, 3, 0.6, seed=1)
    # Two outputs per question for half of them: the jackknife leaves out questions, not outputs.
    groups: list[object] = [f"q{i // 2}" if i < 20 else f"q{i}" for i in range(40)]
    res = retest(x, groups)
    icc = pingouin_icc(x, "ICC(A,1)")
    assert res.icc_a1.estimate == pytest.approx(icc, abs=1e-12)
    sd = math.sqrt(float(np.mean([np.var(row, ddof=1) for row in x])))
    assert res.within_sd.estimate == pytest.approx(sd, abs=1e-12)
    assert res.reliability_of_mean.estimate == pytest.approx(written_sb(icc, 3), abs=1e-12)
    assert (res.n_outputs, res.n_questions, res.repeats, res.n_incomplete) == (40, 30, 3, 0)
    questions = list(dict.fromkeys(groups))
    leave_outs = [np.array([i for i, g in enumerate(groups) if g != q]) for q in questions]
    assert written_icc(x, "ICC(A,1)") == pytest.approx(icc, abs=1e-12)
    iccs = [written_icc(x[idx], "ICC(A,1)") for idx in leave_outs]

    def fisher(r: float) -> float:
        return 0.5 * math.log((1 + 2 * r) / (1 - r))

    def back(z: float) -> float:
        return (math.exp(2 * z) - 1) / (math.exp(2 * z) + 2)

    low, high = written_jackknife_t(icc, iccs, fisher, back)
    assert res.icc_a1.ci_method == "jackknife-t"
    assert (res.icc_a1.ci_low, res.icc_a1.ci_high) == pytest.approx((low, high), abs=1e-9)
    assert (res.reliability_of_mean.ci_low, res.reliability_of_mean.ci_high) == pytest.approx(
        (written_sb(low, 3), written_sb(high, 3)), abs=1e-9
    )
    sds = [math.sqrt(float(np.mean(np.var(x[idx], axis=1, ddof=1)))) for idx in leave_outs]
    assert (res.within_sd.ci_low, res.within_sd.ci_high) == pytest.approx(
        written_jackknife_t(sd, sds, math.log, math.exp), abs=1e-12
    )


def test_retest_interval_agrees_with_pingouins_f_interval_on_independent_outputs() -> None:
    # One output per question: McGraw & Wong's F interval (pingouin's CI95%) is valid there, and the
    # jackknife-t must land near it (both cover about 95 %: bench/stability_coverage.py).
    _, x = noisy_judge(300, 2, 0.8, seed=5)
    res = retest(x, list(range(300)))
    n, k = x.shape
    long = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": x.ravel()}
    )
    row = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score").set_index("Type")
    low, high = row.loc["ICC(A,1)", "CI95"]
    assert res.icc_a1.ci_low == pytest.approx(low, abs=0.03)
    assert res.icc_a1.ci_high == pytest.approx(high, abs=0.03)


def test_retest_interval_is_undefined_with_fewer_than_three_questions() -> None:
    _, x = noisy_judge(6, 2, 0.5, seed=8)
    res = retest(x, ["a", "a", "a", "b", "b", "b"])
    assert res.icc_a1.estimate is not None and res.icc_a1.ci_low is None
    assert "fewer than 3 questions" in (res.icc_a1.undefined_reason or "")


def test_retest_leaves_out_incomplete_outputs_and_says_why_it_is_undefined() -> None:
    _, x = noisy_judge(10, 2, 0.5, seed=2)
    x[3, 1] = np.nan
    res = retest(x, list(range(10)))
    assert (res.n_outputs, res.n_incomplete) == (9, 1)
    assert res.icc_a1.estimate == pytest.approx(pingouin_icc(np.delete(x, 3, axis=0), "ICC(A,1)"))
    one = retest(x[:, :1], list(range(10)))
    assert one.icc_a1.estimate is None and "repeats >= 2" in (one.undefined_reason or "")
    flat = retest(np.full((5, 3), 0.5), list(range(5)))
    assert flat.icc_a1.estimate is None and "same value" in (flat.undefined_reason or "")
    with pytest.raises(ValueError, match="groups"):
        retest(x, [0, 1])


def test_corrected_agreement_is_the_written_disattenuation_with_scipys_bca_interval() -> None:
    truth, x = noisy_judge(30, 3, 0.8, seed=3)
    rng = np.random.default_rng(4)
    ratings = np.vstack([truth + rng.normal(scale=0.7, size=30) for _ in range(2)])  # raters x outputs
    groups: list[object] = [f"q{i}" for i in range(30)]
    res = corrected_agreement(x, ratings, groups, n_resamples=100, seed=11)
    r = float(np.corrcoef(x.mean(axis=1), ratings.mean(axis=0))[0, 1])
    rel_h = pingouin_icc(ratings.T, "ICC(A,k)")
    rel_m = written_sb(pingouin_icc(x, "ICC(A,1)"), 3)
    assert res.raw_r.estimate == pytest.approx(r, abs=1e-12)
    assert res.rel_human == pytest.approx(rel_h, abs=1e-12)
    assert res.rel_metric == pytest.approx(rel_m, abs=1e-12)
    assert written_icc(ratings.T, "ICC(A,k)") == pytest.approx(rel_h, abs=1e-12)
    expected = r / math.sqrt(rel_h * rel_m)
    assert res.uncapped == pytest.approx(expected, abs=1e-12)
    assert res.corrected_r.estimate == pytest.approx(min(expected, 1.0), abs=1e-12)
    assert res.capped is (expected > 1)
    assert res.rule == DISATTENUATION_RULE

    # One output per question: the question bootstrap is scipy's item bootstrap, draw for draw.
    def corrected(i: np.ndarray) -> float:
        i = np.asarray(i, dtype=int)
        xb, hb = x[i], ratings[:, i]
        rb = float(np.corrcoef(xb.mean(axis=1), hb.mean(axis=0))[0, 1])
        return rb / math.sqrt(written_icc(hb.T, "ICC(A,k)") * written_sb(written_icc(xb, "ICC(A,1)"), 3))

    def raw(i: np.ndarray) -> float:
        i = np.asarray(i, dtype=int)
        return float(np.corrcoef(x[i].mean(axis=1), ratings[:, i].mean(axis=0))[0, 1])

    # Limits read at the small-sample expanded level 2 Phi(sqrt(G / (G - 1)) t_{G-1, 0.975}) - 1, G = 30.
    level = 2 * scipy.stats.norm.cdf(math.sqrt(30 / 29) * scipy.stats.t.ppf(0.975, 29)) - 1
    for stat, got, cap in ((corrected, res.corrected_r, 1.0), (raw, res.raw_r, math.inf)):
        ci = scipy.stats.bootstrap(
            (np.arange(30),), stat, vectorized=False, n_resamples=100, method="BCa",
            random_state=np.random.default_rng(11), confidence_level=level,
        ).confidence_interval  # fmt: skip
        assert got.ci_method == "bca"
        assert (got.ci_low, got.ci_high) == pytest.approx((min(ci.low, cap), min(ci.high, cap)), abs=1e-9)


def test_corrected_agreement_resamples_and_leaves_out_whole_questions() -> None:
    truth, x = noisy_judge(24, 2, 0.7, seed=9)
    rng = np.random.default_rng(10)
    ratings = np.vstack([truth + rng.normal(scale=0.6, size=24) for _ in range(2)])
    groups: list[object] = [i // 3 for i in range(24)]  # 8 questions of 3 outputs
    res = corrected_agreement(x, ratings, groups, n_resamples=120, seed=2)

    def raw(idx: np.ndarray) -> float:
        return float(np.corrcoef(x[idx].mean(axis=1), ratings[:, idx].mean(axis=0))[0, 1])

    draws = np.array([raw(idx) for idx in written_resamples(groups, 120, 2)])
    loo = np.array([raw(np.flatnonzero(np.asarray(groups) != q)) for q in range(8)])
    r = raw(np.arange(24))
    # BCa written out (Efron & Tibshirani 14.3; scipy's operations).
    z0 = scipy.stats.norm.ppf((np.sum(draws < r) + np.sum(draws <= r)) / (2 * draws.size))
    u = (loo.size - 1) * (loo.mean() - loo)
    a = np.sum(u**3) / loo.size**3 / (6 * (np.sum(u**2) / loo.size**2) ** 1.5)
    # At the expanded level of G = 8 questions: 2 Phi(sqrt(8 / 7) t_{7, 0.975}) - 1.
    level = 2 * scipy.stats.norm.cdf(math.sqrt(8 / 7) * scipy.stats.t.ppf(0.975, 7)) - 1
    za = scipy.stats.norm.ppf([(1 - level) / 2, (1 + level) / 2])
    probs = scipy.stats.norm.cdf(z0 + (z0 + za) / (1 - a * (z0 + za)))
    assert (res.raw_r.ci_low, res.raw_r.ci_high) == pytest.approx(tuple(np.quantile(draws, probs)), abs=1e-9)
    assert res.n_questions == 8
    plain = corrected_agreement(x, ratings, groups, n_resamples=120, seed=2, expand=False)
    za = scipy.stats.norm.ppf([0.025, 0.975])
    probs = scipy.stats.norm.cdf(z0 + (z0 + za) / (1 - a * (z0 + za)))
    assert (plain.raw_r.ci_low, plain.raw_r.ci_high) == pytest.approx(
        tuple(np.quantile(draws, probs)), abs=1e-9
    )


def test_a_correction_beyond_one_is_capped_and_flagged() -> None:
    # Noisy raters and a noisy judge tracking the same truth: the true corrected r is 1, and on this seed
    # the sampling error of the two reliabilities pushes the estimate above it (1.055 uncapped).
    rng = np.random.default_rng(1)
    truth = rng.normal(size=60)
    x = truth[:, None] + rng.normal(scale=1.0, size=(60, 2))
    ratings = np.vstack([truth + rng.normal(scale=1.0, size=60) for _ in range(2)])
    res = corrected_agreement(x, ratings, list(range(60)), n_resamples=200)
    assert res.uncapped is not None and res.uncapped > 1
    assert res.capped and res.corrected_r.estimate == 1.0
    assert res.corrected_r.ci_high is not None and res.corrected_r.ci_high <= 1.0


def test_corrected_agreement_needs_two_raters_and_two_repeats() -> None:
    _, x = noisy_judge(10, 2, 0.5, seed=6)
    one_rater = corrected_agreement(x, np.ones((1, 10)), list(range(10)), n_resamples=10)
    assert one_rater.corrected_r.estimate is None and "2 raters" in (one_rater.undefined_reason or "")
    with pytest.raises(ValueError, match="raters x outputs"):
        corrected_agreement(x, np.ones((2, 9)), list(range(10)), n_resamples=10)
