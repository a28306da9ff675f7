"""The system-level question bootstrap: drawn in blocks, it equals one draw of every resample written out with
scipy's kendalltau; ties in a resample's means are left out and counted."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from services.reports import systems


@pytest.mark.parametrize("chunk", [7, 500_000])
def test_rank_bootstrap_equals_a_loop_of_kendalltau(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    rng = np.random.default_rng(11)
    human = rng.integers(1, 6, size=(4, 9)).astype(np.float64)
    metric = np.round(human / 5 + rng.normal(0, 0.3, size=human.shape), 1)
    monkeypatch.setattr(systems, "_CHUNK_ELEMENTS", chunk)  # 7 elements: one resample per block
    defined, n_undefined = systems.rank_bootstrap(human, metric, 300, seed=5)
    idx = np.random.default_rng(5).integers(0, 9, size=(300, 9))
    # Means equal in exact arithmetic must tie: compared at 10 decimals on both sides.
    expected = np.array(
        [
            sps.kendalltau(np.round(human[:, r].mean(1), 10), np.round(metric[:, r].mean(1), 10)).statistic
            for r in idx
        ]
    )
    assert n_undefined == int(np.isnan(expected).sum())
    assert defined == pytest.approx(expected[np.isfinite(expected)], abs=1e-12)


def test_all_tied_resamples_are_undefined() -> None:
    human = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])  # every run has the same scores
    defined, n_undefined = systems.rank_bootstrap(human, human + 0.1, 50, seed=0)
    assert defined.size == 0 and n_undefined == 50
