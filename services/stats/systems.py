"""Agreement beyond single outputs: metric deltas against pairwise preference labels, and the ranking of
systems (runs) by their metric means against their human means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from services.stats.core import FloatArray, as_vector, complete_pairs
from services.stats.correlations import CorrelationResult, kendall, pearson, spearman


@dataclass(frozen=True, slots=True)
class PreferenceResult:
    """Metric deltas against per-pair mean preference labels (docs/statistics.md §6)."""

    n_pairs: int
    n_delta_missing: int
    n_delta_imputed: int
    pearson: CorrelationResult
    spearman: CorrelationResult
    kendall: CorrelationResult
    sign_correct: int
    sign_total: int
    sign_accuracy: float | None
    n_human_ties: int


@dataclass(frozen=True, slots=True)
class SystemLevelResult:
    """Agreement of per-system metric means with per-system human means."""

    n_systems: int
    kendall: CorrelationResult
    spearman: CorrelationResult
    pearson: CorrelationResult
    pairwise_correct: int
    pairwise_total: int
    pairwise_accuracy: float | None
    n_human_ties: int


def pair_mean_labels(labels: ArrayLike) -> FloatArray:
    """Mean label of each compared pair from an annotators x pairs matrix (NaN = not labelled).

    Correlate metric deltas with this mean, one row per pair: duplicating the delta for each annotator row
    doubles n and narrows intervals falsely. A pair nobody labelled gets NaN. Raises ValueError if not 2-D.
    """
    data = np.asarray(labels, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"labels must be annotators x pairs, got shape {data.shape}")
    rated = np.isfinite(data)
    counts = rated.sum(axis=0)
    sums = np.where(rated, data, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def preference_agreement(
    labels: ArrayLike,
    score1: ArrayLike,
    score2: ArrayLike,
    *,
    impute_missing_delta: bool = False,
    confidence: float = 0.95,
) -> PreferenceResult:
    """Agreement of metric deltas (score2 - score1) with per-pair mean preference labels (response 2 vs 1).

    Missing deltas are dropped and counted, or replaced by the median delta when ``impute_missing_delta``
    (the published RAGChecker procedure). Sign accuracy leaves out pairs the humans tied (mean label 0); a
    zero metric delta on a non-tied pair counts as wrong. Raises ValueError on mismatched lengths.
    """
    human = pair_mean_labels(labels)
    delta = as_vector(score2, "score2") - as_vector(score1, "score1")
    if delta.size != human.size:
        raise ValueError(f"{delta.size} deltas for {human.size} labelled pairs")
    missing = ~np.isfinite(delta)
    n_missing = int(missing.sum())
    n_imputed = 0
    if impute_missing_delta and n_missing and n_missing < delta.size:
        delta = np.where(missing, np.median(delta[~missing]), delta)
        n_imputed = n_missing
    h, d, _ = complete_pairs(human, delta)
    not_tied = h != 0
    correct = int(np.count_nonzero(np.sign(d[not_tied]) == np.sign(h[not_tied])))
    total = int(not_tied.sum())
    return PreferenceResult(
        n_pairs=human.size,
        n_delta_missing=n_missing,
        n_delta_imputed=n_imputed,
        pearson=pearson(human, delta, confidence=confidence),
        spearman=spearman(human, delta, confidence=confidence),
        kendall=kendall(human, delta, confidence=confidence),
        sign_correct=correct,
        sign_total=total,
        sign_accuracy=correct / total if total else None,
        n_human_ties=int(h.size - total),
    )


def system_level(
    human_means: ArrayLike, metric_means: ArrayLike, *, confidence: float = 0.95
) -> SystemLevelResult:
    """System-level agreement: tau-b, Spearman, Pearson and pairwise accuracy over systems.

    Pairwise accuracy counts system pairs ordered the same way by metric and humans; pairs the humans tie are
    left out, a metric tie counts as wrong. Systems with a missing mean are dropped (see each correlation's
    n_dropped). Raises ValueError on mismatched lengths.
    """
    h, m, _ = complete_pairs(human_means, metric_means)
    dh = np.sign(h[:, None] - h[None, :])
    dm = np.sign(m[:, None] - m[None, :])
    upper = np.triu(np.ones_like(dh, dtype=np.bool_), k=1)
    compared = upper & (dh != 0)
    correct = int(np.count_nonzero(compared & (dh == dm)))
    total = int(compared.sum())
    return SystemLevelResult(
        n_systems=h.size,
        kendall=kendall(human_means, metric_means, confidence=confidence),
        spearman=spearman(human_means, metric_means, confidence=confidence),
        pearson=pearson(human_means, metric_means, confidence=confidence),
        pairwise_correct=correct,
        pairwise_total=total,
        pairwise_accuracy=correct / total if total else None,
        n_human_ties=int(np.count_nonzero(upper & (dh == 0))),
    )
