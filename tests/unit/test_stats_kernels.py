"""The compiled resample kernels (services.stats_kernels) equal services.stats' numpy kernels to the bit.

The numpy kernels are the reference the compiled ones replace on the report path; their own figures are
checked against scipy and scikit-learn in test_stats_resampling.py and test_stats_passfail.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from services import stats, stats_kernels
from services.stats import (
    _KendallKernel,
    _PassFailKernel,
    _resample_counts,
    _SpearmanKernel,
)


def _data(n: int, seed: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A human score (mean of two 1-5 ratings) and metrics with the shapes reports see: continuous, 0.1
    steps, binary, piled at 0 and 1, and one with a single off-mode value."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n)
    ratings = [np.clip(np.round(3 + quality + rng.normal(0, 0.6, n)), 1, 5) for _ in range(2)]
    human = (ratings[0] + ratings[1]) / 2
    piled = np.clip(np.round(0.5 + 0.4 * quality + rng.normal(0, 0.3, n), 2), 0, 1)
    metrics = np.vstack(
        [
            0.7 * quality + rng.normal(size=n),
            np.round(1 / (1 + np.exp(-quality - rng.normal(size=n))), 1),
            (quality + rng.normal(size=n) > 0).astype(np.float64),
            piled,
            np.where(np.arange(n) == n // 2, 1.0, 0.0),
        ]
    )
    return human, metrics


def _counts(n: int, rows: int, seed: int) -> NDArray[np.int64]:
    """Item-bootstrap counts, plus rows a bootstrap can produce at the edges: one item drawn n times
    (constant), the data itself, and leave-one-out / whole-cluster-style 0/1 rows."""
    rng = np.random.default_rng(seed)
    counts = _resample_counts(rng.integers(0, n, size=(rows, n)))
    single = np.zeros((1, n), dtype=np.int64)
    single[0, 0] = n
    identity = np.ones((1, n), dtype=np.int64)
    left_out = (rng.random((3, n)) > 0.3).astype(np.int64)
    return np.vstack([counts, single, identity, left_out])


@pytest.mark.parametrize("human_values", ["ratings", "continuous"])
@pytest.mark.parametrize("n", [5, 12, 97, 2500])
@pytest.mark.parametrize("kernel", [_SpearmanKernel, _KendallKernel])
def test_rank_kernels_equal_numpy(
    kernel: type[_SpearmanKernel | _KendallKernel], n: int, human_values: str
) -> None:
    human, metrics = _data(n, seed=n)
    if human_values == "continuous":
        # Many distinct human values: Kendall's kernel uses its Fenwick tree instead of the prefix array.
        human = np.round(human + np.random.default_rng(n).normal(0, 0.5, n), 2)
    k = kernel(metrics, human)
    counts = _counts(n, 40, seed=n + 1)
    compiled, reference = k.resample(counts), k.resample_numpy(counts)
    assert np.isnan(compiled[-5]).all()  # one item drawn n times: no correlation
    assert np.array_equal(compiled, reference, equal_nan=True)


def test_rank_kernels_count_tied_metrics_from_cells_and_the_others_item_by_item() -> None:
    # At n = 2500 the binary, 0.1-step, piled and single off-mode metrics have few tie groups: they are
    # counted from cells of (x group, human level) weights; the continuous one item by item.
    human, metrics = _data(2500, seed=2500)
    k = _SpearmanKernel(metrics, human)
    n_groups, _ = stats_kernels._x_tables(*k.layout, k.h_ties.sizes.size)
    assert n_groups[0] == 0  # continuous: scanned item by item
    assert list(n_groups[1:]) == [np.unique(row).size for row in metrics[1:]]


@pytest.mark.parametrize("n", [6, 12, 97, 2500])
def test_pass_fail_kernel_equals_numpy(n: int) -> None:
    human, metrics = _data(n, seed=n)
    counts = _counts(n, 40, seed=n + 2)
    for score in [*metrics, -metrics[1], np.arange(n, dtype=np.float64)]:
        k = _PassFailKernel(score, human >= 4)
        compiled, reference = k.resample(counts), k.resample_numpy(counts)
        assert np.array_equal(compiled, reference, equal_nan=True)


def test_pass_fail_kernel_keeps_the_highest_threshold_among_equal_maxima() -> None:
    # Youden's J is 0.5 at the scores 2 and 4 (P = N = 2): the numpy kernel and roc_curve keep 4.
    score = np.array([1.0, 2.0, 3.0, 4.0])
    passed = np.array([False, True, False, True])
    counts = np.ones((1, 4), dtype=np.int64)
    k = _PassFailKernel(score, passed)
    assert k.resample(counts)[0, 1] == 4.0
    assert np.array_equal(k.resample(counts), k.resample_numpy(counts))


def test_thread_split_does_not_change_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    human, metrics = _data(300, seed=3)
    counts = _counts(300, 25, seed=4)
    k = _SpearmanKernel(metrics, human)
    one = np.empty((counts.shape[0], metrics.shape[0]))
    stats_kernels.spearman_rows(counts, k.h_ties.group, k.h_ties.sizes.size, *k.layout, one)
    monkeypatch.setattr(stats_kernels, "THREADS", 3)
    split = np.empty_like(one)
    stats_kernels.in_threads(
        stats_kernels.spearman_rows, counts, k.h_ties.group, k.h_ties.sizes.size, *k.layout, split
    )
    assert np.array_equal(one, split, equal_nan=True)


def test_pass_fail_many_equals_pass_fail_per_metric() -> None:
    human, metrics = _data(80, seed=5)
    columns = {f"m{j}": row.copy() for j, row in enumerate(metrics[:4])}
    columns["m1"][[3, 10]] = np.nan  # its own missing-value pattern: its own (same-seed) resamples
    directions = {"m0": True, "m1": False, "m2": True, "m3": True}
    clusters = np.repeat(np.arange(40), 2)
    for groups in (None, clusters):
        many = stats.pass_fail_many(
            columns, human, 4.0, higher_is_better=directions, n_resamples=300, seed=2, clusters=groups
        )
        for name, x in columns.items():
            one = stats.pass_fail(
                x, human, 4.0, higher_is_better=directions[name], n_resamples=300, seed=2, clusters=groups
            )
            assert many[name] == one, name


def test_warm_up_compiles_every_kernel() -> None:
    stats_kernels.warm_up()
    for fn in (stats_kernels.pass_fail_rows, stats_kernels.spearman_rows, stats_kernels.kendall_rows):
        assert fn.signatures, fn


@pytest.mark.parametrize("n", [1, 2, 9, 150, 3000])
def test_concordance_per_item_equals_numpy_and_the_definition(n: int) -> None:
    rng = np.random.default_rng(n)
    for x_values, y_values in ((3, 5), (n, 9), (2, n), (n, n)):
        xr = rng.integers(0, max(1, x_values), n)
        yr = rng.integers(0, max(1, y_values), n)
        xr = np.unique(xr, return_inverse=True)[1].ravel()  # dense ranks, as the kernels pass them
        yr = np.unique(yr, return_inverse=True)[1].ravel()
        compiled = stats._concordance_per_item(xr, yr)
        assert np.array_equal(compiled, stats._concordance_per_item_numpy(xr, yr))
        if n <= 150:
            by_definition = (np.sign(xr[None, :] - xr[:, None]) * np.sign(yr[None, :] - yr[:, None])).sum(1)
            assert np.array_equal(compiled, by_definition)
