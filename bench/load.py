"""Many clients at once on loopback: mixed writes and report reads against a served app, on SQLite and on
PostgreSQL side by side, with /healthz probed throughout.

Each client loops for --seconds over a weighted mix: rating imports (a 2-row batch by a random rater),
output imports (one output re-imported; one in four with a new answer, which retires its ratings and
scores), scoring jobs (cheap reference/classical metrics, run by the embedded worker) and report reads. A
prober asks /healthz every 50 ms. Printed per database and operation: count, p50/p95/p99 (ms), server errors,
requests over 5 s; throughput; and the loaded/unloaded latency ratio (each operation alone first).

    python bench/load.py [--clients 50] [--seconds 60] [--pg-url postgresql+psycopg://...]
        [--variants sqlite:threads,sqlite:processes,postgres:processes]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"
RATERS = [f"rater-{i:02d}" for i in range(20)]
METRICS = ["ref.word_recall@5", "ref.doc_recall@5", "classic.rouge_l"]
WEIGHTS = {"ratings": 40, "outputs": 15, "scoring": 5, "report": 40}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]


def first_admin_key(env: dict[str, str]) -> dict[str, str]:
    """An admin key issued the way a deployment gets its first one (it also migrates the database); the
    clients send it as every team's clients would."""
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", "create", "--local", "--role", "admin", "--name", "load"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {"Authorization": f"Bearer {out.splitlines()[-1].strip()}"}


def start_server(
    url: str, port: int, data_dir: Path, report_processes: int
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    env = {
        **os.environ,
        "RAGMETA_REPORT_PROCESSES": str(report_processes),
        "RAGMETA_DATABASE_URL": url,
        "RAGMETA_DATA_DIR": str(data_dir),
        "RAGMETA_AUTO_MIGRATE": "true",
        "PYTHONPATH": str(ROOT),
        "RAGMETA_AUTH__ENABLED": "true",
    }
    headers = first_admin_key(env)
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)]
    with open(data_dir / "server.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc, headers
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"server did not start; see {data_dir / 'server.log'}")


def reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def seed(base: str, headers: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
    with httpx.Client(base_url=base, headers=headers, timeout=300) as c:
        ds = c.post("/datasets", json={"name": "load", "language": "fr"}).json()["id"]
        for kind in ("documents", "questions"):
            body = (DEMO / f"{kind}.jsonl").read_bytes()
            r = c.post(
                f"/datasets/{ds}/{kind}", content=body, headers={"content-type": "application/x-ndjson"}
            )
            r.raise_for_status()
        run = c.post(f"/datasets/{ds}/runs", json={"name": "load"}).json()["id"]
        outputs = [
            json.loads(x) for x in (DEMO / "runs" / "hybrid-extractive.jsonl").read_text().splitlines() if x
        ]
        c.post(f"/runs/{run}/outputs", json=outputs).raise_for_status()
        c.post("/raters", json=[{"name": r} for r in RATERS]).raise_for_status()
        # Every output rated twice, so reports have something to correlate from the start.
        rows = [
            {"question_id": o["question_id"], "rater": r, "score": random.randint(1, 5)}
            for o in outputs
            for r in RATERS[:2]
        ]
        c.post(f"/runs/{run}/ratings", json=rows).raise_for_status()
        c.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS}).raise_for_status()
        return int(run), outputs


async def one(
    c: httpx.AsyncClient, op: str, run: int, outputs: list[dict[str, Any]], rng: random.Random
) -> httpx.Response:
    if op == "ratings":
        rater = rng.choice(RATERS)
        rows = [
            {"question_id": o["question_id"], "rater": rater, "score": rng.randint(1, 5)}
            for o in rng.sample(outputs, 2)
        ]
        return await c.post(f"/runs/{run}/ratings", json=rows)
    if op == "outputs":
        row = dict(rng.choice(outputs))
        if rng.random() < 0.25:
            row["answer"] = f"{row['answer']} ({rng.randint(0, 10**6)})"
        return await c.post(f"/runs/{run}/outputs", json=[row])
    if op == "scoring":
        return await c.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS})
    return await c.get(f"/runs/{run}/report")


async def load(
    base: str,
    headers: dict[str, str],
    run: int,
    outputs: list[dict[str, Any]],
    clients: int,
    seconds: float,
) -> dict[str, Any]:
    lat: dict[str, list[float]] = defaultdict(list)
    # Reports served stale (X-Report-Stale) and the age of the data they were computed from (s).
    ages: list[float] = []
    stale = [0]
    errors: dict[str, int] = defaultdict(int)
    other: dict[str, int] = defaultdict(int)
    ops, weights = zip(*WEIGHTS.items(), strict=True)
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients + 5, max_keepalive_connections=clients + 5)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) as c:

        async def client(i: int) -> None:
            rng = random.Random(i)
            while time.monotonic() < stop:
                op = rng.choices(ops, weights)[0]
                t0 = time.perf_counter()
                try:
                    r = await one(c, op, run, outputs, rng)
                    status = r.status_code
                except httpx.HTTPError:
                    status = 599
                if op == "report" and status == 200 and "X-Report-Data-Time" in r.headers:
                    data_time = datetime.fromisoformat(r.headers["X-Report-Data-Time"])
                    ages.append((datetime.now(UTC) - data_time).total_seconds())
                    stale[0] += r.headers.get("X-Report-Stale") == "true"
                lat[op].append((time.perf_counter() - t0) * 1000)
                if status >= 500:
                    errors[op] += 1
                elif status >= 400:
                    other[f"{op} {status}"] += 1

        async def prober() -> None:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                try:
                    status = (await c.get("/healthz")).status_code
                except httpx.HTTPError:  # counted like the clients' (a keep-alive connection closed under it)
                    status = 599
                lat["healthz"].append((time.perf_counter() - t0) * 1000)
                if status >= 500:
                    errors["healthz"] += 1
                await asyncio.sleep(0.05)

        t0 = time.monotonic()
        await asyncio.gather(prober(), *(client(i) for i in range(clients)))
        wall = time.monotonic() - t0
    return {"lat": lat, "errors": errors, "other": other, "wall": wall, "ages": ages, "stale": stale[0]}


