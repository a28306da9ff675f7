"""Bootstrap intervals for a report: shared-index vectorised BCa vs a per-metric scipy.stats.bootstrap loop.

Synthetic data: 10,000 items with a human score (mean of two 1-5 ratings) and 50 metrics of varying quality
(continuous, 0.1-step and binary scores). Every metric gets a 95% BCa interval from 2,000 paired resamples.
The vectorised path (services.stats.bootstrap_ci_many) evaluates all metrics on one resample index matrix,
drawn in blocks. The scipy loop is timed on a few metrics and extrapolated to all of them (printed as such);
its intervals must equal the vectorised ones for those metrics.

Each measured step runs in a fresh process, so its peak memory is its own: the growth of the resident set
over the process' size just before the step (Linux VmHWM after resetting it).

Spearman and Kendall run on the compiled kernels (services/stats_kernels.py) and again on the numpy kernels
they replaced (the previous path): the intervals must be identical, the ratio is printed.

Usage: python bench/report.py [--items 10000] [--metrics 50] [--resamples 2000] [--methods pearson,spearman]
       [--no-scipy] [--no-numpy]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import scipy
from numpy.typing import NDArray
from scipy import stats as sps

# The repository root in place of bench/ (the script's directory) on the path: bench/coverage.py must
# not shadow the coverage package, which numba imports.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from services.stats import CorrMethod, bootstrap_ci_many, warm_up  # noqa: E402
from services.stats.corr_kernels import KendallKernel, SpearmanKernel  # noqa: E402
from services.stats_kernels import THREADS  # noqa: E402

METHODS: dict[str, CorrMethod] = {"pearson": "pearson", "spearman": "spearman", "kendall": "kendall"}
# scipy is slow enough per metric that only a few are timed; Spearman's jackknife alone is 10,000 calls.
SCIPY_SUBSET = {"pearson": 3, "spearman": 1, "kendall": 1}
SCIPY_BATCH = 200  # bounds scipy's memory (its jackknife is n x (n - 1) otherwise); same draws, same result

Limits = dict[str, tuple[float | None, float | None]]


def synthetic(
    n_items: int, n_metrics: int, seed: int
) -> tuple[NDArray[np.float64], dict[str, NDArray[np.float64]]]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n_items)
    ratings = [np.clip(np.round(3 + 1.1 * quality + rng.normal(0, 0.6, n_items)), 1, 5) for _ in range(2)]
    human = (ratings[0] + ratings[1]) / 2
    metrics: dict[str, NDArray[np.float64]] = {}
    for j in range(n_metrics):
        signal = 0.05 + 0.9 * j / max(1, n_metrics - 1)
        score = signal * quality + rng.normal(size=n_items)
        if j % 5 == 3:
            score = np.round(1 / (1 + np.exp(-score)), 1)  # 0.1-step judge scores
        elif j % 5 == 4:
            score = (score > 0.5).astype(np.float64)  # binary verdicts
        metrics[f"metric_{j:02d}"] = score
    return human, metrics


def _status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def _scipy_statistic(method: CorrMethod, x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    if method == "pearson":
        return float(sps.pearsonr(x, y).statistic)
    if method == "spearman":
        return float(sps.spearmanr(x, y).statistic)
    return float(sps.kendalltau(x, y).statistic)


def step(
    path: str, method: CorrMethod, names: list[str], args: argparse.Namespace
) -> tuple[float, float, Limits]:
    """One measured step, run in its own process: (wall seconds, peak memory growth in MB, intervals)."""
    human, metrics = synthetic(args.items, args.metrics, args.seed)
    # As a report worker does when it starts: imports and compiled kernels loaded (numba's disk cache).
    warm_up()
    if path == "numpy":
        # The numpy resample kernels the compiled ones replaced (services.stats keeps them as reference).
        for kernel in (SpearmanKernel, KendallKernel):
            kernel.resample = kernel.resample_numpy  # type: ignore[method-assign]
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current size
    baseline = _status_mb("VmRSS")
    start, cpu_start = time.perf_counter(), time.process_time()
    limits: Limits = {}
    if path in ("vectorised", "numpy"):
        ours = bootstrap_ci_many(
            {name: metrics[name] for name in names}, human, method, n_resamples=args.resamples, seed=args.seed
        )
        limits = {name: (res.low, res.high) for name, res in ours.items()}
    else:
        for name in names:
            res = sps.bootstrap(
                (metrics[name], human),
                lambda x, y: _scipy_statistic(method, x, y),
                paired=True,
                vectorized=False,
                method="BCa",
                n_resamples=args.resamples,
                batch=SCIPY_BATCH,
                rng=np.random.default_rng(args.seed),
            )
            limits[name] = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return elapsed, cpu, _status_mb("VmHWM") - baseline, limits


def run(method: CorrMethod, args: argparse.Namespace) -> None:
    names = [f"metric_{j:02d}" for j in range(args.metrics)]
    subset = names[: SCIPY_SUBSET[method]]
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        ours_s, ours_cpu, ours_mb, ours = pool.submit(step, "vectorised", method, names, args).result()
    numpy_s = None
    if method != "pearson" and not args.no_numpy:
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            numpy_s, numpy_cpu, numpy_mb, reference = pool.submit(step, "numpy", method, names, args).result()
        assert reference == ours, "compiled and numpy kernels give different intervals"
    if args.no_scipy:
        subset = []
        scipy_s = scipy_cpu = scipy_mb = scipy_total_s = float("nan")
        theirs: Limits = {}
    else:
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            scipy_s, scipy_cpu, scipy_mb, theirs = pool.submit(step, "scipy", method, subset, args).result()
        scipy_total_s = scipy_s / len(subset) * len(names)

    worst = 0.0
    for name in subset:
        (low, high), (ref_low, ref_high) = ours[name], theirs[name]
        assert low is not None and high is not None and ref_low is not None and ref_high is not None
        worst = max(worst, abs(low - ref_low), abs(high - ref_high))
    undefined = [name for name, (low, _) in ours.items() if low is None]

    def row(label: str, seconds: float, cpu: float | None = None, memory: str = "") -> None:
        cpu_text = f"{cpu:>10.2f} s" if cpu is not None else f"{'':>12}"
        print(f"  {label:<58}{seconds:>10.2f} s{cpu_text}{memory:>16}")

    print(f"\n{method}: {len(names)} metrics x {args.items:,} items x {args.resamples:,} resamples, BCa 95%")
    print(f"  {'path':<58}{'wall time':>12}{'CPU time':>12}{'peak memory':>16}")
    compiled = " (compiled kernels)" if method != "pearson" else ""
    row(f"vectorised, shared index (all metrics){compiled}", ours_s, ours_cpu, f"{ours_mb:.0f} MB")
    if numpy_s is not None:
        row("same, numpy kernels (the previous path)", numpy_s, numpy_cpu, f"{numpy_mb:.0f} MB")
        print(
            f"  speed-up (numpy kernels / compiled): {numpy_s / ours_s:,.1f}x wall, "
            f"{numpy_cpu / ours_cpu:,.1f}x CPU; intervals identical"
        )
    if subset:
        timed = f"scipy.stats.bootstrap loop, {len(subset)} metric(s) timed"
        row(timed, scipy_s, scipy_cpu, f"{scipy_mb:.0f} MB")
        row(f"scipy loop extrapolated to {len(names)} metrics", scipy_total_s)
        print(f"  speed-up (extrapolated scipy / vectorised): {scipy_total_s / ours_s:,.0f}x")
        print(f"  intervals agree on the {len(subset)} scipy metric(s): max |difference| = {worst:.1e}")
    if undefined:
        print(f"  undefined intervals: {', '.join(undefined)}")
    assert worst <= 1e-9, "vectorised and scipy intervals disagree"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--metrics", type=int, default=50)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--methods", default="pearson,spearman", help="comma-separated; kendall is slow at 10k"
    )
    parser.add_argument("--no-scipy", action="store_true", help="skip the (slow) scipy.stats.bootstrap loop")
    parser.add_argument("--no-numpy", action="store_true", help="skip the numpy-kernel path")
    args = parser.parse_args()
    print(f"numpy {np.__version__}, scipy {scipy.__version__}; threads for the compiled kernels: {THREADS}")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print(f"scipy loop runs with batch={SCIPY_BATCH} (identical draws and intervals, bounded memory)")
    for name in args.methods.split(","):
        run(METHODS[name], args)
    print("\npeak memory: growth of the step's resident set over its size before the step (own process)")
    print("CPU time: the step process's, all its threads (on a shared machine, steadier than wall time)")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
