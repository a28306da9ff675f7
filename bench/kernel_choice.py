"""Resample jobs in a fresh process: the compiled kernels (numba: imported, then each kernel loaded from its
cache on first use) against their numpy versions, and what ``services.stats.resampling.compiled_pays``
chooses, by size.

Each cell is one job timed in a process of its own after ``services.stats`` is imported (as a report worker's
first report, or a CLI report, pays it): BCa intervals of Spearman and Kendall for M metrics against a mean
of ratings, n items, 2,000 resamples (seed 0), the jackknife included. Sides alternate, the median of --runs
is printed with the load average. The figures are the same on both paths (tests/unit/test_kernel_choice.py).

    .venv/bin/python bench/kernel_choice.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

JOB = """
import json, sys, time
import numpy as np
from services.stats import resampling
from services import stats
if {force!r} == "compiled":
    resampling.NUMPY_MAX_WORK = -1
elif {force!r} == "numpy":
    resampling.NUMPY_MAX_WORK = resampling.NUMPY_MAX_ITEMS = 1 << 62
n, m = {n}, {m}
rng = np.random.default_rng(0)
h = rng.integers(2, 11, n) / 2
x = {{f"m{{j}}": (h + rng.normal(size=n)).round(2) for j in range(m)}}
t = time.perf_counter()
for method in ("spearman", "kendall"):
    stats.correlations_many(x, h, method, ci="bca", n_resamples=2000, seed=0)
print(json.dumps({{"s": time.perf_counter() - t, "numba": "numba" in sys.modules}}))
"""

SIZES = [(96, 5), (96, 25), (300, 10), (500, 5), (1000, 3), (1000, 25), (3000, 10)]


def run(n: int, m: int, force: str) -> tuple[float, bool]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = JOB.format(n=n, m=m, force=force)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return float(result["s"]), bool(result["numba"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average before: {load} ({os.cpu_count()} CPUs)")
    print("seconds, median of", args.runs, "fresh processes; work = 2,000 resamples x n x M per method")
    head = f"{'n':>6}{'M':>4}{'work':>12}{'compiled':>10}{'numpy':>8}{'chosen':>8}  {'path':<9}"
    print(head + f"{'chosen/best':>12}   load")
    for n, m in SIZES:
        times: dict[str, list[float]] = {"compiled": [], "numpy": [], "chosen": []}
        path = ""
        for _ in range(args.runs):
            for force in times:
                seconds, numba = run(n, m, force)
                times[force].append(seconds)
                if force == "chosen":
                    path = "compiled" if numba else "numpy"
        med = {k: statistics.median(v) for k, v in times.items()}
        best = min(med["compiled"], med["numpy"])
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        cells = f"{n:>6}{m:>4}{2000 * n * m:>12,}{med['compiled']:>10.3f}{med['numpy']:>8.3f}"
        print(cells + f"{med['chosen']:>8.3f}  {path:<9}{med['chosen'] / best:>11.2f}x   {load}")
    print(
        "compiled: the numba kernels, numba imported and the kernels loaded from their cache inside the job;"
    )
    print("numpy: the same statistics in numpy; chosen: what the service runs (compiled_pays)")


if __name__ == "__main__":
    main()
