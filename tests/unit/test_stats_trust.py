"""Calibration onto the rubric, the human baseline and the Alternative Annotator Test, each against an
independent recomputation written out here (scikit-learn's isotonic fit on the same folds, a leave-one-
rater-out loop with scipy's paired t-test and Benjamini-Yekutieli, rho by its definition)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.isotonic import IsotonicRegression

from services import stats
from services.stats.calibration import question_folds
from services.stats.uses import decision_rates


def _study(n: int = 40, raters: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """n items, each rated 1-5 by every rater (latent quality + noise), and a 0-1 metric tracking it."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n)
    ratings = np.clip(np.round(3 + 1.2 * latent[:, None] + rng.normal(0, 0.6, (n, raters))), 1, 5)
    metric = 1 / (1 + np.exp(-(latent + rng.normal(0, 0.5, n))))
    return metric, ratings, [f"q{i}" for i in range(n)]


# ------------------------------------------------------------------------------------------ calibration


def test_calibration_equals_isotonic_fit_on_the_same_folds() -> None:
    metric, ratings, questions = _study()
    human = ratings.mean(axis=1)
    res = stats.calibrate(
        metric, human, questions, (1, 5), higher_is_better=True, folds=5, seed=3, refit_max_questions=40
    )
    assert res.undefined_reason is None
    # Folds by question: a seeded permutation of the distinct questions, dealt round-robin.
    order = np.random.default_rng(3).permutation(len(questions))
    fold = np.empty(len(questions), dtype=int)
    fold[order] = np.arange(len(questions)) % 5
    assert [res.fold_of_question[q] for q in questions] == fold.tolist()
    expected = np.empty(len(questions))
    for f in range(5):
        iso = IsotonicRegression(y_min=1, y_max=5, increasing=True, out_of_bounds="clip")
        iso.fit(metric[fold != f], human[fold != f])
        expected[fold == f] = iso.predict(metric[fold == f])
    assert res.calibrated is not None
    np.testing.assert_allclose(res.calibrated, expected, rtol=0, atol=1e-12)
    err = expected - human
    assert res.mae.estimate == pytest.approx(np.mean(np.abs(err)), abs=1e-12)
    assert res.rmse.estimate == pytest.approx(math.sqrt(np.mean(err**2)), abs=1e-12)
    # Jackknife-t by question, written out: leave one item (each its own question) out; "refit" cross-fits
    # the rest again on the same folds, "fixed" keeps the calibrated values; the default leave-out value is
    # fixed + (refit - fixed) / sqrt(2).
    refit, fixed = np.empty(err.size), np.empty(err.size)
    for i in range(err.size):
        m, h, fo = np.delete(metric, i), np.delete(human, i), np.delete(fold, i)
        pred = np.empty(m.size)
        for f in range(5):
            iso = IsotonicRegression(y_min=1, y_max=5, increasing=True, out_of_bounds="clip")
            pred[fo == f] = iso.fit(m[fo != f], h[fo != f]).predict(m[fo == f])
        refit[i] = np.mean(np.abs(pred - h))
        fixed[i] = np.mean(np.abs(np.delete(err, i)))
    t = sps.t.ppf(0.975, err.size - 1)
    for weight, loo in ((None, fixed + (refit - fixed) / math.sqrt(2)), (1.0, refit), (0.0, fixed)):
        got = (
            res
            if weight is None
            else stats.calibrate(
                metric, human, questions, (1, 5), seed=3, refit_max_questions=40, map_weight=weight
            )
        )
        se = math.sqrt((err.size - 1) / err.size * np.sum((loo - loo.mean()) ** 2))
        assert got.mae.interval is not None and got.mae.estimate == res.mae.estimate
        assert got.mae.interval.low == pytest.approx(res.mae.estimate - t * se, abs=1e-12)
        assert got.mae.interval.high == pytest.approx(res.mae.estimate + t * se, abs=1e-12)
        assert list(got.mae.leave_out.values()) == pytest.approx(loo.tolist(), abs=1e-12)
    full = IsotonicRegression(y_min=1, y_max=5, increasing=True, out_of_bounds="clip").fit(metric, human)
    assert [p.metric for p in res.curve] == pytest.approx(list(full.X_thresholds_))
    assert [p.rubric for p in res.curve] == pytest.approx(list(full.y_thresholds_))


