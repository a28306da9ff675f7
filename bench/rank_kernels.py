"""The resample kernels at a large report's size: 50 metrics x 10,000 items x 2,000 BCa resamples, Pearson,
Spearman and Kendall, this tree beside an earlier revision (--baseline, extracted with git archive).

Each measurement runs `services.stats.bootstrap_ci_many` in a fresh process of its side's tree, after
`warm_up()` (imports and compiled kernels loaded, as in a report worker; a side's first run compiles its
kernels into its own numba cache, untimed). Sides alternate, run by run, with the load average beside each
run; wall and CPU seconds (the process's, all its threads) of the call alone. The intervals of the two
sides must be identical (the kernels compute the same integer sums): the bench fails otherwise.

The data are bench/report.py's: a human score (mean of two 1-5 ratings: 9 distinct values) and metrics
that are continuous (30), in 0.1 steps (10) or binary (10).

    python bench/rank_kernels.py [--baseline main] [--repeat 2] [--methods pearson,spearman,kendall]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

from bench.baseline import extract  # noqa: E402
from bench.report import synthetic  # noqa: E402

# Run in the side's tree, after the source of bench/report.py's ``synthetic`` (the same arrays on both sides).
STEP = """
import hashlib, json, sys, time
import numpy as np
from numpy.typing import NDArray
method, items, n_metrics, resamples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
from services.stats import bootstrap_ci_many, warm_up
human, metrics = synthetic(items, n_metrics, 0)
warm_up()
start, cpu = time.perf_counter(), time.process_time()
res = bootstrap_ci_many(metrics, human, method, n_resamples=resamples, seed=0)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
limits = repr([(k, v.low, v.high, v.p_value) for k, v in sorted(res.items())]).encode()
print(json.dumps({"wall": wall, "cpu": cpu, "digest": hashlib.sha256(limits).hexdigest()}))
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(root: Path, method: str, args: argparse.Namespace) -> dict[str, float | str]:
    code = "from __future__ import annotations\n" + inspect.getsource(synthetic) + STEP
    cmd = [sys.executable, "-c", code, method]
    cmd += [str(args.items), str(args.metrics), str(args.resamples)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True, text=True)
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="main")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--methods", default="pearson,spearman,kendall")
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--metrics", type=int, default=50)
    ap.add_argument("--resamples", type=int, default=2_000)
    args = ap.parse_args()
    base = extract(args.baseline)
    size = f"{args.metrics} metrics x {args.items:,} items x {args.resamples:,} resamples"
    print(f"{size}, BCa 95%, {os.cpu_count()} CPUs")
    print("seconds of bootstrap_ci_many alone (fresh process, after warm_up); ratio = baseline / this tree")
    print(
        f"{'method':<10}{'run':>4}{'baseline wall':>15}{'cpu':>7}{'this tree wall':>16}{'cpu':>7}"
        f"{'ratio wall':>12}{'cpu':>7}   load average"
    )
    for method in args.methods.split(","):
        # Compiles each side's kernels into its numba cache the first time (untimed).
        measure(base, method, argparse.Namespace(items=50, metrics=2, resamples=10))
        measure(ROOT, method, argparse.Namespace(items=50, metrics=2, resamples=10))
        for i in range(args.repeat):
            before = load()
            old = measure(base, method, args)
            new = measure(ROOT, method, args)
            if old["digest"] != new["digest"]:
                raise SystemExit(f"{method}: the intervals differ between the baseline and this tree")
            ow, oc, nw, nc = (float(v) for v in (old["wall"], old["cpu"], new["wall"], new["cpu"]))
            print(
                f"{method:<10}{i + 1:>4}{ow:>15.2f}{oc:>7.2f}{nw:>16.2f}{nc:>7.2f}"
                f"{ow / nw:>12.2f}{oc / nc:>7.2f}   {before}"
            )
    print("intervals (limits and p-values of every metric) identical on both sides")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
