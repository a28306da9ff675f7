"""Start-up of the served API: how soon `/healthz` answers after a restart, and how soon the first report
page follows; this tree beside an earlier revision (--baseline, extracted with git archive).

A demo store is prepared once (untimed; `ragmeta run` on an empty data directory, this tree's code, its
report page then viewed once) and copied afresh for every measurement, so each restart finds the demo
already stored, as after a real restart. Per side and run:

- `ragmeta run` (the demo prepared again, finding it unchanged): seconds from the process's start to the
  first 200 of `/healthz` (polled every 20 ms), then the first report page (`/runs/1/report.html`)
  requested at once: its seconds after `/healthz` answered, and the same page again (cached);
- `ragmeta run --no-demo`: seconds to `/healthz`.

Sides alternate (baseline, this tree, ...), the load average printed beside each run. The embedded
defaults otherwise (SQLite, one report process, one job worker process per core). Each side's bytecode is
compiled first, as `make run` does; the environment's is its install's (scripts/install_locked.py).

    python bench/startup.py [--baseline main] [--repeat 2]
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

from bench.baseline import extract, free_port  # noqa: E402

PAGE = "/runs/1/report.html"


def _env(root: Path, data: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(root),
        "RAGMETA_DATABASE_URL": f"sqlite:///{data / 'ragmeta.db'}",
        "RAGMETA_DATA_DIR": str(data),
        "RAGMETA_AUTH__ENABLED": "false",
    }


def _wait(c: httpx.Client, path: str, proc: subprocess.Popen[bytes], timeout: float) -> float:
    """Poll ``path`` until it answers 200; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if c.get(path).status_code == 200:
                return time.monotonic()
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{path} did not answer in {timeout} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def prepare_demo() -> Path:
    """A data directory with the demo stored by this tree's `ragmeta run` (stopped after its summary)."""
    data = Path(tempfile.mkdtemp()) / "demo"
    data.mkdir()
    port = free_port()
    cmd = [sys.executable, "-m", "app.cli", "run", "--port", str(port)]
    log = data.parent / "prepare.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(ROOT, data), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 1200
            while b"Landing page:" not in log.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the demo was not prepared: see {log}")
                time.sleep(0.5)
            # The page viewed once before the restart, as a user of the demo does (kept with the data).
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as c:
                c.get(PAGE).raise_for_status()
        finally:
            _stop(proc)
    return data


def restart(root: Path, demo: Path, with_demo: bool) -> dict[str, float]:
    data = Path(tempfile.mkdtemp()) / "data"
    shutil.copytree(demo, data)
    port = free_port()
    cmd = [sys.executable, "-m", "app.cli", "run", "--port", str(port)] + ([] if with_demo else ["--no-demo"])
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=root, env=_env(root, data), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as c:
            up = _wait(c, "/healthz", proc, 300)
            out = {"healthz": up - t0}
            if with_demo:
                t = time.monotonic()
                c.get(PAGE).raise_for_status()
                out["page"] = time.monotonic() - t
                t = time.monotonic()
                c.get(PAGE).raise_for_status()
                out["cached"] = time.monotonic() - t
    finally:
        _stop(proc)
        shutil.rmtree(data.parent, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="main")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--demo-store", type=Path, help="a data directory with the demo already stored (copied)")
    args = ap.parse_args()
    demo = args.demo_store or prepare_demo()
    sides = {f"baseline {args.baseline}": extract(args.baseline), "this tree": ROOT}
    for root in sides.values():
        # As `make run` and the image do: the service's bytecode written ahead (the environment's own is
        # written at install), so that no side compiles its sources at every start.
        subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "services"], cwd=root, check=True)
    print("seconds; healthz: process start to the first 200; page: the first report page after healthz;")
    print("cached: the same page again; --no-demo: healthz of `ragmeta run --no-demo`")
    print(f"{'':<16}{'run':>4}{'healthz':>9}{'page':>7}{'cached':>8}{'--no-demo':>11}   load average")
    for i in range(args.repeat):
        for label, root in sides.items():
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            full = restart(root, demo, True)
            bare = restart(root, demo, False)
            print(
                f"{label:<16}{i + 1:>4}{full['healthz']:>9.2f}{full['page']:>7.2f}{full['cached']:>8.2f}"
                f"{bare['healthz']:>11.2f}   {load}"
            )
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    if not args.demo_store:
        shutil.rmtree(demo.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
