"""Clone to demo page, as a newcomer meets the project: a fresh clone, `make run`, and the seconds until the
demo's report page answers with the demo's data; the serving install (`make run`) beside the whole
development install first (`make setup && make run`, what a clone cost before serving had a lock of its own).

Each run starts from nothing of its own: a new clone of this repository's HEAD, a new virtual environment,
and empty package caches (uv's and pip's, each pointed at a new directory), so every wheel is fetched again
from the package sources pip is configured with. Nothing is shared between runs but the system's Python,
Debian's packages and those package sources. Sides alternate, the load average printed beside each run.

    python bench/clone_to_demo.py [--repeat 2] [--timeout 1800] [--serving-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

from bench.baseline import free_port  # noqa: E402

PAGE = "/runs/1/report.html"
SIDES = {
    "make run (serving install)": "make run",
    "make setup && make run (everything)": "make setup && make run",
}


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _demo_ready(port: int) -> bool:
    """The demo's page answers and shows scored data (its report, not an empty run)."""
    try:
        r = httpx.get(f"http://127.0.0.1:{port}{PAGE}", timeout=5)
    except httpx.HTTPError:
        return False
    return r.status_code == 200 and "Pearson" in r.text


def one(command: str, timeout: float) -> tuple[float, int]:
    """Seconds from the clone's start to the demo page, and the venv's size in bytes."""
    work = Path(tempfile.mkdtemp(prefix="ragmeta-clone-"))
    port = free_port()
    env = dict(os.environ, UV_CACHE_DIR=str(work / "uv-cache"), PIP_CACHE_DIR=str(work / "pip-cache"))
    t0 = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work / "ragmeta")], check=True)
    log = (work / "log").open("w")
    proc = subprocess.Popen(
        ["sh", "-c", f"{command} PORT={port}"],
        cwd=work / "ragmeta",
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        while not _demo_ready(port):
            if proc.poll() is not None:
                raise SystemExit(f"{command} ended ({proc.returncode}) before the demo: see {work / 'log'}")
            if time.perf_counter() - t0 > timeout:
                raise SystemExit(f"{command}: no demo page within {timeout:.0f} s: see {work / 'log'}")
            time.sleep(1)
        seconds = time.perf_counter() - t0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    size = int(
        subprocess.run(
            ["du", "-sb", str(work / "ragmeta" / ".venv")], capture_output=True, text=True
        ).stdout.split()[0]
    )
    shutil.rmtree(work, ignore_errors=True)
    return seconds, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--serving-only", action="store_true", help="time `make run` alone (no ratio)")
    args = parser.parse_args()
    sides = dict(list(SIDES.items())[:1]) if args.serving_only else SIDES
    results: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(args.repeat):
        for name, command in sides.items():
            before = _loadavg()
            seconds, size = one(command, args.timeout)
            results[name].append(seconds)
            print(
                f"run {i + 1}  {name:<38} {seconds:7.0f} s to the demo page  venv {size / 1e9:.2f} GB"
                f"  load {before} -> {_loadavg()}",
                flush=True,
            )
    if args.serving_only:
        return
    serving, everything = (min(v) for v in results.values())
    print(f"serving install / everything, best of {args.repeat}: {serving / everything:.2f}")


if __name__ == "__main__":
    main()
