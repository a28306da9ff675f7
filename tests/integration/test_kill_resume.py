"""Kill the server with SIGKILL in the middle of a scoring job; starting it again finishes the job with no
duplicate and no missing score."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from services.models import MetricScore

ROOT = Path(__file__).resolve().parents[2]
N_QUESTIONS = 40


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(database_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "RAGMETA_DATABASE_URL": database_url,
        "RAGMETA_JOBS__LEASE_S": "2",
        "RAGMETA_JOBS__POLL_INTERVAL_S": "0.1",
        # A loopback server: the open demo mode (no credential) is allowed there.
        "RAGMETA_AUTH__ENABLED": "false",
        "PYTHONPATH": str(ROOT),
    }
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "integration" / "slow_server.py"), str(port)],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"server did not start: {log.read_text()[-2000:]}")


def _load(c: httpx.Client) -> int:
    ds = c.post("/datasets", json={"name": "kill", "language": "fr"}).json()["id"]
    text = " ".join(f"Phrase numéro {i} du document." for i in range(N_QUESTIONS))
    assert c.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": text}]).status_code == 200
    sentences = [f"Phrase numéro {i} du document." for i in range(N_QUESTIONS)]
    qs = [
        {
            "external_id": f"q{i}",
            "question": f"Question {i} ?",
            "reference_answer": f"Phrase numéro {i}.",
            "passages": [{"document_id": "d", "start": text.index(s), "end": text.index(s) + len(s)}],
        }
        for i, s in enumerate(sentences)
    ]
    assert c.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    run = c.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    outs = [
        {"question_id": f"q{i}", "answer": f"Phrase {i}.", "retrieved": [{"text": f"Phrase numéro {i} du"}]}
        for i in range(N_QUESTIONS)
    ]
    assert c.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    return int(run)


@pytest.mark.slow
def test_sigkill_mid_job_then_restart_finishes_exactly_once(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    port = _free_port()
    log = tmp_path / "server.log"
    proc = _start(database_url, port, log)
    base = f"http://127.0.0.1:{port}"
    metrics = ["classic.bleu", "ref.word_recall"]
    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            run = _load(c)
            job = c.post(f"/runs/{run}/scoring-jobs", json={"metrics": metrics}).json()
            total = job["total"]
            assert total == 2 * N_QUESTIONS
            deadline = time.monotonic() + 60
            progress: dict[str, Any] = {}
            while time.monotonic() < deadline:
                progress = c.get(f"/jobs/{job['id']}").json()
                if progress["done"] >= total // 4:
                    break
                time.sleep(0.05)
            assert 0 < progress["done"] < total, progress
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    with engine.connect() as conn:
        stored_at_kill = conn.scalar(select(func.count()).select_from(MetricScore))
    assert stored_at_kill is not None and 0 < stored_at_kill < total

    proc = _start(database_url, port, log)
    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                final = c.get(f"/jobs/{job['id']}").json()
                if final["status"] == "done":
                    break
                time.sleep(0.2)
            assert final["status"] == "done", final
            assert (final["done"], final["failed"], final["pending"]) == (total, 0, 0)
            table = c.get(f"/runs/{run}/scores").json()["rows"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)

    with engine.connect() as conn:
        rows = conn.execute(select(MetricScore.output_id, MetricScore.metric)).all()
    assert len(rows) == total == len(set(rows)), "duplicate or missing scores"
    assert len(table) == N_QUESTIONS
    assert all(r["classic.bleu"] is not None and r["ref.word_recall@5"] is not None for r in table)
