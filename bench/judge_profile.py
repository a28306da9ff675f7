"""Where the CPU of a judge request goes: the service's path and each library's own loop, by component.

    python bench/judge_profile.py [--libraries ragas,deepeval,opik,ragchecker] [--samples 32]
                                  [--processes 2] [--rate 250] [--py-spy PATH] [--keep DIR]
                                  [--gateway-cache]

For each library, one refreshed scoring job with only its metrics (bench/judges.py's service path: this
process is the API's role with the judge gateway, ``--processes`` worker processes score) and then the
library's own loop (bench/judges.py's, in as many processes), against the loopback test judge (its own
process, answering at once). py-spy samples every process of the path (never the judge's) for the whole run,
without stopping them; each sample is given to one component:

  gateway        the judge gateway's server, cache, ledger and upstream client (its thread: uvicorn,
                 starlette, services/judge)
  database       SQLAlchemy, sqlite3, the jobs and scores code (claiming, storing, the ledger's figures)
  logging        the logging module
  validation     pydantic (the libraries' own output models, the openai SDK's, ours)
  json           the json module
  client http    the HTTP client the library's calls go through (openai SDK, httpx, httpcore, h11, anyio,
                 litellm's transport)
  event loop     asyncio, selectors, threading, concurrent.futures: loop and thread hand-offs
  adapter        services/metrics (the adapters, the batch scheduling)
  library        the library's own code (ragas, instructor, deepeval, opik, litellm, ragchecker, refchecker)
  other          the rest (interpreter start-up frames, numpy, torch ...)

Rules, first match from the root of the stack for the first three (a request's whole time in the gateway is
the gateway's), then from the leaf for the others (JSON parsing inside a library counts as JSON). Figures are
ms of CPU per judge request: the measured CPU time split in the proportions of the samples (py-spy also
counts threads runnable but waiting for a core); compare the same component on both sides.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judges as jb  # noqa: E402

ROOT_RULES = (
    ("gateway", ("services/judge/", "uvicorn/", "starlette/")),
    ("database", ("sqlalchemy/", "sqlite3/", "services/jobs/", "services/scores/", "services/db", "psycopg")),
    ("logging", ("logging/",)),
)
LEAF_RULES = (
    ("validation", ("pydantic/", "pydantic_core/")),
    ("json", ("json/", "orjson")),
    (
        "client http",
        (
            "openai/",
            "httpx/",
            "httpcore/",
            "h11/",
            "anyio/",
            "ssl.py",
            "socket.py",
            "aiohttp/",
            "litellm/llms/",
        ),
    ),
    ("event loop", ("asyncio/", "selectors.py", "threading.py", "concurrent/", "queue.py")),
    ("adapter", ("services/",)),
    (
        "library",
        (
            "ragas/",
            "instructor/",
            "deepeval/",
            "opik/",
            "litellm/",
            "ragchecker/",
            "refchecker/",
            "langchain",
        ),
    ),
)
ORDER = [name for name, _ in ROOT_RULES + LEAF_RULES] + ["other"]


def _category(frames: list[str]) -> str:
    for name, marks in ROOT_RULES:
        if any(m in f for f in frames for m in marks):
            return name
    for frame in reversed(frames):
        for name, marks in LEAF_RULES:
            if any(m in frame for m in marks):
                return name
    return "other"


def shares(raw: Path) -> Counter[str]:
    """Samples per component from py-spy's raw (collapsed) output."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        counts[_category(stack.split(";"))] += int(n)
    return counts


