"""services.reports: the statistics steps of the system-level, pairwise and estimate analyses, on arrays,
each checked against scipy / statsmodels or a written-out loop (no database, no HTTP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from services.errors import InvalidItems
from services.reports import estimates, systems
from services.reports.estimate_schemas import MeanEstimate, PpiRow


def test_run_mean_is_the_student_t_interval() -> None:
    x = np.array([3.0, 4.0, 2.0, 5.0, 4.0, 3.5])
    ci = sps.ttest_1samp(x, 0).confidence_interval(0.95)
    got = systems.run_mean(9, x)
    assert (got.run_id, got.n) == (9, 6)
    assert got.mean == pytest.approx(sum(x) / 6)
    assert (got.ci_low, got.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # No spread: the interval is the point; one value: no interval; none: no mean.
    assert systems.run_mean(1, np.array([2.0, 2.0])).model_dump() == {
        "run_id": 1,
        "mean": 2.0,
        "ci_low": 2.0,
        "ci_high": 2.0,
        "n": 2,
    }
    one = systems.run_mean(1, np.array([2.0]))
    assert (one.mean, one.ci_low, one.ci_high) == (2.0, None, None)
    assert systems.run_mean(1, np.array([])).mean is None


def test_paired_test_against_the_written_out_t_test() -> None:
    a = np.array([3.0, 2.0, 4.0, 5.0, 1.0, 3.0, 2.0])
    b = np.array([4.0, 2.5, 4.0, 5.5, 3.0, 3.0, 4.0])
    d = b - a
    n = d.size
    mean = sum(d) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
    t = mean / (sd / math.sqrt(n))
    half = sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    got = systems.paired_test(1, 2, a, b)
    assert got.difference == pytest.approx(mean)
    assert got.p_value == pytest.approx(2 * sps.t.sf(abs(t), n - 1))
    assert (got.ci_low, got.ci_high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    same = systems.paired_test(1, 2, a, a + 1)
    assert (same.difference, same.p_value) == (1.0, None) and "same difference" in (
        same.undefined_reason or ""
    )
    assert systems.paired_test(1, 2, a[:1], b[:1]).undefined_reason == "fewer than 2 questions"


def test_tau_b_per_row_is_scipys() -> None:
    rng = np.random.default_rng(3)
    h = rng.integers(0, 4, size=(30, 5)).astype(np.float64)  # ties on purpose
    m = rng.integers(0, 4, size=(30, 5)).astype(np.float64)
    got = systems._tau_b(h, m)
    for row in range(30):
        if np.ptp(h[row]) == 0 or np.ptp(m[row]) == 0:
            assert math.isnan(got[row])
        else:
            assert got[row] == pytest.approx(sps.kendalltau(h[row], m[row]).statistic)


def test_rank_bootstrap_against_a_loop_over_resamples() -> None:
    rng = np.random.default_rng(5)
    human = rng.normal(3, 1, size=(4, 9))
    metric = human + rng.normal(0, 0.8, size=(4, 9))
    n_resamples, seed = 150, 11
    defined, undefined = systems.rank_bootstrap(human, metric, n_resamples, seed)
    draws = np.random.default_rng(seed).integers(0, 9, size=(n_resamples, 9))
    expected = []
    for idx in draws:
        hm, mm = human[:, idx].mean(axis=1), metric[:, idx].mean(axis=1)
        expected.append(sps.kendalltau(hm, mm).statistic)
    finite = [v for v in expected if not math.isnan(v)]
    assert undefined == n_resamples - len(finite)
    assert defined == pytest.approx(np.array(finite))


def test_metric_pairs_holm_and_same_winner() -> None:
    ids = [10, 20, 30]
    human = np.array([[1.0, 2.0, 3.0, 2.0], [2.0, 3.0, 3.5, 3.0], [1.0, 2.5, 3.0, 1.0]])
    metric = np.array([[0.1, 0.2, 0.3, 0.1], [0.5, 0.6, 0.9, 0.6], [0.0, 0.3, 0.2, 0.4]])
    pairs = systems._metric_pairs(ids, human, metric)
    assert [(p.run_a, p.run_b) for p in pairs] == [(10, 20), (10, 30), (20, 30)]
    raw_h = [sps.ttest_rel(human[j], human[i]).pvalue for i, j in [(0, 1), (0, 2), (1, 2)]]
    holm_h = multipletests(raw_h, method="holm")[1]
    assert [p.human.holm_p for p in pairs] == pytest.approx(list(holm_h))
    for p, (i, j) in zip(pairs, [(0, 1), (0, 2), (1, 2)], strict=True):
        dh, dm = (human[j] - human[i]).mean(), (metric[j] - metric[i]).mean()
        assert p.same_winner == (np.sign(dh) == np.sign(dm))
        assert p.human_distinguishable == (p.human.holm_p is not None and p.human.holm_p < 0.05)


def test_rank_agreement_gives_no_interval_when_resamples_are_undefined() -> None:
    tau = systems.stats.system_level(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])).kendall
    assert tau.estimate == pytest.approx(sps.kendalltau([1, 2, 3], [1, 3, 2]).statistic)
    values = np.linspace(-1, 1, 100)
    full = systems._rank_agreement(tau, values, 0, 100)
    assert (full.ci_low, full.ci_high) == tuple(pytest.approx(v) for v in np.quantile(values, [0.025, 0.975]))
    # 6 of 100 undefined (over 5 %): the estimate without an interval, saying why.
    few = systems._rank_agreement(tau, values[:94], 6, 100)
    assert (few.estimate, few.ci_low, few.ci_high) == (tau.estimate, None, None)
    assert few.undefined_reason == "a ranking is all ties in 6 of 100 resamples"
    # 5 of 100 undefined is still an interval.
    assert systems._rank_agreement(tau, values[:95], 5, 100).ci_low is not None


@pytest.mark.parametrize(
    ("n_rated", "n_items", "under", "reason"),
    [
        (0, 10, 0, "the run has no rated output"),
        (0, 10, 4, "no output has ratings from 2 raters (4 have fewer)"),
        (2, 10, 0, "2 rated output(s); at least 3 are needed"),
        (10, 10, 0, "all 10 outputs are rated; nothing is left to estimate"),
    ],
)
def test_an_estimate_needs_some_rated_and_some_unrated(
    n_rated: int, n_items: int, under: int, reason: str
) -> None:
    with pytest.raises(InvalidItems) as exc:
        estimates._check_rated(n_rated, n_items, under, min_raters=2)
    assert [(e.field, e.reason) for e in exc.value.items] == [("ratings", reason)]


def test_enough_ratings_pass() -> None:
    estimates._check_rated(3, 10, 0, min_raters=1)


def _row(metric: str, ratio: float | None, clipped: str | None = None, imputed: int = 0) -> PpiRow:
    est = MeanEstimate(
        estimate=3, ci_low=2, ci_high=4, width=2, se=0.5, df=9, method="ppi++", ci_clipped=clipped
    )
    return PpiRow(
        metric=metric,
        library="ref",
        kind="answer",
        higher_is_better=True,
        n_scored=10 - imputed,
        n_imputed=imputed,
        ppi=est,
        width_ratio=ratio,
    )


def test_the_narrowest_note() -> None:
    assert estimates._narrowest_note(None).startswith("no metric gives an estimate")
    assert (
        estimates._narrowest_note(_row("m", 1.2))
        == "no metric narrows the rated-only interval on these ratings"
    )
    note = estimates._narrowest_note(_row("ref.f1", 0.5))
    assert note.startswith(
        "ref.f1 gives the narrowest interval: 50% of the rated-only width, worth about 4.0x"
    )


def test_estimate_warnings() -> None:
    rated_only = MeanEstimate(
        estimate=4.9, ci_low=4.0, ci_high=5.0, width=1.4, se=0.3, df=4, method="t", ci_clipped="5.3"
    )
    rows = [_row("a", 0.8, clipped="5.4"), _row("b", 0.9, imputed=2), _row("c", 0.9)]
    warnings = estimates._warnings(4, 12, rows, rated_only, (1.0, 5.0))
    assert [(w.code, w.scope, w.n) for w in warnings] == [
        ("small_sample", "estimate", 4),
        ("ci_clipped", "estimate", 2),
        ("undefined", "b", 2),
    ]
    assert (
        "for rated only, a:" in warnings[1].message and "no value on 2 of 12 outputs" in warnings[2].message
    )
    # Enough ratings, nothing clipped, nothing imputed; off a rubric nothing is clipped.
    assert (
        estimates._warnings(
            10, 12, [_row("c", 0.9)], rated_only.model_copy(update={"ci_clipped": None}), None
        )
        == []
    )
