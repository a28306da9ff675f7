"""Property-based API testing with schemathesis against the served app (loopback, a fresh store: SQLite by
default, or the PostgreSQL database given with --database-url or RAGMETA_TEST_DATABASE_URL, emptied first).

Issues an admin API key the way a deployment gets its first one (`ragmeta keys create --local`), starts
`uvicorn app.main:app` on a free port with a temporary database and authentication on, seeds a small study
(the test fixture `mini`: a dataset, its documents and questions, a run with outputs, raters and ratings) so
that ids 1 exist, then runs every schemathesis check over every phase (examples, coverage, fuzzing,
stateful), each request carrying the key as `Authorization: Bearer`.
Exits with schemathesis' own status: 0 only when no server error and no response that breaks its schema
was found (the one check left out is named below with its reason).

    python scripts/fuzz_api.py [--max-examples 30] [--max-time 600] [--seed 1] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import make_url

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "tests" / "fixtures" / "mini"

# Checks left out, each for its reason:
# - positive_data_acceptance: requests valid by the schema but refused for what a JSON schema cannot say
#   (unknown question, rater or metric ids; rubric min < max; overlap < max_words <= page_max_words; runs of
#   one dataset when pooling; indexing a dataset with no documents; CSV or JSONL bodies whose bytes are not
#   UTF-8, declared as strings). Each refusal is a 4xx naming the field and the reason.
EXCLUDED_CHECKS: list[str] = ["positive_data_acceptance"]
# In CI (--ci) the gate is what must never happen: server errors and responses that break the schema or the
# declared statuses. negative_data_rejection (a request the schema forbids but the service accepted, e.g. a
# coercion) is reported by `make fuzz` and fixed as found, but a new generator trick must not fail CI.
CI_EXCLUDED_CHECKS = [*EXCLUDED_CHECKS, "negative_data_rejection"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def first_admin_key(env: dict[str, str]) -> str:
    """The documented path to a deployment's first key; it also migrates the fresh database."""
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", "create", "--local", "--role", "admin", "--name", "fuzz"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()[-1].strip()  # "key N for fuzz (admin), shown once ...", then the key


def still_valid(base: str, headers: dict[str, str]) -> bool:
    """Whether the fuzz key still works (an admin may revoke keys; the run would have gone on as 401s)."""
    return httpx.get(f"{base}/me", headers=headers, timeout=30).status_code == 200


def seed(base: str, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=base, headers=headers, timeout=120) as c:
        ds = c.post("/datasets", json={"name": "fuzz", "language": "fr"}).json()["id"]
        for kind in ("documents", "questions"):
            body = (MINI / f"{kind}.jsonl").read_bytes()
            r = c.post(
                f"/datasets/{ds}/{kind}", content=body, headers={"content-type": "application/x-ndjson"}
            )
            r.raise_for_status()
        run = c.post(f"/datasets/{ds}/runs", json={"name": "fuzz"}).json()["id"]
        questions = [
            json.loads(x)["external_id"] for x in (MINI / "questions.jsonl").read_text().splitlines()
        ]
        outputs = [{"question_id": q, "answer": f"answer {q}", "retrieved": []} for q in questions]
        c.post(f"/runs/{run}/outputs", json=outputs).raise_for_status()
        c.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).raise_for_status()
        ratings = [
            {"question_id": q, "rater": r, "score": 1 + i % 5}
            for i, q in enumerate(questions)
            for r in ("alice", "bob")
        ]
        c.post(f"/runs/{run}/ratings", json=ratings).raise_for_status()


def fresh_store(url: str) -> None:
    """Empty the database at ``url`` (every table and the queue's schema objects) so that the run starts
    from the documented first steps, as it does on a new SQLite file; the CLI then migrates it."""
    import importlib.util

    from sqlalchemy import text

    sys.path.insert(0, str(ROOT))
    from services.db import make_engine
    from services.models import Base

    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            Base.metadata.drop_all(conn)
            conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
            if conn.dialect.name == "postgresql":
                # The task queue's tables, types and functions, as its migration drops them.
                path = ROOT / "alembic" / "versions" / "0005_procrastinate_queue.py"
                spec = importlib.util.spec_from_file_location("queue_revision", path)
                assert spec is not None and spec.loader is not None
                revision = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(revision)
                conn.connection.driver_connection.execute(revision.DROP)  # type: ignore[union-attr]
    finally:
        engine.dispose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-examples", type=int, default=30)
    ap.add_argument("--max-time", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-dir", default=None)
    ap.add_argument("--ci", action="store_true", help="gate on server errors and response conformance only")
    ap.add_argument(
        "--database-url",
        default=os.environ.get("RAGMETA_TEST_DATABASE_URL") or None,
        help="a database to fuzz against, emptied first (default: RAGMETA_TEST_DATABASE_URL, else a new "
        "SQLite file)",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ragmeta-fuzz-"))
    port = free_port()
    url = args.database_url or f"sqlite:///{tmp / 'fuzz.db'}"
    if args.database_url:
        fresh_store(url)
    print(f"fuzzing against {make_url(url).render_as_string(hide_password=True)}", flush=True)
    env = {
        **os.environ,
        "RAGMETA_DATABASE_URL": url,
        "RAGMETA_DATA_DIR": str(tmp),
        "RAGMETA_AUTO_MIGRATE": "true",
        "RAGMETA_REPORT_PROCESSES": "1",
        "PYTHONPATH": str(ROOT),
        "RAGMETA_AUTH__ENABLED": "true",
    }
    headers = {"Authorization": f"Bearer {first_admin_key(env)}"}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)]
    with open(tmp / "server.log", "wb") as log:
        server = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print((tmp / "server.log").read_text(), file=sys.stderr)
                return 2
            time.sleep(0.3)
        seed(base, headers)
        st = [
            str(Path(sys.executable).parent / "st"),
            "--config-file",
            str(ROOT / "scripts" / "schemathesis.toml"),
            "run",
            f"{base}/openapi.json",
            "--checks",
            "all",
            "--exclude-checks",
            ",".join(CI_EXCLUDED_CHECKS if args.ci else EXCLUDED_CHECKS),
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            str(args.max_examples),
            "--max-time",
            str(args.max_time),
            "--seed",
            str(args.seed),
            "--request-timeout",
            "60",
            # `--checks all` includes a response-time limit (10 s by default). A timing is measured in
            # bench/load.py, never asserted: a figure rendered on a loaded 2-core runner may take longer
            # without being wrong, so the limit is the request timeout itself.
            "--max-response-time",
            "60",
            "--generation-deterministic",
            "--workers",
            "1",
            "--header",
            f"Authorization: {headers['Authorization']}",
        ]
        if args.report_dir:
            st += ["--report", "junit", "--report-dir", args.report_dir]
        code = subprocess.call(st, cwd=tmp, env={**env, "SCHEMATHESIS_HOOKS": ""})
        errors = [line for line in (tmp / "server.log").read_text().splitlines() if "Traceback" in line]
        if errors:
            print(f"the server logged {len(errors)} traceback(s); see {tmp / 'server.log'}", file=sys.stderr)
            code = code or 1
        if not still_valid(base, headers):
            print("the fuzz key was revoked or its account changed during the run", file=sys.stderr)
            code = code or 1
        return code
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    raise SystemExit(main())
