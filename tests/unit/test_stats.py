"""services.stats against the test vectors of docs/statistics.md, scipy.stats.bootstrap, undefined cases."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats as sps

from services import stats
from services.stats import (
    adjust_p_values,
    agreement,
    bootstrap_ci,
    bootstrap_ci_many,
    bootstrap_difference_ci,
    compare_correlations,
    complete_pairs,
    correlation,
    correlations_many,
    fisher_ci,
    fisher_ci_width,
    kendall,
    n_needed_to_separate,
    near_constant,
    pair_mean_labels,
    pearson,
    ppi_mean,
    preference_agreement,
    spearman,
    steiger_z,
    system_level,
    williams_t,
    zou_ci,
)

TIGHT = 1e-12
BOOT = 0.03  # docs/statistics.md: bootstrap and Monte Carlo figures depend on seed and version

# Toy data set D (docs/statistics.md, test vectors)
R1 = np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 2, 4], dtype=float)
R2 = np.array([1, 1, 3, 3, 4, 4, 5, 5, 4, 2, 2, 3], dtype=float)
R3 = np.array([1, 2, 3, 3, np.nan, 4, 5, 4, 5, np.nan, 1, 4])
H = (R1 + R2) / 2
A = np.array([0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40])
B = np.array([0.50, 0.45, 0.30, 0.60, 0.55, 0.40, 0.70, 0.65, 0.80, 0.35, 0.25, 0.75])

Stat = Callable[..., float]
REFERENCE: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], float]] = {
    "pearson": lambda x, y: float(sps.pearsonr(x, y).statistic),
    "spearman": lambda x, y: float(sps.spearmanr(x, y).statistic),
    "kendall": lambda x, y: float(sps.kendalltau(x, y).statistic),
}


def approx(value: float, tol: float = TIGHT) -> object:
    return pytest.approx(value, abs=tol)


# ------------------------------------------------------------------------------------------- 1. Pearson


def test_pearson_a_vs_h_matches_stats_md() -> None:
    res = pearson(A, H)
    assert res.estimate == approx(0.7376021552990333)
    assert res.p_value == approx(0.0061809251010300015)
    assert (res.ci_low, res.ci_high) == (approx(0.28386280656496277), approx(0.9214456349620657))
    assert (res.n, res.n_dropped, res.ci_method, res.undefined_reason) == (12, 0, "fisher", None)


def test_pearson_b_vs_h_and_a_vs_b() -> None:
    res = pearson(B, H)
    assert res.estimate == approx(0.6235751994871385)
    assert res.p_value == approx(0.030262725854838236)
    assert (res.ci_low, res.ci_high) == (approx(0.0773576153529502), approx(0.881878307563216))
    assert pearson(A, B).estimate == approx(0.31246301556292155)


def test_pearson_bootstrap_intervals_match_stats_md() -> None:
    bca = correlation(A, H, ci="bca", n_resamples=9999, seed=0)
    assert bca.estimate == approx(0.7376021552990333)
    assert (bca.ci_low, bca.ci_high) == (approx(0.3766, BOOT), approx(0.9050, BOOT))
    assert bca.ci_method == "bca"
    pct = correlation(A, H, ci="percentile", n_resamples=9999, seed=0)
    assert (pct.ci_low, pct.ci_high) == (approx(0.3899, BOOT), approx(0.9088, BOOT))


def test_stacking_rater_rows_gives_the_falsely_narrow_figure() -> None:
    # The pitfall docs/statistics.md §1 warns about, reproduced: n doubles and the interval narrows.
    res = pearson(np.concatenate([R1, R2]), np.concatenate([A, A]))
    assert res.n == 24
    assert res.estimate == approx(0.7034, 5e-5)
    assert (res.ci_low, res.ci_high) == (approx(0.419, 5e-4), approx(0.862, 5e-4))


def test_n_of_three_gives_the_whole_range() -> None:
    res = pearson([1.0, 2.0, 3.5], [2.0, 1.0, 4.0])
    assert res.estimate is not None
    assert (res.ci_low, res.ci_high) == (-1.0, 1.0)
    assert (kendall([1, 2, 3, 4], [1, 3, 2, 4]).ci_low, kendall([1, 2, 3, 4], [1, 3, 2, 4]).ci_high) == (
        -1,
        1,
    )


@pytest.mark.parametrize("func", [pearson, spearman, kendall])
def test_constant_input_is_undefined_not_zero(func: Callable[..., stats.CorrelationResult]) -> None:
    res = func(A, np.full(12, 3.0))
    assert res.estimate is None and res.p_value is None and res.ci_low is None
    assert res.undefined_reason == "constant input (y)"
    # Rounding noise is not variation.
    assert func(np.array([0.1 + 0.2, 0.3] * 6), A).undefined_reason == "constant input (x)"


@pytest.mark.parametrize("func", [pearson, spearman, kendall])
def test_fewer_than_three_pairs_is_undefined(func: Callable[..., stats.CorrelationResult]) -> None:
    res = func([1.0, 2.0, np.nan], [2.0, 1.0, 3.0])
    assert res.estimate is None
    assert res.undefined_reason == "fewer than 3 complete pairs (n = 2)"
    assert res.n_dropped == 1


def test_missing_pairs_are_dropped_and_counted() -> None:
    x = [*A, None, 0.3, np.nan]
    y = [*H, 2.0, np.inf, np.nan]
    xc, yc, dropped = complete_pairs(x, y)
    assert dropped == 3 and xc.size == yc.size == 12
    res = pearson(x, y)
    assert (res.n, res.n_dropped) == (12, 3)
    assert res.estimate == approx(0.7376021552990333)


def test_complete_pairs_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        complete_pairs([1, 2, 3], [1, 2])


def test_perfect_correlation_has_no_fisher_interval() -> None:
    res = pearson(A, 2 * A + 1)
    assert res.estimate == approx(1.0)
    assert res.ci_low is None and res.ci_undefined_reason is not None


# -------------------------------------------------------------------------------- 2. Spearman and Kendall


def test_spearman_and_kendall_match_stats_md() -> None:
    rho = spearman(A, H)
    assert rho.estimate == approx(0.7311173675983791)
    assert rho.p_value == approx(0.006900056297090711)
    assert (rho.ci_low, rho.ci_high) == (approx(0.2528809667645981), approx(0.9222324544367061))
    bw = spearman(A, H, ci="bonett-wright")
    assert (bw.ci_low, bw.ci_high) == (approx(0.1932015897067347), approx(0.9310989572752215))
    assert correlation(A, H, "spearman", spearman_ci="bonett-wright") == bw
    tau = kendall(A, H, ci="fieller")
    assert tau.estimate == approx(0.5117663157191589)
    assert tau.p_value == approx(0.022665530797245)
    assert (tau.ci_low, tau.ci_high) == (approx(0.10663038800093179), approx(0.7711677359606021))


def test_kendall_tie_aware_interval_by_hand() -> None:
    # x has tie groups {2, 2} and {4, 4, 4}: n1 = 1 + 3 = 4; y has {1, 1}, {3, 3}, {5, 5}: n2 = 3;
    # n0 = 8 * 7 / 2 = 28, so the factor is 28 / sqrt(24 * 25) and the SE of atanh(tau) is
    # sqrt(0.437 / (8 - 4)) times it.
    x = [1, 2, 2, 3, 4, 4, 4, 5]
    y = [1, 1, 2, 3, 3, 4, 5, 5]
    factor = 28 / math.sqrt(24 * 25)
    assert stats.kendall_tie_factor(x, y) == approx(factor)
    tau = kendall(x, y)
    se = math.sqrt(0.437 / 4) * factor
    z = math.atanh(tau.estimate or 0.0)
    assert tau.ci_method == "fieller-ties"
    assert (tau.ci_low, tau.ci_high) == (
        approx(math.tanh(z - 1.959963984540054 * se)),
        approx(math.tanh(z + 1.959963984540054 * se)),
    )
    plain = kendall(x, y, ci="fieller")
    assert plain.ci_low is not None and tau.ci_low is not None and tau.ci_low < plain.ci_low
    # On D: A has no ties, H has three tied pairs (2.5, 3.5, 4.5): factor sqrt(66 / 63).
    assert stats.kendall_tie_factor(A, H) == approx(math.sqrt(66 / 63))
    d = kendall(A, H)
    assert (d.ci_low, d.ci_high) == (approx(0.09596121571636368), approx(0.7755006409361062))
    # Without ties the two intervals are one and the same.
    assert kendall(A, B) == replace(kendall(A, B, ci="fieller"), ci_method="fieller-ties")


def test_kendall_tie_factor_is_undefined_on_constant_input() -> None:
    with pytest.raises(ValueError, match="undefined"):
        stats.kendall_tie_factor([1, 1, 1], [1, 2, 3])


def test_spearman_bca_matches_stats_md() -> None:
    res = bootstrap_ci(A, H, "spearman", n_resamples=9999, seed=0)
    assert (res.low, res.high) == (approx(0.2698, BOOT), approx(0.9209, BOOT))


# -------------------------------------------------------------------------------- 3. dependent correlations

TABLE = [
    (
        (0.5, 0.3, 0.4, 100),
        (2.0649936492350145, 0.04159148741182788),
        (2.0348703357072715, 0.04186392152796705),
        (0.007970691333347463, 0.3927626828245414),
    ),
    (
        (0.396, 0.179, 0.088, 200),
        (2.4410345510875615, 0.015528730240227048),
        (2.4186711338787146, 0.01557731628659164),
        (0.041531840451648705, 0.3892118258766577),
    ),
    (
        (0.7376021552990333, 0.6235751994871385, 0.31246301556292155, 12),
        (0.4910360221764093, 0.6351519788567549),
        (0.4791040281835651, 0.6318646242139921),
        (-0.3850283314391481, 0.6725785620423174),
    ),
]


@pytest.mark.parametrize(("args", "williams", "steiger", "zou"), TABLE)
def test_dependent_correlation_table(
    args: tuple[float, float, float, int],
    williams: tuple[float, float],
    steiger: tuple[float, float],
    zou: tuple[float, float],
) -> None:
    w = williams_t(*args)
    assert (w.statistic, w.p_value, w.df) == (approx(williams[0]), approx(williams[1]), args[3] - 3)
    s = steiger_z(*args)
    assert (s.statistic, s.p_value) == (approx(steiger[0], 1e-10), approx(steiger[1], 1e-10))
    assert zou_ci(*args) == (approx(zou[0]), approx(zou[1]))


def test_williams_matches_r_psych() -> None:
    res = williams_t(0.5, 0.1, 0.7, 30)
    assert round(res.statistic, 2) == 3.38
    assert res.p_value == approx(0.0022122, 5e-8)


def test_compare_correlations_on_data_set_d() -> None:
    res = compare_correlations(A, B, H, n_resamples=9999, seed=0)
    assert (res.r_a, res.r_b, res.r_ab) == (
        approx(0.7376021552990333),
        approx(0.6235751994871385),
        approx(0.31246301556292155),
    )
    assert res.williams is not None and res.williams.statistic == approx(0.4910360221764093)
    assert res.steiger is not None and res.steiger.statistic == approx(0.4791040281835651)
    assert (res.zou_low, res.zou_high) == (approx(-0.3850283314391481), approx(0.6725785620423174))
    assert res.bootstrap is not None
    assert (res.bootstrap.low, res.bootstrap.high) == (approx(-0.236, BOOT), approx(0.525, BOOT))


def test_compare_rank_correlations_get_zou_and_the_bootstrap() -> None:
    res = compare_correlations(A, B, H, method="spearman", n_resamples=500, seed=1)
    # Williams' t and Steiger's Z are Pearson formulas; ranks get Zou's interval on their Fieller limits.
    assert res.williams is None and res.steiger is None
    assert res.rank_z is not None and res.zou_low is not None
    assert res.bootstrap is not None and res.bootstrap.low is not None


def test_compare_correlations_undefined_on_constant_input() -> None:
    res = compare_correlations(A, np.ones(12), H, n_resamples=100)
    assert res.difference is None and res.undefined_reason == "constant input (x)"


def test_compare_correlations_with_a_perfect_metric() -> None:
    human = np.array([-1.0, 0.0, 1.0, -1.0, 0.0, 1.0])
    other = np.array([0.2, 0.1, 0.9, 0.3, 0.5, 0.4])
    res = compare_correlations(human.copy(), other, human, n_resamples=200, seed=0)
    assert res.r_a == 1.0 and res.williams is None and res.zou_low is None
    assert res.analytic_undefined_reason is not None and res.undefined_reason is None
    assert res.difference is not None and res.bootstrap is not None


def test_dependent_tests_reject_impossible_inputs() -> None:
    with pytest.raises(ValueError):
        williams_t(1.0, 0.2, 0.3, 50)
    with pytest.raises(ValueError):
        steiger_z(0.5, 0.2, 0.3, 3)
    with pytest.raises(ValueError, match="correlation matrix"):
        williams_t(0.9, -0.9, 0.9, 50)


# ----------------------------------------------------------------------------- 4. multiple comparisons

P_VALUES = [0.001, 0.008, 0.039, 0.041, 0.042, 0.060, 0.074, 0.205]


def test_holm_matches_stats_md() -> None:
    assert adjust_p_values(P_VALUES, "holm") == [approx(v) for v in [0.008, 0.056] + [0.234] * 6]


def test_bh_matches_stats_md() -> None:
    expected = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.592 / 7, 0.205]
    assert adjust_p_values(P_VALUES, "bh") == [approx(v) for v in expected]


def test_adjustment_skips_undefined_p_values() -> None:
    adjusted = adjust_p_values([0.01, None, math.nan, 0.04], "holm")
    assert adjusted == [approx(0.02), None, None, approx(0.04)]
    with pytest.raises(ValueError):
        adjust_p_values([1.5], "bh")


# ------------------------------------------------------------------------------------ 5. agreement


@pytest.fixture(scope="module")
def two_raters() -> stats.AgreementResult:
    return agreement(np.vstack([R1, R2]), ["r1", "r2"], 1, 5, seed=0, n_resamples=300)


def test_alpha_matches_stats_md(two_raters: stats.AgreementResult) -> None:
    assert two_raters.alpha["ordinal"].estimate == approx(0.8267493928354583)
    assert two_raters.alpha["interval"].estimate == approx(0.8263214670981661)
    assert two_raters.alpha["nominal"].estimate == approx(0.29074889867841414)
    ordinal = two_raters.alpha["ordinal"]
    assert ordinal.ci_low is not None and ordinal.ci_high is not None
    assert ordinal.ci_low < 0.8267 < ordinal.ci_high
    assert ordinal.n_resamples_undefined == 0 and ordinal.n_resamples > 0
    # No bootstrap runs for the other levels: they count no resample, defined or not.
    for level in ("interval", "nominal"):
        other = two_raters.alpha[level]
        assert (other.n_resamples, other.n_resamples_undefined, other.ci_low) == (0, 0, None)
        assert other.ci_undefined_reason == "the bootstrap interval is computed for the ordinal level only"


def test_alpha_orientation_is_raters_by_items() -> None:
    # The transpose silently gives another number; agreement() must pass the matrix as given.
    assert krippendorff.alpha(
        reliability_data=np.vstack([R1, R2]).T, level_of_measurement="ordinal"
    ) == approx(-0.0448, 5e-5)
    with pytest.raises(ValueError, match="rows"):
        agreement(np.vstack([R1, R2]).T, ["r1", "r2"], 1, 5, n_resamples=0)


def test_icc_matches_stats_md(two_raters: stats.AgreementResult) -> None:
    expected = {
        "ICC(A,1)": 0.8315098468271335,
        "ICC(A,k)": 0.908004778972521,
        "ICC(1,1)": 0.832609,
        "ICC(C,1)": 0.820734,
        "ICC(1,k)": 0.908660,
        "ICC(C,k)": 0.901542,
    }
    for kind, value in expected.items():
        assert two_raters.icc[kind].estimate == approx(value, 5e-7), kind
    assert two_raters.attenuation_ceiling == approx(math.sqrt(0.908004778972521))
    assert two_raters.attenuation_ceiling == approx(0.953, 5e-4)


def test_icc_intervals_are_pingouins_at_full_precision(two_raters: stats.AgreementResult) -> None:
    import pandas as pd
    import pingouin
    from pingouin.config import _no_rounding

    frame = pd.DataFrame(
        {"item": np.tile(np.arange(12), 2), "rater": np.repeat(["a", "b"], 12), "score": np.r_[R1, R2]}
    )
    rounded = pingouin.intraclass_corr(frame, targets="item", raters="rater", ratings="score")
    with _no_rounding():
        full = pingouin.intraclass_corr(frame, targets="item", raters="rater", ratings="score")
    for kind, ci, ci2 in zip(full.Type, full.CI95, rounded.CI95, strict=True):
        icc = two_raters.icc[kind]
        assert (icc.ci_low, icc.ci_high) == (approx(float(ci[0])), approx(float(ci[1]))), kind
        assert (round(icc.ci_low or 0, 2), round(icc.ci_high or 0, 2)) == (float(ci2[0]), float(ci2[1]))
    # The full-precision interval is not itself rounded to two decimals.
    low = two_raters.icc["ICC(A,k)"].ci_low or 0.0
    assert low != round(low, 2)


def test_pair_figures_and_kappa_match_stats_md(two_raters: stats.AgreementResult) -> None:
    (pair,) = two_raters.pairs
    assert (pair.rater_a, pair.rater_b, pair.n_items) == ("r1", "r2", 12)
    assert pair.pearson.estimate == approx(0.8236615821223187)
    assert (pair.exact_count, pair.exact) == (5, approx(5 / 12))
    assert (pair.within_one_count, pair.within_one) == (12, 1.0)
    assert pair.spearman.estimate is not None
    assert two_raters.kappa_quadratic == approx(0.8189655172413793)


def test_kappa_uses_the_full_scale() -> None:
    # Nobody used 3: without labels=1..5 sklearn would put 2 and 4 one step apart.
    a = np.array([1, 2, 4, 5, 2, 4, 5])
    b = np.array([1, 4, 4, 5, 2, 5, 4])
    res = agreement(np.vstack([a, b]), ["a", "b"], 1, 5, n_resamples=0)
    from sklearn.metrics import cohen_kappa_score

    assert res.kappa_quadratic == approx(cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert res.kappa_quadratic != approx(cohen_kappa_score(a, b, weights="quadratic"))


def test_third_rater_with_missing_ratings() -> None:
    res = agreement(np.vstack([R1, R2, R3]), ["r1", "r2", "r3"], 1, 5, seed=0, n_resamples=100)
    assert res.alpha["ordinal"].estimate == approx(0.8535034394496881)
    assert (res.n_items, res.n_items_used, res.n_items_excluded) == (12, 12, 0)
    assert (res.icc_n_items, res.icc_n_items_excluded) == (10, 2)
    assert res.icc_exclusion_reason == "not rated by every rater"
    assert res.kappa_quadratic is None and res.kappa_undefined_reason is not None
    assert [(p.rater_a, p.rater_b, p.n_items) for p in res.pairs] == [
        ("r1", "r2", 12),
        ("r1", "r3", 10),
        ("r2", "r3", 10),
    ]


def test_items_with_a_single_rating_are_excluded_and_counted() -> None:
    r2 = R2.copy()
    r2[[0, 1]] = np.nan
    res = agreement(np.vstack([R1, r2]), ["r1", "r2"], 1, 5, n_resamples=50)
    assert (res.n_items_used, res.n_items_excluded, res.exclusion_reason) == (10, 2, "fewer than two ratings")
    assert res.alpha["ordinal"].n_items == 10


def test_agreement_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\[1, 5\]"):
        agreement(np.vstack([R1, R2 + 1]), ["a", "b"], 1, 5)
    with pytest.raises(ValueError, match="two raters"):
        agreement(R1[None, :], ["a"], 1, 5)


def test_agreement_on_identical_constant_ratings_is_undefined() -> None:
    m = np.full((2, 6), 3.0)
    res = agreement(m, ["a", "b"], 1, 5, n_resamples=20)
    assert res.alpha["ordinal"].estimate is None
    assert res.icc == {} and res.icc_undefined_reason == "every rating has the same value"
    assert res.kappa_quadratic is None
    assert res.pairs[0].pearson.estimate is None
    assert res.attenuation_ceiling is None


def test_perfect_agreement_has_an_icc_of_one_and_no_interval() -> None:
    # Two raters giving the same varied scores: the residual mean square is 0, so the F-based intervals are
    # undefined (they used to raise ZeroDivisionError, a 500 on a task dashboard with perfect agreement).
    m = np.array([[1, 2, 2, 3, 5, 4], [1, 2, 2, 3, 5, 4]], dtype=float)
    res = agreement(m, ["a", "b"], 1, 5, n_resamples=20)
    assert res.icc["ICC(A,1)"].estimate == pytest.approx(1.0)
    assert res.icc["ICC(C,k)"].estimate == pytest.approx(1.0)
    assert res.icc["ICC(C,1)"].ci_low is None and res.icc["ICC(C,1)"].ci_high is None


# ------------------------------------------------------------------------ 6. preference and system level

LAB1 = [2, 1, 0, -1, -2, 1, 0, 2]
LAB2 = [1, 1, -1, -1, -2, 2, 0, 1]
M1 = np.array([0.40, 0.55, 0.60, 0.70, 0.90, 0.30, 0.50, 0.20])
M2 = np.array([0.80, 0.57, 0.55, 0.50, 0.30, 0.60, 0.52, 0.70])


def test_preference_per_pair_mean_matches_stats_md() -> None:
    res = preference_agreement(np.vstack([LAB1, LAB2]), M1, M2)
    assert res.pearson.estimate == approx(0.9467035142675914)
    assert res.spearman.estimate == approx(0.95150257112482)
    assert res.kendall.estimate == approx(0.8693182879212225)
    assert (res.sign_correct, res.sign_total, res.n_human_ties) == (7, 7, 1)
    assert res.n_pairs == 8


def test_duplicated_rows_reproduce_the_published_figures() -> None:
    delta = M2 - M1
    labels = np.concatenate([LAB1, LAB2])
    assert pearson(labels, np.concatenate([delta, delta])).estimate == approx(0.9109658813419308)
    assert spearman(labels, np.concatenate([delta, delta])).estimate == approx(0.8735458534824911)


def test_delta_normalisation_is_affine() -> None:
    delta = M2 - M1
    norm = ((delta - delta.min()) / (delta.max() - delta.min()) - 0.5) * 4
    mean = pair_mean_labels(np.vstack([LAB1, LAB2]))
    assert pearson(mean, norm).estimate == approx(0.9467035142675914)


def test_missing_deltas_dropped_or_imputed() -> None:
    m2 = M2.copy()
    m2[0] = np.nan
    dropped = preference_agreement(np.vstack([LAB1, LAB2]), M1, m2)
    assert (dropped.n_delta_missing, dropped.n_delta_imputed, dropped.pearson.n) == (1, 0, 7)
    imputed = preference_agreement(np.vstack([LAB1, LAB2]), M1, m2, impute_missing_delta=True)
    assert (imputed.n_delta_imputed, imputed.pearson.n) == (1, 8)


def test_pair_mean_labels_ignores_missing_labels() -> None:
    mean = pair_mean_labels([[1, np.nan, np.nan], [2, -1, np.nan]])
    assert mean[:2].tolist() == [1.5, -1.0] and math.isnan(mean[2])


def test_system_level_matches_stats_md() -> None:
    res = system_level([3.9, 3.6, 3.1, 2.8, 2.2], [0.71, 0.74, 0.60, 0.52, 0.55])
    assert res.kendall.estimate == approx(0.6)
    assert res.kendall.p_value == approx(0.2333, 5e-5)
    assert res.spearman.estimate == approx(0.8)
    assert res.pearson.estimate == approx(0.8648487313067922)
    assert (res.pairwise_correct, res.pairwise_total, res.pairwise_accuracy) == (8, 10, 0.8)


# ------------------------------------------------------------------------------------------- 7. PPI


def test_ppi_mean_matches_stats_md() -> None:
    y = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
    yhat = [1, 1, 1, 1, 1, 1, 1, 0, 1, 1]
    unlabeled = [1, 1, 1, 1, 0, 1, 1, 1, 1, 0] * 4
    res = ppi_mean(y, yhat, unlabeled)
    assert res.estimate == approx(0.6)
    assert res.se == approx(0.14142135623730953)
    assert (res.ci_low, res.ci_high) == (approx(0.3228192351300645), approx(0.8771807648699357))
    with pytest.raises(ValueError):
        ppi_mean([1, np.nan], [1, 1], [1])


# ----------------------------------------------------------------------------------------- 8. power


def test_fisher_widths_match_stats_md() -> None:
    assert fisher_ci(0.3, 96) == (approx(0.1059, 5e-5), approx(0.4721, 5e-5))
    assert fisher_ci_width(0.3, 96) == approx(0.366, 5e-4)
    assert fisher_ci(0.6, 96) == (approx(0.4541, 5e-5), approx(0.7145, 5e-5))
    assert fisher_ci_width(0.6, 96) == approx(0.260, 5e-4)
    assert fisher_ci(0.3, 3) == (-1.0, 1.0)


@pytest.mark.parametrize(("between", "expected"), [(0.0, 163), (0.5, 83), (0.7, 51)])
def test_n_needed_to_separate_matches_stats_md(between: float, expected: int) -> None:
    assert n_needed_to_separate(0.35, 0.05, between) == expected


def test_n_needed_rejects_equal_correlations() -> None:
    with pytest.raises(ValueError):
        n_needed_to_separate(0.3, 0.3, 0.5)


# ------------------------------------------------------------------ vectorised bootstrap == scipy.bootstrap


def _scipy_ci(
    data: tuple[NDArray[np.float64], ...], stat: Stat, kind: str, n: int, seed: int
) -> tuple[float, float]:
    res = sps.bootstrap(
        data, stat, paired=True, vectorized=False, method=kind, n_resamples=n, rng=np.random.default_rng(seed)
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


_RNG = np.random.default_rng(20240601)
RANDOM_X = _RNG.normal(size=60)
RANDOM_Y = 0.4 * RANDOM_X + _RNG.normal(size=60)
DATA_SETS = {
    "D": (A, H),
    "random": (RANDOM_X, RANDOM_Y),
    "ties": (np.round(RANDOM_X), np.round(2 * RANDOM_Y) / 2),
}


# Every data set x method with BCa; percentile once per method (its code path does not depend on the data).
EQUALITY_CASES = [(data, method, "BCa") for data in DATA_SETS for method in REFERENCE] + [
    ("ties", method, "percentile") for method in REFERENCE
]


@pytest.mark.parametrize(("data", "method", "kind"), EQUALITY_CASES)
def test_bootstrap_equals_scipy(data: str, method: stats.CorrMethod, kind: str) -> None:
    x, y = DATA_SETS[data]
    low, high = _scipy_ci((x, y), REFERENCE[method], kind, 1000, seed=7)
    res = bootstrap_ci(
        x, y, method, ci_method="bca" if kind == "BCa" else "percentile", n_resamples=1000, seed=7
    )
    assert (res.low, res.high) == (approx(low, 1e-9), approx(high, 1e-9))
    assert res.undefined_reason is None


def test_pearson_bca_with_9999_resamples_equals_scipy() -> None:
    low, high = _scipy_ci((A, H), REFERENCE["pearson"], "BCa", 9999, seed=0)
    res = bootstrap_ci(A, H, n_resamples=9999, seed=0)
    assert (res.low, res.high) == (approx(low, 1e-9), approx(high, 1e-9))


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_difference_bootstrap_equals_scipy(method: stats.CorrMethod) -> None:
    ref = REFERENCE[method]

    def diff(a: NDArray[np.float64], b: NDArray[np.float64], h: NDArray[np.float64]) -> float:
        return ref(a, h) - ref(b, h)

    low, high = _scipy_ci((A, B, H), diff, "BCa", 2000, seed=3)
    res = bootstrap_difference_ci(A, B, H, method, n_resamples=2000, seed=3)
    assert (res.low, res.high) == (approx(low, 1e-9), approx(high, 1e-9))


def test_many_metrics_share_the_index_matrix_and_equal_single_calls() -> None:
    rng = np.random.default_rng(11)
    human = np.round(rng.normal(3, 1, 80) * 2) / 2
    metrics = {f"m{j}": 0.3 * j * human + rng.normal(size=80) for j in range(4)}
    with_gap = metrics["m1"].copy()
    with_gap[[3, 40]] = np.nan
    metrics["gappy"] = with_gap
    for method in ("pearson", "spearman"):
        many = bootstrap_ci_many(metrics, human, method, n_resamples=1000, seed=5, chunk_elements=7_000)
        for name, x in metrics.items():
            xc, hc, _ = complete_pairs(x, human)
            low, high = _scipy_ci((xc, hc), REFERENCE[method], "BCa", 1000, seed=5)
            assert (many[name].low, many[name].high) == (approx(low, 1e-9), approx(high, 1e-9)), (
                method,
                name,
            )
    assert many["gappy"].n == 78


def test_chunking_does_not_change_the_draws() -> None:
    # 11 items x 7 rows: blocks with an odd number of draws must continue the generator's stream exactly.
    whole = bootstrap_ci_many({"a": A[:11]}, H[:11], n_resamples=999, seed=2, chunk_elements=10**9)["a"]
    odd = bootstrap_ci_many({"a": A[:11]}, H[:11], n_resamples=999, seed=2, chunk_elements=11 * 7)["a"]
    assert whole.low is not None and (whole.low, whole.high) == (odd.low, odd.high)


def test_correlations_many_keeps_estimates_and_swaps_intervals() -> None:
    res = correlations_many({"A": A, "B": B, "flat": np.ones(12)}, H, ci="bca", n_resamples=999, seed=0)
    assert res["A"].estimate == approx(0.7376021552990333)
    assert res["A"].ci_method == "bca"
    assert res["flat"].estimate is None and res["flat"].undefined_reason == "constant input (x)"
    assert list(res) == ["A", "B", "flat"]


def test_degenerate_bootstrap_is_undefined() -> None:
    res = bootstrap_ci(A, 3 * A - 1, n_resamples=500, seed=0)
    assert res.low is None and res.undefined_reason is not None
    assert "every resample gives the same value" in res.undefined_reason


def test_constant_resamples_make_the_interval_undefined() -> None:
    # Two non-zero items out of 20: many resamples miss both and the correlation is undefined there.
    x = np.zeros(20)
    x[[2, 9]] = 1.0
    y = np.arange(20, dtype=float)
    for method in ("pearson", "spearman", "kendall"):
        res = bootstrap_ci(x, y, method, n_resamples=500, seed=0)
        assert res.low is None and res.undefined_reason is not None
        assert res.undefined_reason.startswith("statistic undefined in")


def test_bootstrap_undefined_for_too_few_pairs() -> None:
    res = bootstrap_ci([1.0, 2.0, np.nan], [1.0, 3.0, 2.0])
    assert res.low is None and res.undefined_reason == "fewer than 3 complete pairs (n = 2)"


def test_bootstrap_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci(A, H, n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci(A, H, confidence=1.5)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=5, max_size=25),
    seed=st.integers(0, 2**32 - 1),
)
def test_rank_kernels_equal_scipy_on_tied_data(values: list[tuple[int, int]], seed: int) -> None:
    x = np.array([v[0] for v in values], dtype=float)
    h = np.array([v[1] for v in values], dtype=float)
    n = x.size
    idx = np.random.default_rng(seed).integers(0, n, size=(8, n))
    counts = stats._resample_counts(idx)
    for method in ("pearson", "spearman", "kendall"):
        kernel = stats._kernel(method, x[None, :], h)
        got = kernel.resample(counts)[:, 0]
        want = [stats._reference_or_nan(method, x[row], h[row]) for row in idx]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True, err_msg=method)
        jack = kernel.jackknife()[0]
        keep = [np.arange(n) != i for i in range(n)]
        want_jack = [stats._reference_or_nan(method, x[k], h[k]) for k in keep]
        np.testing.assert_allclose(jack, want_jack, rtol=0, atol=1e-12, equal_nan=True, err_msg=method)
    # Large n switches Kendall to the merge-based count: both paths must give the same integers.
    kernel = stats._KendallKernel(x[None, :], h)
    ties = kernel.x_ties[0]
    dense = kernel._concordance_dense(ties, counts)
    np.testing.assert_array_equal(kernel._concordance_merge(ties, counts), dense)


# -------------------------------------------------------------------------------------- near-constant


def test_near_constant_threshold() -> None:
    assert near_constant(np.ones(96))
    assert near_constant(np.r_[np.ones(94), 0.0, 0.0])
    assert not near_constant(np.r_[np.ones(93), 0.0, 0.0, 0.5])
    assert near_constant([0.1 + 0.2] * 5 + [0.3] * 5)
    assert near_constant([np.nan, np.nan])
    assert not near_constant(A)
    assert near_constant(np.r_[np.ones(94), 0.0, 0.0, np.nan], min_off_mode=3)
    assert not near_constant(np.r_[np.ones(94), 0.0, 0.0], min_off_mode=2)


def test_adjustments_equal_statsmodels_on_random_p_values() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for _ in range(20):
        p = rng.uniform(0, 0.2, size=int(rng.integers(1, 15))).tolist()
        assert stats.adjust_p_values(p, "holm") == approx(multipletests(p, method="holm")[1].tolist())
        assert stats.adjust_p_values(p, "bh") == approx(multipletests(p, method="fdr_bh")[1].tolist())


def test_rank_difference_is_zou_on_the_fieller_intervals() -> None:
    # By hand on D, Spearman: rho(A,H), rho(B,H), rho(A,B) from scipy; each Fieller interval with
    # SE sqrt(1.06 / 9); Zou's c from the three coefficients; z on atanh with the same SEs.
    r1 = sps.spearmanr(A, H).statistic
    r2 = sps.spearmanr(B, H).statistic
    r12 = sps.spearmanr(A, B).statistic
    se = math.sqrt(1.06 / 9)
    l1, u1 = (
        math.tanh(math.atanh(r1) - 1.959963984540054 * se),
        math.tanh(math.atanh(r1) + 1.959963984540054 * se),
    )
    l2, u2 = (
        math.tanh(math.atanh(r2) - 1.959963984540054 * se),
        math.tanh(math.atanh(r2) + 1.959963984540054 * se),
    )
    c = ((r12 - 0.5 * r1 * r2) * (1 - r1**2 - r2**2 - r12**2) + r12**3) / ((1 - r1**2) * (1 - r2**2))
    low = r1 - r2 - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * c * (r1 - l1) * (u2 - r2))
    high = r1 - r2 + math.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * c * (u1 - r1) * (r2 - l2))
    z = (math.atanh(r1) - math.atanh(r2)) / (se * math.sqrt(2 - 2 * c))
    (lo, hi), test = stats.rank_difference("spearman", A, B, H)
    assert (lo, hi) == (approx(low), approx(high))
    assert (test.statistic, test.p_value) == (approx(z), approx(2 * sps.norm.sf(abs(z))))
    comp = stats.compare_correlations(A, B, H, method="spearman", n_resamples=0)
    assert (comp.zou_low, comp.zou_high, comp.rank_z) == (approx(low), approx(high), test)
    # Pearson's Zou interval is the same construction on the Fisher limits (docs/statistics.md §3 vector).
    r = (0.5, 0.3, 0.4)
    assert stats.mover_ci(
        0.5, stats.fisher_ci(0.5, 100), 0.3, stats.fisher_ci(0.3, 100), stats._zou_c(*r)
    ) == (
        approx(0.007970691333347463),
        approx(0.3927626828245414),
    )
    # Kendall on ties: each SE carries its own tie factor; a constant metric has no interval.
    (klo, khi), _ = stats.rank_difference("kendall", A, B, H)
    assert klo < sps.kendalltau(A, H).statistic - sps.kendalltau(B, H).statistic < khi
    with pytest.raises(ValueError):
        stats.rank_difference("kendall", A, np.ones(12), H)


def test_raters_in_exact_agreement_have_icc_one_without_a_division_warning() -> None:
    # The mean square error is 0: F divides by zero (a RuntimeWarning, an error under this suite's
    # filterwarnings, once turned a report into a 500 in the load test under concurrent rating imports).
    scores = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    result = agreement(np.vstack([scores, scores]), ["r1", "r2"], 1, 5, seed=0, n_resamples=50)
    assert sorted(result.icc) == sorted(
        ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
    )
    assert [icc.estimate for icc in result.icc.values()] == [pytest.approx(1.0)] * 6
