"""The figures behind the ranking/gating/MAE verdicts (services.stats.uses), each against a recomputation
written out here: the jackknife by question by hand, scipy's t and normal quantiles, loops over raters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from services import stats
from services.reports.trust import mae_test
from services.stats.uses import decision_rates, non_inferiority, paired_leave_out, questions_for_power


def _study(n: int = 40, raters: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n)
    ratings = np.clip(np.round(3 + 1.2 * latent[:, None] + rng.normal(0, 0.6, (n, raters))), 1, 5)
    metric = 1 / (1 + np.exp(-(latent + rng.normal(0, 0.5, n))))
    return metric, ratings, [f"q{i // 2}" for i in range(n)]


def _jack_se(loo: np.ndarray) -> float:
    return math.sqrt((loo.size - 1) / loo.size * np.sum((loo - loo.mean()) ** 2))


@pytest.mark.parametrize(
    ("d", "margin", "expected"),
    [(0.05, 0.2, "non-inferior"), (0.5, 0.2, "inferior"), (0.15, 0.2, "undecided")],
)
def test_non_inferiority_by_hand(d: float, margin: float, expected: str) -> None:
    rng = np.random.default_rng(4)
    loo = d + rng.normal(0, 0.01, 30)
    res = non_inferiority(d, loo, margin)
    se = _jack_se(loo)
    t = sps.t.ppf(0.95, 29)
    assert res.se == pytest.approx(se, abs=1e-14) and res.df == 29
    assert res.upper == pytest.approx(d + t * se) and res.lower == pytest.approx(d - t * se)
    assert res.p_value == pytest.approx(sps.t.cdf((d - margin) / se, 29))
    assert res.decision == expected
    if expected == "undecided":
        z = sps.norm.ppf(0.95) + sps.norm.ppf(0.8)
        assert res.questions_needed == math.ceil(z**2 * 30 * se**2 / (margin - d) ** 2)
        assert res.questions_needed > 30
    else:
        assert res.questions_needed is None


def test_non_inferiority_undefined_cases() -> None:
    assert (
        non_inferiority(0.1, [0.1, 0.1], 0.2).undefined_reason
        == "fewer than 3 questions to leave out (G = 2)"
    )
    flat = non_inferiority(0.1, [0.1] * 5, 0.2)
    assert (
        flat.decision is None
        and flat.undefined_reason is not None
        and "no standard error" in flat.undefined_reason
    )
    assert questions_for_power(1.0, 0.0, 0.05) is None
    with pytest.raises(ValueError, match="margin"):
        non_inferiority(0.1, [0.1, 0.2, 0.3], -1.0)


def test_paired_leave_out_keeps_a_side_whole_where_it_has_no_question() -> None:
    d, loo = paired_leave_out(1.0, {"a": 0.9, "b": 1.1}, 0.5, {"b": 0.4, "c": 0.6})
    assert d == 0.5
    assert loo.tolist() == pytest.approx([0.9 - 0.5, 1.1 - 0.4, 1.0 - 0.6])


def test_mae_test_is_the_jackknife_of_the_paired_difference() -> None:
    metric, ratings, questions = _study()
    human = ratings.mean(axis=1)
    cal = stats.calibrate(metric, human, questions, (1, 5))
    hb = stats.human_baseline(ratings, questions, list("abcd"))
    res = mae_test(cal, hb, 0.2)
    names = list(dict.fromkeys(questions))
    qs = np.array(questions)
    # The human baseline written out, without each question in turn.
    base = []
    for q in names:
        keep = qs != q
        r = ratings[keep]
        per = [np.mean(np.abs(r[:, j] - np.delete(r, j, axis=1).mean(axis=1))) for j in range(4)]
        base.append(np.mean(per))
    assert hb.mae.leave_out == pytest.approx(dict(zip(names, base, strict=True)), abs=1e-12)
    assert cal.mae.leave_out is not None and cal.mae.estimate is not None and hb.mae.estimate is not None
    loo = np.array([cal.mae.leave_out[q] for q in names]) - np.array(base)
    d = cal.mae.estimate - hb.mae.estimate
    assert res.difference == pytest.approx(d, abs=1e-12)
    assert res.se == pytest.approx(_jack_se(loo), abs=1e-12)
    assert res.upper == pytest.approx(d + sps.t.ppf(0.95, len(names) - 1) * _jack_se(loo), abs=1e-12)


def test_mae_test_with_a_constant_metric_is_undefined() -> None:
    _, ratings, questions = _study()
    cal = stats.calibrate(np.full(40, 0.3), ratings.mean(axis=1), questions, (1, 5))
    res = mae_test(cal, stats.human_baseline(ratings, questions, list("abcd")), 0.2)
    assert (
        res.decision is None
        and res.undefined_reason is not None
        and "constant metric" in res.undefined_reason
    )


def test_decision_rates_against_loops() -> None:
    metric, ratings, questions = _study(n=60, raters=3, seed=7)
    ratings[5, 2] = np.nan
    human = np.nanmean(ratings, axis=1)
    pred = np.array(stats.calibrate(metric, human, questions, (1, 5)).calibrated)
    res = decision_rates(pred, human, ratings, questions, 4.0)
    qs = np.array(questions)
    names = list(dict.fromkeys(questions))

    def metric_rates(keep: np.ndarray) -> tuple[float, float]:
        hp, mp = human[keep] >= 4, pred[keep] >= 4
        return float(np.sum(hp & mp) / np.sum(hp)), float(np.sum(~hp & ~mp) / np.sum(~hp))

    def rater_rates(keep: np.ndarray) -> tuple[float, float]:
        tprs, tnrs = [], []
        for j in range(3):
            tp = fn = tn = fp = 0
            for i in np.flatnonzero(keep):
                others = [ratings[i, k] for k in range(3) if k != j and not np.isnan(ratings[i, k])]
                if np.isnan(ratings[i, j]) or not others:
                    continue
                ref, own = np.mean(others) >= 4, ratings[i, j] >= 4
                tp += ref and own
                fn += ref and not own
                tn += (not ref) and (not own)
                fp += (not ref) and own
            tprs.append(tp / (tp + fn))
            tnrs.append(tn / (tn + fp))
        return float(np.mean(tprs)), float(np.mean(tnrs))

    every = np.ones(60, dtype=bool)
    assert (res.tpr.estimate, res.tnr.estimate) == pytest.approx(metric_rates(every), abs=1e-12)
    assert (res.human_tpr.estimate, res.human_tnr.estimate) == pytest.approx(rater_rates(every), abs=1e-12)
    assert res.n_pass == int(np.sum(human >= 4)) and res.n_raters == 3
    loo_m = np.array([metric_rates(qs != q) for q in names])
    loo_h = np.array([rater_rates(qs != q) for q in names])
    assert [res.tpr.leave_out[q] for q in names] == pytest.approx(loo_m[:, 0].tolist(), abs=1e-12)
    assert [res.human_tnr.leave_out[q] for q in names] == pytest.approx(loo_h[:, 1].tolist(), abs=1e-12)
    half = sps.t.ppf(0.975, len(names) - 1) * _jack_se(loo_m[:, 0])
    assert res.tpr.low == pytest.approx(max(0.0, metric_rates(every)[0] - half), abs=1e-12)
    assert res.tpr.high == pytest.approx(min(1.0, metric_rates(every)[0] + half), abs=1e-12)


def test_decision_rates_undefined_cases() -> None:
    metric, ratings, questions = _study(n=20, raters=1)
    human = ratings[:, 0]
    res = decision_rates(metric * 4 + 1, human, ratings, questions, 4.0)
    assert res.human_tpr.estimate is None and res.human_tpr.undefined_reason is not None
    every_pass = decision_rates(np.full(20, 5.0), np.full(20, 5.0), np.full((20, 2), 5.0), questions, 4.0)
    assert every_pass.tnr.estimate is None and "no item on that side" in str(every_pass.tnr.undefined_reason)