def test_lower_is_better_metric_is_fitted_decreasing_and_repeated_questions_share_a_fold() -> None:
    metric, ratings, questions = _study()
    # Two outputs per question (pooled runs): both must land in one fold and be left out together.
    metric2 = np.concatenate([1 - metric, 1 - metric[::-1]])
    human = np.concatenate([ratings.mean(axis=1), ratings.mean(axis=1)[::-1]])
    qs = questions + questions[::-1]
    res = stats.calibrate(
        metric2, human, qs, (1, 5), higher_is_better=False, folds=4, seed=0, refit_max_questions=0
    )
    fold = np.array([res.fold_of_question[q] for q in qs])
    expected = np.empty(len(qs))
    for f in range(4):
        iso = IsotonicRegression(y_min=1, y_max=5, increasing=False, out_of_bounds="clip")
        expected[fold == f] = iso.fit(metric2[fold != f], human[fold != f]).predict(metric2[fold == f])
    np.testing.assert_allclose(res.calibrated, expected, atol=1e-12)
    assert res.n_questions == len(questions)
    # Above the refit cap (here 0) the maps are held fixed while a question is left out.
    err = np.abs(expected - human)
    loo = np.array([np.mean(err[np.array(qs) != q]) for q in questions])
    se = math.sqrt((loo.size - 1) / loo.size * np.sum((loo - loo.mean()) ** 2))
    assert res.mae.interval is not None and res.mae.interval.se == pytest.approx(se, abs=1e-12)
    assert res.mae.interval.df == len(questions) - 1


def test_refit_jackknife_leaves_whole_questions_out_of_a_decreasing_fit() -> None:
    """The default refit (PAVA on presorted data) against scikit-learn refitted per question left out."""
    metric, ratings, questions = _study(n=30)
    metric2 = np.round(np.concatenate([1 - metric, 1 - metric[::-1]]), 1)  # ties in the metric
    human = np.concatenate([ratings[:30].mean(axis=1), ratings[:30].mean(axis=1)[::-1]])
    qs = questions[:30] + questions[:30][::-1]
    res = stats.calibrate(metric2, human, qs, (1, 5), higher_is_better=False, folds=4, seed=2, map_weight=1.0)
    fold = np.array([res.fold_of_question[q] for q in qs])
    names = list(dict.fromkeys(qs))
    loo_mae, loo_rmse = [], []
    for q in names:
        keep = np.array(qs) != q
        m, h, fo = metric2[keep], human[keep], fold[keep]
        pred = np.empty(m.size)
        for f in range(4):
            iso = IsotonicRegression(y_min=1, y_max=5, increasing=False, out_of_bounds="clip")
            pred[fo == f] = iso.fit(m[fo != f], h[fo != f]).predict(m[fo == f])
        loo_mae.append(np.mean(np.abs(pred - h)))
        loo_rmse.append(math.sqrt(np.mean((pred - h) ** 2)))
    assert res.mae.leave_out == pytest.approx(dict(zip(names, loo_mae, strict=True)), abs=1e-12)
    assert res.rmse.leave_out == pytest.approx(dict(zip(names, loo_rmse, strict=True)), abs=1e-12)
    loo = np.array(loo_mae)
    se = math.sqrt((loo.size - 1) / loo.size * np.sum((loo - loo.mean()) ** 2))
    assert res.mae.interval is not None and res.mae.interval.se == pytest.approx(se, abs=1e-12)
    # The default weights the maps' part of each leave-out value by 1/sqrt(2); RMSE leaves out on its scale.
    default = stats.calibrate(metric2, human, qs, (1, 5), higher_is_better=False, folds=4, seed=2)
    err = np.array(default.calibrated) - human
    fixed_rmse = [math.sqrt(np.mean(err[np.array(qs) != q] ** 2)) for q in names]
    corrected = np.array(fixed_rmse) + (np.array(loo_rmse) - np.array(fixed_rmse)) / math.sqrt(2)
    assert list(default.rmse.leave_out.values()) == pytest.approx(corrected.tolist(), abs=1e-12)
    se = math.sqrt((loo.size - 1) / loo.size * np.sum((corrected - corrected.mean()) ** 2))
    assert default.rmse.interval is not None and default.rmse.interval.se == pytest.approx(se, abs=1e-12)


