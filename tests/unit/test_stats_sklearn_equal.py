"""The figures services.stats computes in scikit-learn's way (ROC AUC, the confusion matrix, Cohen's kappa
unweighted and quadratic, accuracy, precision, recall) are scikit-learn's exactly, bit for bit, on random
inputs with many ties and on the degenerate ones (perfect separation, one score, nothing passing)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_score,
    recall_score,
    roc_auc_score,
)

from services.stats.core import cohen_kappa, confusion_counts
from services.stats.interrater import _quadratic_kappa
from services.stats.passfail import _decision_figures, roc_auc


def identical(ours: float | None, theirs: float) -> bool:
    """Bit-identical floats (NaN equal to NaN)."""
    if ours is None:
        return False
    return (math.isnan(ours) and math.isnan(theirs)) or (ours == theirs and type(ours) is float)


def truth_and_scores(
    rng: np.random.Generator, n: int, case: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    y = rng.integers(0, 2, size=n)
    y[:2] = [0, 1]  # both classes
    rng.shuffle(y)
    noise = rng.normal(size=n)
    if case == 0:  # continuous, no ties
        score = y + noise
    elif case == 1:  # judge-like scores on a coarse grid: many ties
        score = np.round(np.clip(0.5 + 0.2 * y + 0.2 * noise, 0, 1), 1)
    elif case == 2:  # integer rubric scores 1-5
        score = np.clip(np.round(3 + y + noise), 1, 5)
    elif case == 3:  # perfect separation, ties inside each class
        score = y * 2.0 + np.round(rng.random(n), 1)
    elif case == 4:  # two values only
        score = (rng.random(n) < 0.3 + 0.4 * y).astype(np.float64)
    else:  # reversed, tiny differences
        score = -y + noise * 1e-9
    return y.astype(np.int64), score.astype(np.float64)


@pytest.mark.parametrize("seed", range(4))
def test_roc_auc_is_scikit_learns_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for i in range(150):
        n = int(rng.integers(4, 60)) if i % 3 else int(rng.integers(60, 3000))
        y, score = truth_and_scores(rng, n, i % 6)
        assert identical(roc_auc(y, score), float(roc_auc_score(y, score))), (i, n, i % 6)


def test_roc_auc_with_one_score_for_all_is_one_half_as_scikit_learns() -> None:
    y = np.array([0, 1, 0, 1, 1], dtype=np.int64)
    score = np.full(5, 0.7)
    assert identical(roc_auc(y, score), float(roc_auc_score(y, score)))
    assert roc_auc(y, score) == 0.5


@pytest.mark.parametrize("seed", range(3))
def test_decision_figures_are_scikit_learns_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for i in range(200):
        n = int(rng.integers(4, 400))
        y, score = truth_and_scores(rng, n, i % 6)
        kind = i % 4
        if kind == 0:
            pred = (score >= np.quantile(score, rng.random())).astype(np.int64)
        elif kind == 1:
            pred = np.zeros(n, dtype=np.int64)  # nothing passes: precision NaN
        elif kind == 2:
            pred = np.ones(n, dtype=np.int64)
        else:
            pred = rng.integers(0, 2, size=n).astype(np.int64)
        ours, cm = _decision_figures(y, pred)
        assert cm.tolist() == confusion_matrix(y, pred, labels=[0, 1]).tolist()
        tn, fp = int(cm[0, 0]), int(cm[0, 1])
        recall = float(recall_score(y, pred))
        theirs = {
            "youden_j": recall - fp / (fp + tn) if fp + tn else math.nan,
            "kappa": float(cohen_kappa_score(y, pred)),
            "accuracy": float(accuracy_score(y, pred)),
            "precision": float(precision_score(y, pred, zero_division=np.nan)),
            "recall": recall,
        }
        for name, value in theirs.items():
            assert identical(ours[name], value), (i, kind, name, ours[name], value)


@pytest.mark.parametrize(("low", "high"), [(1, 5), (0, 1), (1, 10), (-2, 2)])
def test_quadratic_kappa_is_scikit_learns_bit_for_bit(low: int, high: int) -> None:
    rng = np.random.default_rng([low + 10, high + 10])
    labels = list(range(low, high + 1))
    for i in range(150):
        n = int(rng.integers(2, 300))
        a = rng.integers(low, high + 1, size=n)
        kind = i % 5
        if kind == 0:  # close agreement, ties
            b = np.clip(a + rng.integers(-1, 2, size=n), low, high)
        elif kind == 1:  # independent
            b = rng.integers(low, high + 1, size=n)
        elif kind == 2:  # identical
            b = a.copy()
        elif kind == 3:  # one rater constant
            b = np.full(n, int(rng.integers(low, high + 1)))
        else:  # the scale's ends only
            b = rng.choice([low, high], size=n)
        if np.unique(np.concatenate([a, b])).size < 2:
            continue
        theirs = float(cohen_kappa_score(a, b, weights="quadratic", labels=labels))
        value, reason = _quadratic_kappa(a.astype(np.float64), b.astype(np.float64), low, high)
        assert reason is None and identical(value, theirs), (i, kind, value, theirs)
        counts = confusion_counts(a, b, low, high)
        assert counts.tolist() == confusion_matrix(a, b, labels=labels).tolist()
        assert identical(cohen_kappa(counts), float(cohen_kappa_score(a, b, labels=labels))), (i, kind)


def test_a_fresh_process_computing_agreement_and_pass_fail_does_not_load_scikit_learn() -> None:
    # Nor pingouin (ICC): importing the two (matplotlib, seaborn, statsmodels, pandas with them) cost a fresh
    # report process ~1.2 s.
    code = (
        "import sys, numpy as np; from services.stats import agreement, pass_fail; "
        "r = np.array([[1, 2, 3, 4, 5, 3, 2, 4], [2, 2, 3, 5, 4, 3, 1, 4]], dtype=float); "
        "agreement(r, ['a', 'b'], 1, 5, n_resamples=20); "
        "pass_fail(np.array([0.1, 0.5, 0.4, 0.9, 0.8, 0.3, 0.2, 0.7]), r.mean(axis=0), 4.0, n_resamples=50); "
        "print(sorted(m for m in ('sklearn', 'pingouin', 'matplotlib', 'seaborn', 'statsmodels') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
