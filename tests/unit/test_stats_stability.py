"""services.stats.stability against independent recomputation: pingouin's ICC, Spearman-Brown and the
disattenuation written out, and a question bootstrap written out with the same seed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pingouin
import pytest

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


def test_retest_icc_sd_and_reliability_match_pingouin_and_a_written_bootstrap() -> None:
    _, x = noisy_judge(40, 3, 0.6, seed=1)
    # Two outputs per question for half of them: the bootstrap draws questions, not outputs.
    groups: list[object] = [f"q{i // 2}" if i < 20 else f"q{i}" for i in range(40)]
    res = retest(x, groups, n_resamples=150, seed=7)
    icc = pingouin_icc(x, "ICC(A,1)")
    assert res.icc_a1.estimate == pytest.approx(icc, abs=1e-12)
    sd = math.sqrt(float(np.mean([np.var(row, ddof=1) for row in x])))
    assert res.within_sd.estimate == pytest.approx(sd, abs=1e-12)
    assert res.reliability_of_mean.estimate == pytest.approx(written_sb(icc, 3), abs=1e-12)
    assert (res.n_outputs, res.n_questions, res.repeats, res.n_incomplete) == (40, 30, 3, 0)
    draws = [pingouin_icc(x[idx], "ICC(A,1)") for idx in written_resamples(groups, 150, 7)]
    low, high = np.quantile(draws, [0.025, 0.975])
    assert (res.icc_a1.ci_low, res.icc_a1.ci_high) == pytest.approx((low, high), abs=1e-9)
    sb = [written_sb(d, 3) for d in draws]
    assert (res.reliability_of_mean.ci_low, res.reliability_of_mean.ci_high) == pytest.approx(
        tuple(np.quantile(sb, [0.025, 0.975])), abs=1e-9
    )
    sds = [
        math.sqrt(float(np.mean(np.var(x[idx], axis=1, ddof=1)))) for idx in written_resamples(groups, 150, 7)
    ]
    assert (res.within_sd.ci_low, res.within_sd.ci_high) == pytest.approx(
        tuple(np.quantile(sds, [0.025, 0.975])), abs=1e-12
    )


def test_retest_leaves_out_incomplete_outputs_and_says_why_it_is_undefined() -> None:
    _, x = noisy_judge(10, 2, 0.5, seed=2)
    x[3, 1] = np.nan
    res = retest(x, list(range(10)), n_resamples=50)
    assert (res.n_outputs, res.n_incomplete) == (9, 1)
    assert res.icc_a1.estimate == pytest.approx(pingouin_icc(np.delete(x, 3, axis=0), "ICC(A,1)"))
    one = retest(x[:, :1], list(range(10)), n_resamples=50)
    assert one.icc_a1.estimate is None and "repeats >= 2" in (one.undefined_reason or "")
    flat = retest(np.full((5, 3), 0.5), list(range(5)), n_resamples=50)
    assert flat.icc_a1.estimate is None and "same value" in (flat.undefined_reason or "")
    with pytest.raises(ValueError, match="groups"):
        retest(x, [0, 1], n_resamples=10)


def test_corrected_agreement_is_the_written_disattenuation_with_a_written_bootstrap() -> None:
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
    expected = r / math.sqrt(rel_h * rel_m)
    assert res.uncapped == pytest.approx(expected, abs=1e-12)
    assert res.corrected_r.estimate == pytest.approx(min(expected, 1.0), abs=1e-12)
    assert res.capped is (expected > 1)
    assert res.rule == DISATTENUATION_RULE
    draws = []
    for idx in written_resamples(groups, 100, 11):
        xb, hb = x[idx], ratings[:, idx]
        rb = float(np.corrcoef(xb.mean(axis=1), hb.mean(axis=0))[0, 1])
        cb = rb / math.sqrt(pingouin_icc(hb.T, "ICC(A,k)") * written_sb(pingouin_icc(xb, "ICC(A,1)"), 3))
        draws.append(min(cb, 1.0))
    low, high = np.quantile(draws, [0.025, 0.975])
    assert (res.corrected_r.ci_low, res.corrected_r.ci_high) == pytest.approx((low, high), abs=1e-9)


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
