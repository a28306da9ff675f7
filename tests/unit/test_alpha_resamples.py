"""The vectorised ordinal alpha of item resamples equals krippendorff.alpha on each resample."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from services.stats import ordinal_alpha_resamples

DOMAIN = [1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("seed", range(4))
def test_equals_the_library_on_every_resample(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raters, items = int(rng.integers(2, 5)), int(rng.integers(5, 80))
    data = rng.integers(1, 6, size=(raters, items)).astype(float)
    data[rng.random(data.shape) < 0.15] = np.nan  # missing ratings, and items rated once
    idx = rng.integers(0, items, size=(60, items))
    fast = ordinal_alpha_resamples(data, DOMAIN, idx)
    slow = [
        krippendorff.alpha(reliability_data=data[:, row], level_of_measurement="ordinal", value_domain=DOMAIN)
        for row in idx
    ]
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)


def test_a_resample_with_one_value_is_undefined_not_a_number() -> None:
    data = np.array([[3.0, 3.0, 1.0], [3.0, 3.0, 5.0]])
    idx = np.array([[0, 1, 0], [0, 2, 1]])
    out = ordinal_alpha_resamples(data, DOMAIN, idx)
    assert np.isnan(out[0]) and np.isfinite(out[1])
