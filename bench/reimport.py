"""An unchanged re-import of outputs over HTTP, against importing them the first time: this tree beside an
earlier revision (--baseline, extracted with git archive), each in its own served process.

bench/imports.py's run (10,000 outputs x 5 chunks given by document and offsets, 100 documents): a fresh
SQLite store per measurement, the dataset imported, then the same outputs POSTed twice to
/runs/{id}/outputs. The second import changes nothing; it is decided from each output's fingerprint
(services.runs.service) on this tree. Sides alternate (baseline, this tree, baseline, this tree), the load
average printed beside each run.

    python bench/reimport.py [--outputs 10000] [--baseline main] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

from bench.baseline import extract, free_port  # noqa: E402
from bench.imports import team_data  # noqa: E402


def measure(root: Path, data: Any) -> tuple[float, float, dict[str, Any]]:
    """(first import s, unchanged re-import s, the re-import's report) with the code under ``root``."""
    tmp = Path(tempfile.mkdtemp())
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "RAGMETA_DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}",
        "RAGMETA_DATA_DIR": str(tmp),
        "RAGMETA_AUTH__ENABLED": "false",
        # Only the import runs: no job workers, no report processes.
        "RAGMETA_JOBS__EMBEDDED_WORKER": "false",
        "RAGMETA_REPORT_PROCESSES": "0",
        "RAGMETA_MAX_UPLOAD_BYTES": str(200 * 2**20),
    }
    py = [sys.executable, "-m", "app.cli"]
    subprocess.run([*py, "migrate"], cwd=root, env=env, check=True, capture_output=True)
    server = subprocess.Popen(
        [*py, "serve", "--port", str(port)], cwd=root, env=env, stdout=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=600) as c:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if c.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not answer /healthz in 120 s")
                time.sleep(0.1)
            ds = c.post("/datasets", json={"name": "bench", "language": "fr"}).raise_for_status().json()["id"]
            c.post(f"/datasets/{ds}/documents", json=data.docs).raise_for_status()
            c.post(f"/datasets/{ds}/questions", json=data.questions).raise_for_status()
            run = c.post(f"/datasets/{ds}/runs", json={"name": "r"}).raise_for_status().json()["id"]
            body = json.dumps(data.outputs).encode()
            headers = {"content-type": "application/json"}
            times, reports = [], []
            for _ in range(2):
                t0 = time.perf_counter()
                resp = c.post(f"/runs/{run}/outputs", content=body, headers=headers).raise_for_status()
                times.append(time.perf_counter() - t0)
                reports.append(resp.json())
    finally:
        server.terminate()
        server.wait(30)
    assert reports[0]["created"] == len(data.outputs), reports[0]
    assert reports[1]["unchanged"] == len(data.outputs), reports[1]
    return times[0], times[1], reports[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outputs", type=int, default=10_000)
    ap.add_argument("--baseline", default="main")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    data = team_data(args.outputs)
    sides = {f"baseline {args.baseline}": extract(args.baseline), "this tree": ROOT}
    print(f"{args.outputs:,} outputs x 5 chunks over HTTP (JSON body), SQLite; seconds")
    print(f"{'':<18}{'run':>4}{'first import':>14}{'unchanged again':>17}{'ratio':>8}   load average")
    rows: dict[str, list[float]] = {label: [] for label in sides}
    for i in range(args.repeat):
        for label, root in sides.items():
            load = Path("/proc/loadavg").read_text().split()[:3]
            first, again, _ = measure(root, data)
            rows[label].append(again / first)
            print(
                f"{label:<18}{i + 1:>4}{first:>14.2f}{again:>17.2f}{again / first:>8.2f}   {' '.join(load)}"
            )
    for label, ratios in rows.items():
        print(f"{label}: re-import / first import {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
