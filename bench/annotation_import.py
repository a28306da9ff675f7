"""An annotation export onto a traced run in one request, against the obvious alternative: the same ratings
and judge scores converted by the caller and posted as the ratings import (POST /runs/{id}/ratings) and the
score import (POST /runs/{id}/scores).

One served process on a fresh SQLite store; a run of --traces outputs sent as OTLP traces (100 a request);
a Langfuse export of two annotators' scores and one judge score per trace (3 x traces scores) with its score
config. Each side runs on a run of its own, --repeat times, alternating; the load average is printed beside
each measurement. The second posting of the same export (nothing changes) is timed too.

    python bench/annotation_import.py [--traces 2000] [--repeat 2]
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

from bench.baseline import free_port  # noqa: E402
from services.otlp.service import question_key  # noqa: E402
from tests.annotationdata import LEVELS, otlp_body, question, trace_id  # noqa: E402
from tests.otlpdata import DOCS  # noqa: E402


def human(i: int, rater: int) -> int:
    return 1 + (i * 7 + rater * 3) % 5


def judge(i: int) -> float:
    return round(((i * 37) % 100) / 100, 2)


def export(n: int) -> tuple[bytes, bytes]:
    data: list[dict[str, Any]] = []
    for i in range(n):
        for rater in (1, 2):
            data.append(
                {
                    "id": f"h{rater}-{i}",
                    "name": "correctness",
                    "source": "ANNOTATION",
                    "dataType": "CATEGORICAL",
                    "value": float(human(i, rater)),
                    "stringValue": LEVELS[human(i, rater)],
                    "authorUserId": f"user-{rater}",
                    "traceId": trace_id(i),
                }
            )
        data.append(
            {
                "id": f"j-{i}",
                "name": "judge",
                "source": "EVAL",
                "dataType": "NUMERIC",
                "value": judge(i),
                "traceId": trace_id(i),
            }
        )
    config = {
        "data": [
            {
                "id": "c",
                "name": "correctness",
                "dataType": "CATEGORICAL",
                "categories": [{"label": label, "value": v} for v, label in LEVELS.items()],
            }
        ]
    }
    return json.dumps({"data": data}).encode(), json.dumps(config).encode()


def traced(c: httpx.Client, run: str, n: int) -> int:
    headers = {"Content-Type": "application/json", "X-Ragmeta-Dataset": "bench", "X-Ragmeta-Run": run}
    run_id = 0
    for start in range(0, n, 100):
        r = c.post("/v1/traces", content=otlp_body(list(range(start, min(n, start + 100)))), headers=headers)
        run_id = r.raise_for_status().json()["run_id"]
    return run_id


def one_step(c: httpx.Client, run: int, body: bytes, config: bytes) -> float:
    files = {"file": ("scores.json", body), "configs": ("configs.json", config)}
    form = {"platform": "langfuse", "higher_is_better": "judge"}
    t0 = time.perf_counter()
    c.post(f"/runs/{run}/annotations", data=form, files=files).raise_for_status()
    return time.perf_counter() - t0


def two_imports(c: httpx.Client, run: int, n: int) -> float:
    """What a caller does without the importer, having joined the traces to the question ids itself: the
    ratings and the scores as rows of the two imports."""
    qid = [question_key(question(i)) for i in range(n)]
    ratings = [
        {"question_id": qid[i], "rater": f"user-{r}", "score": human(i, r), "rubric": "bench.correctness"}
        for i in range(n)
        for r in (1, 2)
    ]
    scores = [
        {
            "question_id": qid[i],
            "metric": "external.langfuse.judge",
            "value": judge(i),
            "higher_is_better": True,
        }
        for i in range(n)
    ]
    t0 = time.perf_counter()
    c.post(f"/runs/{run}/ratings", params={"register_raters": "true"}, json=ratings).raise_for_status()
    c.post(f"/runs/{run}/scores", json=scores).raise_for_status()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGMETA_DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}",
        "RAGMETA_DATA_DIR": str(tmp),
        "RAGMETA_AUTH__ENABLED": "false",
        "RAGMETA_JOBS__EMBEDDED_WORKER": "false",
        "RAGMETA_REPORT_PROCESSES": "0",
        "RAGMETA_MAX_UPLOAD_BYTES": str(200 * 2**20),
        "RAGMETA_MAX_REQUEST_BYTES": str(200 * 2**20),
    }
    py = [sys.executable, "-m", "app.cli"]
    subprocess.run([*py, "migrate"], cwd=ROOT, env=env, check=True, capture_output=True)
    server = subprocess.Popen(
        [*py, "serve", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as c:
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
            ds = c.post("/datasets", json={"name": "bench"}).raise_for_status().json()["id"]
            docs = [{"external_id": k, "text": v} for k, v in DOCS.items()]
            c.post(f"/datasets/{ds}/documents", json=docs).raise_for_status()
            c.post("/rubrics", json={"name": "bench.correctness", "min": 1, "max": 5}).raise_for_status()
            body, config = export(args.traces)
            print(f"{args.traces} traces, {3 * args.traces} scores ({len(body) / 2**20:.1f} MiB export)")
            for k in range(args.repeat):
                runs = [traced(c, f"{side}-{k}", args.traces) for side in ("one", "two")]
                load = os.getloadavg()[0]
                t_one = one_step(c, runs[0], body, config)
                t_again = one_step(c, runs[0], body, config)
                t_two = two_imports(c, runs[1], args.traces)
                print(
                    f"round {k + 1}: annotations import {t_one:.2f} s (again, unchanged: {t_again:.2f} s); "
                    f"ratings + scores imports {t_two:.2f} s; ratio {t_one / t_two:.2f}; load {load:.2f}"
                )
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
