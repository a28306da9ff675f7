"""Peak memory of the API while it exports a large dataset: streamed (the service) against built whole.

A dataset of --rows documents (--chars characters of text each) is written to a fresh SQLite store; the API is
served by uvicorn in a fresh process for each side, and one export is read from it (JSONL, written to
nowhere). "streamed" is ``GET /datasets/{id}/documents?format=jsonl`` as the service answers it (batches of
services.pagination.EXPORT_BATCH rows in short read transactions); "built whole" is the obvious alternative,
the way it was answered before: every row read and the whole body built in memory, then sent (a route the
bench adds to its own app with the service's own functions). The figure is the server process's peak
resident set (VmHWM) after the export less its resident set just before it; both bodies must be equal.

    python bench/export_memory.py [--rows 100000] [--chars 400]
"""

# No `from __future__ import annotations`: the route defined in serve() is read by FastAPI at run time.
import argparse
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def build(url: str, rows: int, chars: int) -> int:
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from services.db import ensure_migrated, make_engine
    from services.models import Dataset, Document

    engine = make_engine(url)
    ensure_migrated(engine, url, True)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        ds = conn.execute(
            insert(Dataset)
            .values(name="big", language="en", created_at=now, updated_at=now)
            .returning(Dataset.id)
        ).scalar_one()
        filler = ("lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars]
        batch = []
        for i in range(rows):
            batch.append(
                {
                    "dataset_id": ds,
                    "external_id": f"doc-{i:07d}",
                    "title": f"Document {i}",
                    "text": f"{i} {filler}",
                    "meta": {"n": i},
                    "created_at": now,
                    "updated_at": now,
                }
            )
            if len(batch) == 10_000:
                conn.execute(insert(Document), batch)
                batch = []
        if batch:
            conn.execute(insert(Document), batch)
    engine.dispose()
    return int(ds)


def serve(url: str, port: int, whole: bool) -> None:
    import uvicorn
    from fastapi import Response

    from app.deps import SessionDep
    from app.main import create_app
    from app.settings import Settings
    from services.datasets import service

    settings = Settings(
        database_url=url,
        report_processes=0,
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        auth={"enabled": False},  # type: ignore[arg-type]
    )
    app = create_app(settings)
    if whole:

        @app.get("/bench/whole/{dataset_id}")
        def export_whole(dataset_id: int, session: SessionDep) -> Response:
            # The export as it was answered before it was streamed.
            items = service.export_document_items(service.list_documents(session, dataset_id))
            session.commit()
            return Response(service.to_jsonl(items), media_type="application/x-ndjson")

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def measure(url: str, ds: int, whole: bool) -> tuple[int, int, int, str]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, __file__, "--serve", url, "--port", str(port)] + (["--whole"] if whole else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGMETA_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(cmd, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        path = f"/bench/whole/{ds}" if whole else f"/datasets/{ds}/documents"
        # Warm: the route's code paths imported, the first small page answered.
        httpx.get(f"{base}/datasets/{ds}/documents", params={"format": "jsonl", "limit": 10}, timeout=60)
        before = _kib(proc.pid, "VmRSS")
        digest = hashlib.sha256()
        size = 0
        started = time.perf_counter()
        with httpx.stream("GET", base + path, params={"format": "jsonl"}, timeout=600) as resp:
            resp.raise_for_status()
            for chunk in resp.iter_bytes():
                digest.update(chunk)
                size += len(chunk)
        seconds = time.perf_counter() - started
        peak = _kib(proc.pid, "VmHWM")
        print(f"  {'built whole' if whole else 'streamed':<12} {size / 2**20:8.1f} MiB in {seconds:5.1f} s")
        return before, peak, size, digest.hexdigest()
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chars", type=int, default=400)
    parser.add_argument("--serve")
    parser.add_argument("--port", type=int)
    parser.add_argument("--whole", action="store_true")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.whole)
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/export.db"
        ds = build(url, args.rows, args.chars)
        print(f"export of {args.rows:,} documents ({args.chars} characters of text each), SQLite")
        results = {whole: measure(url, ds, whole) for whole in (False, True)}
    (b0, p0, s0, d0), (b1, p1, s1, d1) = results[False], results[True]
    assert (s0, d0) == (s1, d1), "the two exports differ"
    grew0, grew1 = (p0 - b0) / 1024, (p1 - b1) / 1024
    print(
        f"  peak RSS over the resident set before it: streamed {grew0:,.0f} MiB, built whole {grew1:,.0f} MiB"
    )
    print(
        f"  peak RSS: streamed {p0 / 1024:,.0f} MiB, built whole {p1 / 1024:,.0f} MiB (ratio {p1 / p0:.1f}x)"
    )


if __name__ == "__main__":
    main()
