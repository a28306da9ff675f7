"""Resample jobs choose between the compiled kernels (numba) and their numpy versions by size: a small job in
a process that has not loaded the compiled kernels runs on numpy (loading them would cost more than the
job), a big one loads them, and a process that has them uses them. The figures are the same either way."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from services.stats import resampling
from services.stats.corr_kernels import KendallKernel, SpearmanKernel
from services.stats.passfail import PassFailKernel

# A study's BCa intervals (Spearman and Kendall, 3 metrics) and clustered pass/fail AUC, in a fresh process
# (``preload``: one that has loaded the compiled kernels first).
JOB = """
import json, sys
import numpy as np
from services import stats
if {preload}:
    import services.stats_kernels
n, resamples = {n}, {resamples}
rng = np.random.default_rng(0)
h = rng.integers(2, 11, n) / 2
q = np.repeat(np.arange(n // 2), 2)
out = {{}}
for method in ("spearman", "kendall"):
    for j in range(3):
        x = (h + rng.normal(size=n)).round(2)
        r = stats.correlation(x, h, method, ci="bca", n_resamples=resamples, seed=1)
        out[f"{{method}}{{j}}"] = [r.estimate, r.ci_low, r.ci_high]
pf = stats.pass_fail(x, h, 4.0, clusters=q, n_resamples=resamples)
out["auc"] = [pf.auc.estimate, pf.auc.ci_low, pf.auc.ci_high]
print(json.dumps({{"numba": "numba" in sys.modules, "figures": out}}))
"""


def _run(n: int, resamples: int, preload: bool = False) -> dict[str, object]:
    code = JOB.format(n=n, resamples=resamples, preload=preload)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_small_job_in_a_fresh_process_runs_on_numpy_with_the_compiled_kernels_figures() -> None:
    small = _run(96, 2000)
    assert small["numba"] is False
    assert _run(96, 2000, preload=True) == {**small, "numba": True}


def test_a_big_job_loads_the_compiled_kernels() -> None:
    # Each correlation is a job of one statistic: 2,000 resamples of 1,000 items is over the item bound,
    # 16,000 resamples of 400 items over the work bound.
    assert resampling.NUMPY_MAX_ITEMS < 1000
    assert _run(1000, 2000)["numba"] is True
    assert resampling.NUMPY_MAX_ITEMS >= 400 and resampling.NUMPY_MAX_WORK < 400 * 16_000
    assert _run(400, 16_000)["numba"] is True


def test_the_choice() -> None:
    loaded = "services.stats_kernels" in sys.modules
    assert resampling.compiled_pays(resampling.NUMPY_MAX_WORK + 1, 10)
    assert resampling.compiled_pays(10, resampling.NUMPY_MAX_ITEMS + 1)
    assert resampling.compiled_pays(resampling.NUMPY_MAX_WORK, resampling.NUMPY_MAX_ITEMS) is loaded
    import services.stats_kernels  # noqa: F401

    assert resampling.compiled_pays(1, 1)


@pytest.mark.parametrize("n", [7, 96, 1500])
def test_jackknives_without_the_compiled_kernels_are_the_same(n: int) -> None:
    rng = np.random.default_rng(n)
    h = rng.integers(2, 11, n) / 2
    metrics = np.vstack([(h + rng.normal(size=n)).round(1), rng.normal(size=n), np.repeat([0.0, 1.0], n)[:n]])
    for kernel in (SpearmanKernel(metrics, h), KendallKernel(metrics, h)):
        assert np.array_equal(kernel.jackknife(True), kernel.jackknife(False), equal_nan=True)
        counts = rng.multinomial(n, np.full(n, 1 / n), size=30).astype(np.int64)
        assert np.array_equal(kernel.resample(counts, True), kernel.resample(counts, False), equal_nan=True)
    pf = PassFailKernel(metrics[0], h >= 4)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=30).astype(np.int64)
    assert np.array_equal(pf.resample(counts, True), pf.resample(counts, False), equal_nan=True)