def test_a_question_index_gives_what_the_question_ids_give() -> None:
    """Coded once (QuestionIndex) or passed as ids, with missing values that change the order in which the
    kept items' questions first appear: the same folds, values, intervals, curve, alt-test and rates."""
    metric, ratings, questions = _study(n=60, raters=3, seed=5)
    qs = [questions[i % 25] for i in range(60)][::-1]  # pooled: questions repeat
    metric = metric.copy()
    metric[[0, 1, 7]] = np.nan  # the first items' questions first appear later among the kept ones
    human = ratings.mean(axis=1)
    index = stats.QuestionIndex.of(qs)
    assert index.names == list(dict.fromkeys(qs)) and [index.names[c] for c in index.codes] == qs
    a = stats.calibrate(metric, human, qs, (1, 5), seed=4)
    b = stats.calibrate(metric, human, index, (1, 5), seed=4)
    assert repr(a) == repr(b)  # repr: NaN (the items left out) equals NaN
    kept = [q for q, x in zip(qs, metric, strict=True) if np.isfinite(x)]
    assert list(a.fold_of_question.items()) == list(question_folds(kept, 5, 4).items())
    pred = np.array(a.calibrated)
    raters = ["a", "b", "c"]
    alt = stats.alt_test(pred, ratings, raters, questions=qs)
    assert alt.undefined_reason is None
    assert repr(alt) == repr(stats.alt_test(pred, ratings, raters, questions=index))
    assert repr(stats.human_baseline(ratings, qs, raters)) == repr(
        stats.human_baseline(ratings, index, raters)
    )
    rates = decision_rates(pred, human, ratings, qs, 4.0)
    assert repr(rates) == repr(decision_rates(pred, human, ratings, index, 4.0))


def test_paired_t_is_scipys_and_the_curve_is_scikit_learns() -> None:
    from services.stats.alttest import paired_t_less

    rng = np.random.default_rng(9)
    for n in (3, 10, 200):
        a, b = rng.integers(0, 2, n).astype(float) - 0.2, rng.integers(0, 2, n).astype(float)
        if np.ptp(a - b) == 0:
            continue
        res = sps.ttest_rel(a, b, alternative="less")
        assert paired_t_less(a, b) == pytest.approx((res.statistic, res.pvalue), rel=1e-12)
    metric, ratings, questions = _study(n=80, seed=6)
    for increasing in (True, False):
        x = np.round(metric if increasing else 1 - metric, 2)  # ties, and flat runs in the fit
        res = stats.calibrate(x, ratings.mean(axis=1), questions, (1, 5), higher_is_better=increasing)
        full = IsotonicRegression(y_min=1, y_max=5, increasing=increasing, out_of_bounds="clip")
        full.fit(x, ratings.mean(axis=1))
        assert [p.metric for p in res.curve] == pytest.approx(list(full.X_thresholds_), abs=1e-12)
        assert [p.rubric for p in res.curve] == pytest.approx(list(full.y_thresholds_), abs=1e-12)


def test_calibration_undefined_cases() -> None:
    metric, ratings, questions = _study()
    human = ratings.mean(axis=1)
    const = stats.calibrate(np.full(40, 0.5), human, questions, (1, 5))
    assert const.mae.estimate is None and const.calibrated is None
    assert const.undefined_reason is not None and "constant metric" in const.undefined_reason
    few = stats.calibrate(metric[:9], human[:9], questions[:9], (1, 5))
    assert few.undefined_reason is not None and "fewer than 10 items" in few.undefined_reason
    folds = stats.calibrate(metric[:12], human[:12], ["a", "b", "c"] * 4, (1, 5), folds=5)
    assert folds.undefined_reason == "fewer questions (3) than folds (5) to cross-fit by question"
    with pytest.raises(ValueError, match="rubric range"):
        stats.calibrate(metric, human, questions, (5, 1))


