"""A burst of rating submissions at once on loopback: every rater's items of a rating task submitted together
(PUT /tasks/{id}/queue/{position}) against a served app (uvicorn in this process, real threadpool and pool),
each key's first request in the burst. Printed: answers by status, p50/p95/max submit latency, wall time.
With --sign-ins N, N browser sign-ins (GET then POST /login, the raters' own keys) run during the burst:
the submits' latencies then show how much sign-ins hold writers up (their Argon2 check inside or outside
a write transaction: compare with --compare, and --real-hash for the default hash cost).

With --compare REV, the same burst is run on the code of REV (exported to a temporary directory) and on this
checkout, one after the other, on each database given, and the ratios before/after are printed.

    python bench/burst_submit.py [--raters 16] [--per-rater 5] [--sign-ins 0] [--pg-url URL] [--compare REV]
                                 [--real-hash]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if "--root" in sys.argv:  # the code under test (another revision's export, for --compare)
    sys.path.insert(0, sys.argv[sys.argv.index("--root") + 1])
else:
    sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from services.accounts import service as accounts  # noqa: E402
from services.accounts.schemas import KeyCreate, Role  # noqa: E402
from services.db import make_engine, session_scope, upgrade  # noqa: E402
from services.models import Base  # noqa: E402
from tests.live import Served  # noqa: E402

FAST_HASH = {"hash_time_cost": 1, "hash_memory_kib": 1024, "hash_parallelism": 1}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def reset(url: str) -> None:
    engine = make_engine(url)
    from sqlalchemy import text

    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    engine.dispose()
    upgrade(url)


def run(
    url: str, raters: int, per_rater: int, real_hash: bool, data_dir: Path, sign_ins: int = 0
) -> dict[str, Any]:
    reset(url)
    auth: dict[str, Any] = {"enabled": True, **({} if real_hash else FAST_HASH)}
    settings = Settings(
        database_url=url,
        data_dir=data_dir,
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        report_processes=0,
        auth=auth,  # type: ignore[arg-type]
    )
    app = create_app(settings)
    with session_scope(app.state.resources.session_factory) as s:
        admin = accounts.issue_key(
            s, app.state.resources.auth.hasher, KeyCreate(name="admin", role=Role.admin)
        ).key
        names = [f"r{i}" for i in range(raters)]
        keys = {
            n: accounts.issue_key(s, app.state.resources.auth.hasher, KeyCreate(name=n, role=Role.rater)).key
            for n in names
        }
    served = Served(app).start()
    try:
        h = {"Authorization": f"Bearer {admin}"}
        n_q = raters * per_rater
        with httpx.Client(base_url=served.url, headers=h, timeout=300) as c:
            ds = c.post("/datasets", json={"name": "burst", "language": "en"}).json()["id"]
            c.post(
                f"/datasets/{ds}/documents", json=[{"external_id": "d1", "title": "d", "text": "x " * 500}]
            )
            qs = [
                {"external_id": f"q{i}", "question": f"Q{i}?", "reference_answer": "A."} for i in range(n_q)
            ]
            assert c.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
            run_id = c.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
            outs = [{"question_id": f"q{i}", "answer": f"A{i}.", "retrieved": []} for i in range(n_q)]
            r = c.post(f"/runs/{run_id}/outputs", json=outs)
            assert r.status_code == 200, r.text
            r = c.post(
                "/tasks", json={"name": "t", "run_id": run_id, "raters": names, "per_output": 1, "seed": 1}
            )
            assert r.status_code == 201, r.text
            task = r.json()["id"]

        async def burst() -> list[tuple[int, float, str]]:
            async with httpx.AsyncClient(base_url=served.url, timeout=300) as c:

                async def one(name: str, pos: int) -> tuple[int, float, str]:
                    t0 = time.perf_counter()
                    r = await c.put(
                        f"/tasks/{task}/queue/{pos}",
                        json={"action": "rate", "score": 1 + pos % 5},
                        headers={"Authorization": f"Bearer {keys[name]}"},
                    )
                    return r.status_code, time.perf_counter() - t0, r.text[:160]

                async def sign_in(i: int) -> tuple[int, float, str]:
                    name = names[i % len(names)]
                    async with httpx.AsyncClient(base_url=served.url, timeout=300) as browser:
                        t0 = time.perf_counter()
                        page = await browser.get("/login")
                        csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
                        form = {"name": name, "key": keys[name], "csrf": csrf}
                        r = await browser.post("/login", data=form, follow_redirects=False)
                        return r.status_code, time.perf_counter() - t0, r.text[:160]

                submits = [one(n, p) for n in names for p in range(1, per_rater + 1)]
                return await asyncio.gather(*submits, *(sign_in(i) for i in range(sign_ins)))

        t0 = time.perf_counter()
        everything = asyncio.run(burst())
        wall = time.perf_counter() - t0
        answers, logins = everything[: raters * per_rater], everything[raters * per_rater :]
    finally:
        served.stop()
    lat = [a[1] for a in answers]
    codes = Counter(a[0] for a in answers)
    return {
        "codes": dict(codes),
        "p50": statistics.median(lat),
        "p95": pct(lat, 0.95),
        "max": max(lat),
        "wall": wall,
        "errors": sorted({a[2] for a in answers if a[0] != 200})[:3],
        "sign_ins": dict(Counter(a[0] for a in logins)),
        "sign_in_p50": statistics.median([a[1] for a in logins]) if logins else None,
    }


def compare(rev: str, urls: dict[str, str], argv: list[str]) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as before:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", before], input=archive.stdout, check=True)
        for db, url in urls.items():
            out = {}
            for label, root in (("before", before), ("after", str(ROOT))):
                cmd = [sys.executable, str(Path(__file__).resolve()), "--root", root, "--json", *argv]
                if url:
                    cmd += ["--db-url", url]
                done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=root)
                out[label] = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append((db, out))
    print(f"burst: {argv}; before = {rev}, after = this checkout")
    print(f"{'db':8} {'code':6} {'answers':>22} {'p50 s':>8} {'p95 s':>8} {'max s':>8} {'wall s':>8}")
    for db, out in rows:
        for label in ("before", "after"):
            o = out[label]
            codes = " ".join(f"{k}:{v}" for k, v in sorted(o["codes"].items()))
            times = " ".join(f"{o[k]:8.2f}" for k in ("p50", "p95", "max", "wall"))
            print(f"{db:8} {label:6} {codes:>22} {times}")
            if o.get("sign_ins"):
                print(f"{'':8} {'':6} sign-ins {o['sign_ins']}, p50 {o['sign_in_p50']:.2f} s")
        b, a = out["before"], out["after"]
        print(f"{db:8} ratio before/after: p50 {b['p50'] / a['p50']:.1f}x, p95 {b['p95'] / a['p95']:.1f}x")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--raters", type=int, default=16)
    p.add_argument("--per-rater", type=int, default=5)
    p.add_argument("--sign-ins", type=int, default=0, help="browser sign-ins during the burst")
    p.add_argument("--db-url", default=None, help="run once on this database (default: a new SQLite file)")
    p.add_argument("--pg-url", default=None, help="with --compare: PostgreSQL too (its tables are dropped)")
    p.add_argument("--compare", default=None, metavar="REV", help="run REV's code, then this checkout's")
    p.add_argument(
        "--real-hash", action="store_true", help="the default Argon2 cost, not the tests' cheapest"
    )
    p.add_argument("--root", default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.compare:
        argv = ["--raters", str(a.raters), "--per-rater", str(a.per_rater), "--sign-ins", str(a.sign_ins)]
        argv += ["--real-hash"] if a.real_hash else []
        compare(a.compare, {"sqlite": "", **({"postgres": a.pg_url} if a.pg_url else {})}, argv)
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = a.db_url or f"sqlite:///{tmp}/burst.db"
        out = run(url, a.raters, a.per_rater, a.real_hash, Path(tmp) / "data", a.sign_ins)
    print(json.dumps(out) if a.json else out)


if __name__ == "__main__":
    main()
