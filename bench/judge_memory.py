"""Memory over many judge jobs: what the process tree holds after each, and what grows from job to job.

    python bench/judge_memory.py [--jobs 20] [--samples 8] [--processes 2] [--tracemalloc]

The service as bench/judges.py runs it (this process is the API's role with the judge gateway, ``--processes``
worker processes score) against the loopback test judge (its own process, not counted). ``--jobs`` scoring
jobs of the same run with every judge metric, each with ``refresh_judge_cache`` after the first (every
library runs and asks the judge again). After each job: the resident memory (RSS) of this process and of
each worker process, and of the tree (their sum), with the growth from the previous job. At the end the
growth of the tree between job 5 and the last, in % (the goal: under 2 %), and with ``--tracemalloc`` the
allocation sites of this process that grew most between those jobs.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judges as jb  # noqa: E402


def rss_mb(pid: int | None = None) -> float:
    import psutil

    try:
        return float(psutil.Process(pid).memory_info().rss) / 2**20
    except psutil.Error:
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--from-job", type=int, default=5, help="growth measured from the end of this job")
    ap.add_argument("--tracemalloc", action="store_true", help="allocation sites of this process that grew")
    args = ap.parse_args()

    items = jb.demo_items(args.samples)
    tmp = Path(tempfile.mkdtemp(prefix="bench-judge-memory-"))
    jb.warm_up()
    judge = jb.JudgeProcess(0.0, False)
    bench = jb.Bench(0.0, args.concurrency)
    k = len(items[0].contexts)
    trees: list[float] = []
    snapshot = None
    top: list[str] = []
    print(f"{args.jobs} jobs of {args.samples} samples x every judge metric; load {jb.loadavg()} at start")
    print(
        f"{'job':>4}{'tree MB':>10}{'+MB':>8}{'API MB':>9}"
        + "".join(f"{f'worker {i}':>11}" for i in range(args.processes))
        + f"{'requests':>10}{'load':>7}"
    )
    try:
        svc = jb.start_service(bench, judge, items, tmp / "service", args.processes)
        if args.tracemalloc:
            tracemalloc.start(12)
        try:
            for job in range(1, args.jobs + 1):
                seen, info = jb.service_job(svc, judge, k, recompute=job > 1, refresh=job > 1)
                jb.forget_requests(judge)
                if info["status"] != "done":
                    raise SystemExit(f"job {job}: {info['status']}")
                gc.collect()
                parts = [rss_mb(), *(rss_mb(pid) for pid in svc.pids)]
                trees.append(sum(parts))
                grew = trees[-1] - trees[-2] if len(trees) > 1 else 0.0
                print(
                    f"{job:>4}{trees[-1]:>10.0f}{grew:>+8.1f}"
                    + "".join(f"{p:>{9 if i == 0 else 11}.0f}" for i, p in enumerate(parts))
                    + f"{seen['requests']:>10}{seen['load']:>7}",
                    flush=True,
                )
                if args.tracemalloc and job == args.from_job:
                    snapshot = tracemalloc.take_snapshot()
            if snapshot is not None:
                stats = tracemalloc.take_snapshot().compare_to(snapshot, "traceback")
                for stat in stats[:8]:
                    frames = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}" for f in stat.traceback][
                        -4:
                    ]
                    top.append(
                        f"  {stat.size_diff / 1024:+9.1f} kB {stat.count_diff:+7d} blocks  "
                        + " < ".join(reversed(frames))
                    )
        finally:
            jb.stop_service(svc)
    finally:
        judge.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    a = args.from_job - 1
    if len(trees) > a + 1:
        per_job = (trees[-1] - trees[a]) / (len(trees) - 1 - a)
        print(
            f"tree after job {args.from_job}: {trees[a]:.0f} MB, after job {len(trees)}: {trees[-1]:.0f} MB: "
            f"{(trees[-1] / trees[a] - 1) * 100:+.2f} % ({per_job:+.1f} MB per job); load {jb.loadavg()}"
        )
    if top:
        print(f"this process, allocation sites grown most between job {args.from_job} and the last:")
        print("\n".join(top))


if __name__ == "__main__":
    main()
