"""The ranking verdict's rule on hand-made system-level figures, and the questions the paired t-test's power
formula asks for when the humans tell no pair of runs apart (recomputed with scipy's quantiles)."""

from __future__ import annotations

import math

from scipy import stats as sps

from services.reports.comparison_schemas import MetricPair, PairTest, RankAgreement, RunMean, SystemMetric
from services.reports.trust import _ranking, ranking_verdict


def _pair(
    a: int, b: int, dh: float, half: float, n: int, h_dist: bool, dm: float, m_dist: bool
) -> MetricPair:
    human = PairTest(run_a=a, run_b=b, n=n, difference=dh, ci_low=dh - half, ci_high=dh + half, p_value=0.5)
    metric = PairTest(run_a=a, run_b=b, n=n, difference=dm, ci_low=dm - 0.1, ci_high=dm + 0.1, p_value=0.5)
    return MetricPair(
        run_a=a,
        run_b=b,
        human=human,
        metric=metric,
        same_winner=(dh > 0) == (dm > 0),
        human_distinguishable=h_dist,
        metric_distinguishable=m_dist,
    )


def _system(pairs: list[MetricPair], low: float, high: float) -> SystemMetric:
    return SystemMetric(
        metric="m",
        library="external",
        kind="score",
        higher_is_better=True,
        n_questions=pairs[0].human.n,
        means=[RunMean(run_id=r, mean=0.5, ci_low=None, ci_high=None, n=10) for r in (1, 2, 3)],
        kendall=RankAgreement(
            estimate=(low + high) / 2,
            ci_low=low,
            ci_high=high,
            ci_method="percentile",
            n_resamples=2000,
            n_resamples_undefined=0,
        ),
        pairwise_correct=2,
        pairwise_total=3,
        pairs=pairs,
    )


def test_ranking_yes_no_and_not_yet() -> None:
    agree = [_pair(1, 2, 0.5, 0.2, 30, True, 0.3, True), _pair(1, 3, 1.0, 0.2, 30, True, 0.6, True)]
    sm = _system(agree, 0.2, 1.0)
    assert ranking_verdict(_ranking(sm, 3), sm, None).verdict == "yes"
    reversed_ = [_pair(1, 2, 0.5, 0.2, 30, True, -0.3, True), agree[1]]
    sm = _system(reversed_, 0.2, 1.0)
    assert ranking_verdict(_ranking(sm, 3), sm, None).verdict == "no"
    sm = _system(agree, -1.0, -0.2)
    assert ranking_verdict(_ranking(sm, 3), sm, None).verdict == "no"
    wide = _system(agree, -0.3, 1.0)
    v = ranking_verdict(_ranking(wide, 3), wide, None)
    assert v.verdict == "not yet" and v.missing == "a tau-b interval above 0"
    assert ranking_verdict(None, None, "needs 3 runs").reason == "needs 3 runs"


def test_not_yet_names_the_questions_the_closest_pair_needs() -> None:
    pairs = [_pair(1, 2, 0.1, 0.15, 25, False, 0.1, False), _pair(1, 3, 0.3, 0.35, 25, False, 0.2, False)]
    sm = _system(pairs, 0.2, 1.0)
    v = ranking_verdict(_ranking(sm, 3), sm, None, ratings_per_question=6.0)
    assert v.verdict == "not yet" and v.missing == "a pair of runs the humans tell apart"
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    needed = []
    for diff, half in ((0.1, 0.15), (0.3, 0.35)):
        sd = half / sps.t.ppf(0.975, 24) * math.sqrt(25)
        needed.append(math.ceil(z**2 * sd**2 / diff**2))
    assert v.questions_needed == min(needed)
    assert v.further_ratings == math.ceil((min(needed) - 25) * 6.0)