def test_folds_are_balanced_and_seeded() -> None:
    folds = question_folds([f"q{i}" for i in range(23)], 5, 7)
    sizes = np.bincount(list(folds.values()))
    assert sizes.max() - sizes.min() <= 1
    assert folds == question_folds([f"q{i}" for i in range(23)], 5, 7)
    assert folds != question_folds([f"q{i}" for i in range(23)], 5, 8)


def test_human_baseline_is_each_rater_against_the_mean_of_the_others() -> None:
    _, ratings, questions = _study(n=30, raters=3)
    ratings[0, 2] = np.nan  # an item two raters rated
    ratings[1, 1:] = np.nan  # an item one rater rated: compared with no one
    raters = ["ann", "bob", "cyd"]
    res = stats.human_baseline(ratings, questions, raters)
    maes, rmses = [], []
    for j in range(3):
        errs = []
        for i in range(30):
            others = [ratings[i, k] for k in range(3) if k != j and not np.isnan(ratings[i, k])]
            if not np.isnan(ratings[i, j]) and others:
                errs.append(ratings[i, j] - np.mean(others))
        maes.append(np.mean(np.abs(errs)))
        rmses.append(math.sqrt(np.mean(np.square(errs))))
    assert res.mae.estimate == pytest.approx(np.mean(maes), abs=1e-12)
    assert res.rmse.estimate == pytest.approx(np.mean(rmses), abs=1e-12)
    assert res.per_rater_mae == pytest.approx(dict(zip(raters, maes, strict=True)))
    assert res.n_items == 29
    assert res.mae.interval is not None and res.mae.interval.df == 28


def test_human_baseline_with_one_rater_is_undefined() -> None:
    _, ratings, questions = _study(n=12, raters=1)
    res = stats.human_baseline(ratings, questions, ["ann"])
    assert res.mae.estimate is None and res.undefined_reason is not None


# ----------------------------------------------------------------------------- alternative annotator test


def _alt_test_written_out(
    pred: np.ndarray, ratings: np.ndarray, eps: float
) -> tuple[list[float], float, float]:
    """The paper's procedure, by hand: per rater j, the others' mean as reference, -|.| alignment,
    W^f, W^h, ttest_rel(W^h - eps, W^f, 'less'); BY across raters; omega at 0.05; rho = mean of mean W^f."""
    ps, rhos = [], []
    for j in range(ratings.shape[1]):
        wf, wh = [], []
        for i in range(ratings.shape[0]):
            row = ratings[i]
            if np.isnan(row[j]) or np.sum(~np.isnan(row)) < 3 or np.isnan(pred[i]):
                continue
            ref = np.nanmean(np.delete(row, j))
            a_f, a_h = -abs(pred[i] - ref), -abs(row[j] - ref)
            wf.append(1.0 if a_f >= a_h else 0.0)
            wh.append(1.0 if a_h >= a_f else 0.0)
        ps.append(sps.ttest_rel(np.array(wh) - eps, np.array(wf), alternative="less").pvalue)
        rhos.append(np.mean(wf))
    adj = sps.false_discovery_control(ps, method="by")
    return list(adj), float(np.mean(adj < 0.05)), float(np.mean(rhos))


@pytest.mark.parametrize("eps", [0.0, 0.2, 0.3])
def test_alt_test_equals_a_leave_one_rater_out_loop(eps: float) -> None:
    metric, ratings, questions = _study(n=60, raters=4, seed=5)
    ratings[3, 0] = np.nan
    ratings[7, 1:3] = np.nan  # rated by 2: out of every rater's test
    pred = stats.calibrate(metric, np.nanmean(ratings, axis=1), questions, (1, 5)).calibrated
    assert pred is not None
    res = stats.alt_test(np.array(pred), ratings, ["a", "b", "c", "d"], epsilon=eps)
    adj, omega, rho = _alt_test_written_out(np.array(pred), ratings, eps)
    assert res.undefined_reason is None
    assert [t.p_adjusted for t in res.raters] == pytest.approx(adj, abs=1e-12)
    assert res.omega == pytest.approx(omega)
    assert res.rho == pytest.approx(rho, abs=1e-12)
    assert res.replace == (omega >= 0.5)
    assert res.raters[0].n_items == 58 and res.raters[1].n_items == 59