class Profiler:
    """py-spy on each of ``pids`` until stopped; the samples of all of them by component."""

    def __init__(self, spy: str, pids: list[int], rate: int, out: Path) -> None:
        self.rate = rate
        self.files = [out / f"spy-{pid}-{time.monotonic_ns()}.txt" for pid in pids]
        self.procs = [
            subprocess.Popen(
                [
                    spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--rate",
                    str(rate),
                    "--format",
                    "raw",
                    "--nonblocking",
                    "--output",
                    str(f),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid, f in zip(pids, self.files, strict=True)
        ]
        time.sleep(1.0)  # py-spy attached

    def stop(self) -> Counter[str]:
        for proc in self.procs:
            proc.send_signal(2)  # SIGINT: py-spy writes its output and exits
        for proc in self.procs:
            proc.wait(60)
        total: Counter[str] = Counter()
        for f in self.files:
            if f.exists():
                total += shares(f)
        return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libraries", default="ragas,deepeval,opik,ragchecker")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second per process")
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    ap.add_argument(
        "--gateway-cache", action="store_true", help="the service's gateway with its cache on (as served)"
    )
    ap.add_argument("--keep", type=Path, help="a folder to keep py-spy's raw (collapsed) stacks in")
    args = ap.parse_args()
    libs = [x for x in args.libraries.split(",") if x]

    items = jb.demo_items(args.samples)
    tmp = Path(tempfile.mkdtemp(prefix="bench-judge-profile-"))
    jb.warm_up()
    judge = jb.JudgeProcess(0.0, False)
    bench = jb.Bench(0.0, args.concurrency)
    k = len(items[0].contexts)
    results: dict[tuple[str, str], tuple[Counter[str], int, float]] = {}
    try:
        svc = jb.start_service(bench, judge, items, tmp / "service", args.processes)
        try:
            # Without the cache every request the library makes is sent, as by its own loop.
            svc.gateway.cache = args.gateway_cache
            for lib in libs:
                names = [n for n in svc.names if n.startswith(lib + ".")]
                prof = Profiler(args.py_spy, [os.getpid(), *svc.pids], args.rate, tmp)
                seen, info = jb.service_job(svc, judge, k, names, recompute=True, refresh=True)
                results[(lib, "service")] = (prof.stop(), seen["requests"], seen["cpu"])
                jb.forget_requests(judge)
                print(
                    f"{lib}: service job {info['status']}, {info['failed']}/{info['total']} failed, "
                    f"load {jb.loadavg()}",
                    flush=True,
                )
        finally:
            jb.stop_service(svc)
        pool = jb.LibraryProcesses(args.processes)
        try:
            for lib in libs:
                prof = Profiler(args.py_spy, [p.pid for p in pool.procs], args.rate, tmp)
                with jb.watching(judge) as seen:
                    cpu, failed, note = pool.run(lib, items, judge.base_url, args.concurrency, tmp, 600.0)
                results[(lib, "own loop")] = (prof.stop(), seen["requests"], cpu + seen["cpu"])
                jb.forget_requests(judge)
                print(f"{lib}: own loop, {failed} failed {note}, load {jb.loadavg()}", flush=True)
        finally:
            pool.stop()
    finally:
        judge.stop()
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for f in tmp.glob("spy-*.txt"):
                shutil.copy(f, args.keep / f.name)
        shutil.rmtree(tmp, ignore_errors=True)
    _print(results, libs, args.rate)


def _print(
    results: dict[tuple[str, str], tuple[Counter[str], int, float]], libs: list[str], rate: int
) -> None:
    print()
    print(
        "ms of CPU per judge request: cpu/req = measured CPU time of the path's processes / judge requests, "
        "split by component in the proportions of py-spy's samples"
    )
    print(f"{'library':<11}{'path':<10}{'requests':>9}{'cpu/req':>9}" + "".join(f"{c:>12}" for c in ORDER))
    for lib in libs:
        for path in ("service", "own loop"):
            found = results.get((lib, path))
            if found is None:
                continue
            counts, requests, cpu = found
            # py-spy also samples threads that are runnable but waiting for a core (a loaded machine): the
            # shares are its, scaled to the CPU time measured.
            per_req = cpu * 1000 / max(requests, 1)
            total = max(sum(counts.values()), 1)
            print(
                f"{lib:<11}{path:<10}{requests:>9}{per_req:>9.2f}"
                + "".join(f"{counts.get(c, 0) / total * per_req:>12.2f}" for c in ORDER)
            )


if __name__ == "__main__":
    main()