async def alone(
    base: str, headers: dict[str, str], run: int, outputs: list[dict[str, Any]], repeat: int = 5
) -> dict[str, float]:
    """Each operation with no other client: the unloaded p50 the loaded figures are compared with."""
    out = {}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as c:
        rng = random.Random(0)
        for op in [*WEIGHTS, "healthz"]:
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                if op == "healthz":
                    await c.get("/healthz")
                else:
                    await one(c, op, run, outputs, rng)
                times.append((time.perf_counter() - t0) * 1000)
            out[op] = statistics.median(times)
    return out


def bench(name: str, url: str, port: int, clients: int, seconds: float, processes: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"ragmeta-load-{name}-"))
    if url.startswith("postgresql"):
        reset_postgres(url)
    proc, headers = start_server(url, port, data_dir, processes)
    try:
        base = f"http://127.0.0.1:{port}"
        run, outputs = seed(base, headers)
        base_lat = asyncio.run(alone(base, headers, run, outputs))
        res = asyncio.run(load(base, headers, run, outputs, clients, seconds))
        res["alone"] = base_lat
        return res
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def show(variant: str, res: dict[str, Any]) -> None:
    cols = ("n", "p50", "p95", "p99", "5xx", ">5s", "x alone")
    print(f"{variant}: " + "  ".join(f"{c:>7}" for c in cols))
    for op in [*WEIGHTS, "healthz"]:
        lat = res["lat"].get(op, [])
        p50 = pct(lat, 50)
        cells = [len(lat), f"{p50:.0f}", f"{pct(lat, 95):.0f}", f"{pct(lat, 99):.0f}",
                 res["errors"].get(op, 0), sum(1 for x in lat if x > 5000),
                 f"{p50 / max(res['alone'][op], 1e-9):.1f}"]  # fmt: skip
        print(f"  {op:<{len(variant) - 1}}" + "  ".join(f"{c!s:>7}" for c in cells))
    total = sum(len(v) for k, v in res["lat"].items() if k != "healthz")
    print(
        f"  {total / res['wall']:.1f} requests/s over {res['wall']:.0f} s; server errors "
        f"{sum(res['errors'].values())}; 4xx {dict(res['other']) or 0}"
    )
    if res["ages"]:
        ages = res["ages"]
        print(
            f"  reports served stale: {res['stale']} of {len(ages)}; age of their data p50 "
            f"{pct(ages, 50):.1f} s, p95 {pct(ages, 95):.1f} s, max {max(ages):.1f} s"
        )
    print(f"  load average at the end: {Path('/proc/loadavg').read_text().split(' ', 3)[:3]}\n", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument(
        "--variants",
        default="sqlite:threads,sqlite:processes,postgres:processes",
        help="database:reports pairs; reports in API threads (the obvious way) or in report processes "
        "(processes=N: N of them)",
    )
    ap.add_argument("--pg-url", default=os.environ.get("RAGMETA_BENCH_PG_URL"))
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    results = {}
    for variant in args.variants.split(","):
        db, _, mode = variant.partition(":")
        if db == "sqlite":
            url = f"sqlite:///{tempfile.mkdtemp(prefix='ragmeta-load-db-')}/load.db"
        elif args.pg_url:
            url = args.pg_url
        else:
            print(f"{variant}: skipped (give --pg-url or RAGMETA_BENCH_PG_URL)")
            continue
        # threads: reports in API threads; processes[=N]: in N report processes (1 unless given).
        processes = 0 if mode == "threads" else int(mode.partition("=")[2] or 1)
        print(f"== {variant}: {args.clients} clients for {args.seconds:.0f} s ...", flush=True)
        results[variant] = bench(db, url, args.port, args.clients, args.seconds, processes)
        # Each variant's figures as soon as it ends (with the machine's load then: it may be shared).
        show(variant, results[variant])
    if len(results) > 1:
        first, *others = results
        print("ratios to " + first + " (p95; healthz p99):")
        for other in others:
            parts = []
            for op in [*WEIGHTS, "healthz"]:
                q = 99 if op == "healthz" else 95
                a, b = pct(results[first]["lat"][op], q), pct(results[other]["lat"][op], q)
                parts.append(f"{op} {b / max(a, 1e-9):.2f}")
            print(f"  {other}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
