"""Pass/fail alignment (docs/statistics.md §9) against scikit-learn on the same data."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats as sps
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_score,
    recall_score,
    roc_auc_score,
    roc_curve,
)

from services import stats
from services.stats import default_pass_threshold, pass_fail

A = np.array([0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40])
H = (
    np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 2, 4], dtype=float)
    + np.array([1, 1, 3, 3, 4, 4, 5, 5, 4, 2, 2, 3], dtype=float)
) / 2


def _sklearn(score: NDArray[np.float64], y: NDArray[np.int64]) -> dict[str, object]:
    fpr, tpr, thr = roc_curve(y, score, drop_intermediate=False)
    # The highest threshold among exactly equal maxima of J (argmax of the float J can take a lower one).
    cut = _exact_youden(score, y)[0]
    best = int(np.flatnonzero(thr == cut)[0])
    pred = (score >= thr[best]).astype(int)
    return {
        "auc": roc_auc_score(y, score),
        "threshold": thr[best],
        "youden_j": (tpr - fpr)[best],
        "kappa": cohen_kappa_score(y, pred),
        "accuracy": accuracy_score(y, pred),
        "precision": precision_score(y, pred),
        "recall": recall_score(y, pred),
        "confusion": confusion_matrix(y, pred, labels=[0, 1]).tolist(),
    }


def test_default_threshold_is_the_upper_half_of_the_rubric() -> None:
    assert default_pass_threshold(1, 5) == 4
    assert default_pass_threshold(-2, 2) == 1
    assert default_pass_threshold(1, 10) == 6
    assert default_pass_threshold(0, 1) == 1


def _held_out_sklearn(
    score: NDArray[np.float64], y: NDArray[np.int64], clusters: NDArray[np.int64], seed: int
) -> tuple[dict[str, object], tuple[float, float]] | None:
    """Cross-fitting by hand: questions (numbered by first appearance) in a permutation of numpy's generator
    with the seed, stably sorted by their share of passes, dealt alternately to two halves; each half judged
    at the Youden threshold (scikit-learn's roc_curve) of the other half; scikit-learn's figures on the
    pooled decisions. None when a half has one class only."""
    _, first, codes = np.unique(clusters, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    question = rank[codes]
    share = np.array([y[question == g].mean() for g in range(first.size)])
    order = np.random.default_rng(seed).permutation(first.size)
    order = order[np.argsort(share[order], kind="stable")]
    half = np.empty(first.size, dtype=np.int64)
    half[order] = np.arange(first.size) % 2
    fold = half[question]
    pred = np.zeros(y.size, dtype=int)
    cuts = []
    for f in (0, 1):
        other = fold != f
        if len(set(y[other])) < 2:
            return None
        cut = float(_sklearn(score[other], y[other])["threshold"])  # type: ignore[arg-type]
        pred[fold == f] = score[fold == f] >= cut
        cuts.append(cut)

    def figures(keep: NDArray[np.bool_]) -> dict[str, float]:
        yy, pp = y[keep], pred[keep]
        tn, fp, _, _ = confusion_matrix(yy, pp, labels=[0, 1]).ravel()
        return {
            "youden_j": recall_score(yy, pp) - fp / (fp + tn),
            "kappa": cohen_kappa_score(yy, pp),
            "accuracy": accuracy_score(yy, pp),
            "precision": precision_score(yy, pp, zero_division=np.nan),
            "recall": recall_score(yy, pp),
        }

    out: dict[str, object] = dict(figures(np.ones(y.size, dtype=bool)))
    out["confusion"] = confusion_matrix(y, pred, labels=[0, 1]).tolist()
    # Jackknife-t: each figure leaving one question out (decisions fixed), t with questions - 1 df;
    # precision's t with the questions the metric passes - 1 (its domain's df).
    jack = [figures(question != g) for g in range(first.size)]
    passed_questions = np.unique(question[pred == 1]).size
    for name in stats.HELD_OUT_FIGURES:
        t = sps.t.ppf(0.975, (passed_questions if name == "precision" else first.size) - 1)
        values = np.array([j[name] for j in jack])
        se = np.sqrt((values.size - 1) / values.size * np.sum((values - values.mean()) ** 2))
        low = -1.0 if name in ("youden_j", "kappa") else 0.0
        est = float(out[name])  # type: ignore[arg-type]
        out[name + "_ci"] = (max(low, est - t * se), min(1.0, est + t * se))
    return out, (cuts[0], cuts[1])


def test_data_set_d_equals_scikit_learn() -> None:
    res = pass_fail(A, H, 4.0, n_resamples=500, seed=0)
    y = (H >= 4).astype(int)
    want = _sklearn(A, y)
    assert (res.n, res.n_pass, res.n_fail) == (12, 4, 8)
    for name in ("auc", "threshold"):
        assert getattr(res, name).estimate == pytest.approx(want[name], abs=1e-12), name
    assert [list(r) for r in res.confusion or ()] == want["confusion"]
    # J, kappa, accuracy, precision, recall are held out: each half judged at the other's threshold
    held = _held_out_sklearn(A, y, np.arange(12), 0)
    assert held is not None
    figures, cuts = held
    for name in stats.HELD_OUT_FIGURES:
        fig = getattr(res, name)
        assert fig.estimate == pytest.approx(figures[name], abs=1e-12), name
        assert (fig.ci_low, fig.ci_high) == pytest.approx(figures[name + "_ci"], abs=1e-12), name
        assert fig.ci_method == "jackknife-t"
    assert [list(r) for r in res.confusion_held_out or ()] == figures["confusion"]
    assert res.held_out_thresholds == pytest.approx(cuts)
    # AUC on independent outputs: DeLong's interval on the logit scale, written out pair by pair.
    assert res.auc.ci_method == "delong-logit"
    assert (res.auc.ci_low, res.auc.ci_high) == pytest.approx(_delong_logit_reference(A, y), abs=1e-12)


def _delong_logit_reference(x: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[float, float]:
    """DeLong (1988) from the full pass x fail comparison matrix (ties one half), then the delta method on
    logit(AUC) with the normal 0.975 quantile."""
    pos, neg = x[y == 1], x[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    auc = psi.mean()
    assert auc == pytest.approx(roc_auc_score(y, x), abs=1e-12)
    var = psi.mean(axis=1).var(ddof=1) / pos.size + psi.mean(axis=0).var(ddof=1) / neg.size
    half = sps.norm.ppf(0.975) * np.sqrt(var) / (auc * (1 - auc))
    logit = np.log(auc / (1 - auc))
    return float(1 / (1 + np.exp(-(logit - half)))), float(1 / (1 + np.exp(-(logit + half))))


def test_delong_auc_and_its_interval_equal_the_pairwise_formula() -> None:
    rng = np.random.default_rng(3)
    human = np.clip(np.round(3 + rng.normal(size=60)), 1, 5)
    metric = np.round(0.2 * human + rng.normal(0, 0.5, 60), 1)  # many ties within and across classes
    y = (human >= 4).astype(np.int64)
    res = pass_fail(metric, human, 4.0, n_resamples=0)
    assert res.auc.ci_method == "delong-logit" and res.auc.undefined_reason is None
    assert (res.auc.ci_low, res.auc.ci_high) == pytest.approx(_delong_logit_reference(metric, y), abs=1e-12)
    pos, neg = metric[y == 1], metric[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    auc, var = stats.delong_auc(metric, y == 1)
    assert auc == pytest.approx(psi.mean(), abs=1e-12)
    assert var == pytest.approx(
        psi.mean(axis=1).var(ddof=1) / pos.size + psi.mean(axis=0).var(ddof=1) / neg.size, abs=1e-15
    )
    # A lower-is-better metric: the same interval on the oriented score.
    flipped = pass_fail(-metric, human, 4.0, higher_is_better=False, n_resamples=0)
    assert (flipped.auc.ci_low, flipped.auc.ci_high) == pytest.approx((res.auc.ci_low, res.auc.ci_high))
    # Perfect separation: no interval on the logit scale, and it says why.
    perfect = pass_fail(human, human, 4.0, n_resamples=0)
    assert perfect.auc.estimate == 1.0 and perfect.auc.ci_low is None
    assert "AUC of 0 or 1" in (perfect.auc.undefined_reason or "")
    with pytest.raises(ValueError, match="at least 2 passes and 2 fails"):
        stats.delong_auc(metric[:3], np.array([True, False, False]))
    with pytest.raises(ValueError, match="missing or infinite"):
        stats.delong_auc([1.0, 2.0, np.nan, 4.0, 5.0], [1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match="booleans or 0/1"):
        stats.delong_auc([1.0, 2.0, 3.0, 4.0, 5.0], [1, 0, 1, 0, np.nan])


@pytest.mark.parametrize("seed", range(6))
def test_held_out_figures_equal_scikit_learn_by_question(seed: int) -> None:
    # Two runs of 30 questions, half the second run's answers repeating the first's: halves of questions.
    rng = np.random.default_rng(seed)
    human = np.clip(np.round(3 + rng.normal(size=60)), 1, 5)
    metric = np.round(0.3 * human + rng.normal(0, 0.6, 60), 1)
    human[30:45], metric[30:45] = human[:15], metric[:15]
    questions = np.tile(np.arange(30), 2)
    res = pass_fail(metric, human, 4.0, n_resamples=300, seed=seed, clusters=questions)
    held = _held_out_sklearn(metric, (human >= 4).astype(int), questions, seed)
    if held is None:
        assert res.kappa.estimate is None and "cross-fitting" in (res.kappa.undefined_reason or "")
        return
    figures, cuts = held
    for name in stats.HELD_OUT_FIGURES:
        fig, want = getattr(res, name), float(figures[name])  # type: ignore[arg-type]
        assert fig.estimate == pytest.approx(want, abs=1e-12, nan_ok=True), name
        if fig.ci_low is not None:
            assert (fig.ci_low, fig.ci_high) == pytest.approx(figures[name + "_ci"], abs=1e-12), name
    assert [list(r) for r in res.confusion_held_out or ()] == figures["confusion"]
    assert res.held_out_thresholds == pytest.approx(cuts)


def test_lower_is_better_metric_flips_the_decision() -> None:
    up = pass_fail(A, H, 4.0, n_resamples=300, seed=1)
    down = pass_fail(-A, H, 4.0, higher_is_better=False, n_resamples=300, seed=1)
    assert down.auc.estimate == pytest.approx(up.auc.estimate)
    assert down.kappa == up.kappa and down.confusion == up.confusion
    assert down.threshold.estimate == pytest.approx(-(up.threshold.estimate or 0))
    assert down.held_out_thresholds == pytest.approx([-c for c in up.held_out_thresholds or ()])


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=6, max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_resample_kernel_equals_scikit_learn(values: list[tuple[int, bool]], seed: int) -> None:
    # Every figure on every resample (tied scores, any class balance) equals scikit-learn on that resample.
    score = np.array([v[0] / 6 for v in values])
    passed = np.array([v[1] for v in values])
    kernel = stats._PassFailKernel(score, passed)
    idx = np.random.default_rng(seed).integers(0, score.size, size=(4, score.size))
    got = kernel.resample(stats._resample_counts(idx))
    for row, draw in zip(got, idx, strict=True):
        y = passed[draw].astype(int)
        if y.min() == y.max():
            assert np.isnan(row).all()
            continue
        want = _sklearn(score[draw], y)
        expected = [want[k] for k in ("auc", "threshold", "youden_j", "kappa", "accuracy", "recall")]
        np.testing.assert_allclose(row[[0, 1, 2, 3, 4, 6]], expected, rtol=0, atol=1e-12)  # type: ignore[arg-type]
        assert row[5] == pytest.approx(want["precision"], abs=1e-12)


def test_auc_interval_by_question_equals_scipy_bootstrap_of_roc_auc_score() -> None:
    rng = np.random.default_rng(3)
    human = np.clip(np.round(3 + rng.normal(size=60)), 1, 5)
    metric = np.round(0.2 * human + rng.normal(0, 0.5, 60), 1)
    y = (human >= 4).astype(int)
    # Two identical runs pooled: the question BCa draws the very resamples of one run's item bootstrap.
    res = pass_fail(
        np.tile(metric, 2),
        np.tile(human, 2),
        4.0,
        n_resamples=1000,
        seed=7,
        clusters=np.tile(np.arange(60), 2),
    )
    assert res.auc.ci_method == "bca" and res.n_clusters == 60
    ref = sps.bootstrap(
        (metric, y),
        lambda m, t: roc_auc_score(t, m),
        paired=True,
        vectorized=False,
        method="BCa",
        n_resamples=1000,
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert (res.auc.ci_low, res.auc.ci_high) == (
        pytest.approx(float(ref.low), abs=1e-9),
        pytest.approx(float(ref.high), abs=1e-9),
    )


def test_threshold_has_no_interval_and_says_why() -> None:
    # The percentile bootstrap of the re-chosen threshold covers 0.93 and that of J 0.68 (bench/coverage.py):
    # the threshold is shown without an interval, J held out.
    rng = np.random.default_rng(5)
    human = np.clip(np.round(3 + rng.normal(size=80)), 1, 5)
    metric = np.round(0.3 * human + rng.normal(0, 0.6, 80), 2)
    res = pass_fail(metric, human, 4.0, n_resamples=300, seed=0)
    assert res.threshold.estimate is not None and res.threshold.ci_low is None
    assert "no interval" in (res.threshold.undefined_reason or "")
    assert res.youden_j.ci_method == "jackknife-t" and res.youden_j.ci_low is not None


def test_clustered_copy_gives_the_interval_of_one_run() -> None:
    one = pass_fail(A, H, 4.0, n_resamples=600, seed=2)
    two = pass_fail(
        np.tile(A, 2), np.tile(H, 2), 4.0, n_resamples=600, seed=2, clusters=np.tile(np.arange(12), 2)
    )
    assert two.n_clusters == 12 and two.n == 24
    # AUC: DeLong on the run alone, the question BCa pooled (whose resamples are the run's item bootstrap:
    # test_auc_interval_by_question_equals_scipy_bootstrap_of_roc_auc_score).
    assert (one.auc.ci_method, two.auc.ci_method) == ("delong-logit", "bca")
    for name in stats.HELD_OUT_FIGURES:
        a, b = getattr(one, name), getattr(two, name)
        if a.ci_low is None:
            assert b.ci_low is None
            continue
        assert (b.ci_low, b.ci_high) == (
            pytest.approx(a.ci_low, abs=1e-9),
            pytest.approx(a.ci_high, abs=1e-9),
        )


def test_undefined_cases() -> None:
    few = pass_fail(A, np.where(np.arange(12) == 0, 5.0, 1.0), 4.0)
    assert few.undefined_reason is not None and "2 passes" in few.undefined_reason
    assert few.auc.estimate is None and few.confusion is None
    flat = pass_fail(np.ones(12), H, 4.0)
    assert flat.undefined_reason == "constant metric"
    gappy = pass_fail(np.where(np.arange(12) < 2, np.nan, A), H, 4.0, n_resamples=200)
    assert gappy.n == 10
    with pytest.raises(ValueError):
        pass_fail(A, H[:5], 4.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=5, max_size=40).filter(
        lambda v: 2 <= sum(p for _, p in v) <= len(v) - 2
    )
)
def test_jackknife_auc_equals_roc_auc_score_leaving_each_item_out(values: list[tuple[int, bool]]) -> None:
    score = np.array([float(s) for s, _ in values])
    passed = np.array([p for _, p in values])
    jack = stats._PassFailKernel(score, passed).jackknife()
    for i in range(score.size):
        keep = np.arange(score.size) != i
        assert jack[0, i] == pytest.approx(roc_auc_score(passed[keep], score[keep]), abs=1e-12)
    assert np.isnan(jack[1:]).all()


# Youden's J = 2/45 at the metric values 0.5 (TP 4 of 15 passes, FP 2 of 9 fails) and 0.2 (TP 14, FP 8),
# below it at 0.1; in floats 14/15 - 8/9 comes out 6e-17 above 4/15 - 2/9.
TIED_J_METRIC = np.repeat([0.1, 0.2, 0.5, 0.1, 0.2, 0.5], [1, 10, 4, 1, 6, 2])
TIED_J_HUMAN = np.repeat([4.0, 2.0], [15, 9])


def _exact_youden(score: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[float, Fraction]:
    """The highest observed value among those of maximal J, J in exact fractions."""
    p, n = int(y.sum()), int((1 - y).sum())
    j = {
        float(v): Fraction(int(((score >= v) & (y == 1)).sum()), p)
        - Fraction(int(((score >= v) & (y == 0)).sum()), n)
        for v in np.unique(score)
    }
    top = max(j.values())
    return max(v for v, jv in j.items() if jv == top), top


def test_youden_threshold_is_the_highest_among_exactly_equal_maxima() -> None:
    y = (TIED_J_HUMAN >= 4).astype(np.int64)
    assert _exact_youden(TIED_J_METRIC, y) == (0.5, Fraction(2, 45))
    assert 14 / 15 - 8 / 9 > 4 / 15 - 2 / 9  # the rounding that made argmax take 0.2
    res = pass_fail(TIED_J_METRIC, TIED_J_HUMAN, 4.0, n_resamples=0)
    assert res.threshold.estimate == 0.5
    assert res.confusion == ((7, 2), (11, 4))
    # The resample kernels (compiled and numpy) choose the same on the data itself.
    kernel = stats._PassFailKernel(TIED_J_METRIC, y == 1)
    ones = np.ones((1, y.size), dtype=np.int64)
    for row in (kernel.resample(ones)[0], kernel.resample_numpy(ones)[0]):
        assert row[1] == 0.5 and row[2] == pytest.approx(2 / 45, abs=1e-15)
    # Lower is better: the same decisions, the threshold shown on the metric's scale.
    down = pass_fail(-TIED_J_METRIC, TIED_J_HUMAN, 4.0, higher_is_better=False, n_resamples=0)
    assert down.threshold.estimate == -0.5 and down.confusion == res.confusion


def test_held_out_thresholds_keep_the_highest_among_equal_maxima() -> None:
    # Four questions holding the same 24 outputs: each half (two questions, J = 2/45 at 0.5 and at 0.2
    # again, 28/30 - 16/18 the larger float) must choose 0.5, and the held-out figures are those at 0.5.
    metric, human = np.tile(TIED_J_METRIC, 4), np.tile(TIED_J_HUMAN, 4)
    questions = np.repeat(np.arange(4), TIED_J_METRIC.size)
    y = (human >= 4).astype(np.int64)
    res = pass_fail(metric, human, 4.0, n_resamples=0, clusters=questions)
    assert res.held_out_thresholds == (0.5, 0.5)
    pred = (metric >= 0.5).astype(int)
    assert res.recall.estimate == pytest.approx(recall_score(y, pred), abs=1e-12)
    assert res.recall.estimate == pytest.approx(16 / 60, abs=1e-12)
    assert res.kappa.estimate == pytest.approx(cohen_kappa_score(y, pred), abs=1e-12)
    assert [list(r) for r in res.confusion_held_out or ()] == confusion_matrix(y, pred).tolist()
    held = _held_out_sklearn(metric, y, questions, 0)
    assert held is not None and held[1] == (0.5, 0.5)