def test_alt_test_direction_a_metric_equal_to_the_consensus_wins_a_noisy_one_loses() -> None:
    rng = np.random.default_rng(11)
    n = 200
    latent = rng.normal(size=n)
    ratings = 3 + latent[:, None] + rng.normal(0, 0.8, (n, 4))
    good = stats.alt_test(3 + latent, ratings, list("abcd"))
    bad = stats.alt_test(3 + latent + rng.normal(0, 3, n), ratings, list("abcd"))
    assert good.replace is True and good.omega == 1.0
    assert bad.replace is False and bad.omega == 0.0
    # rho by its definition: the metric at least as close to the others' mean as the rater, averaged.
    assert good.rho is not None and bad.rho is not None and good.rho > 0.5 > bad.rho


def test_alt_test_undefined_cases() -> None:
    metric, ratings, _ = _study(n=30, raters=3)
    two = stats.alt_test(metric, ratings[:, :2], ["a", "b"])
    assert two.omega is None and two.replace is None
    assert two.undefined_reason is not None and "needs 3 raters" in two.undefined_reason
    assert "0 of 2 raters qualify" in two.undefined_reason
    few = stats.alt_test(metric[:9], ratings[:9], ["a", "b", "c"])
    assert few.undefined_reason is not None and "at least 10 items" in few.undefined_reason
    assert "a (9)" in few.undefined_reason
    const = stats.alt_test(np.full(30, 3.0), ratings, ["a", "b", "c"])
    assert const.undefined_reason is not None and "constant metric" in const.undefined_reason
    # Every rater agrees and the metric equals them: every item a tie, W^h - eps - W^f constant.
    same = np.repeat(np.arange(30)[:, None] % 5 + 1.0, 3, axis=1)
    ties = stats.alt_test(same[:, 0], same, ["a", "b", "c"])
    assert ties.omega is None and ties.undefined_reason is not None and "no variance" in ties.undefined_reason
    with pytest.raises(ValueError, match="epsilon"):
        stats.alt_test(metric, ratings, ["a", "b", "c"], epsilon=1.5)


def test_rho_interval_is_a_jackknife_t_by_question() -> None:
    metric, ratings, _ = _study(n=50, raters=3, seed=9)
    ratings[4, 0] = np.nan  # rater a misses one item: its mean runs over 49
    questions = [f"q{i // 2}" for i in range(50)]  # two outputs per question
    res = stats.alt_test(1 + 4 * metric, ratings, ["a", "b", "c"], questions=questions)
    assert res.rho_interval is not None and res.rho is not None

    def rho_without(q: str | None) -> float:
        means = []
        for j in range(3):
            wf = []
            for i in range(50):
                row = ratings[i]
                if questions[i] == q or np.isnan(row[j]) or np.sum(~np.isnan(row)) < 3:
                    continue
                ref = np.nanmean(np.delete(row, j))
                wf.append(abs(1 + 4 * metric[i] - ref) <= abs(row[j] - ref))
            means.append(np.mean(wf))
        return float(np.mean(means))

    assert res.rho == pytest.approx(rho_without(None), abs=1e-12)
    loo = np.array([rho_without(f"q{g}") for g in range(25)])
    se = math.sqrt(24 / 25 * np.sum((loo - loo.mean()) ** 2))
    t = sps.t.ppf(0.975, 24)
    assert res.rho_interval.low == pytest.approx(res.rho - t * se, abs=1e-12)
    assert res.rho_interval.high == pytest.approx(res.rho + t * se, abs=1e-12)
    assert res.rho_interval.df == 24
