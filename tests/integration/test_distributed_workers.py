"""Done-when of "workers on many machines" (PostgreSQL): the API plus three `ragmeta worker` processes score
one job through a slow loopback judge; one worker is SIGKILLed in the middle of a batch. The job completes
with no duplicate and no missing score, and the judge never has more requests in flight than the one bound
all workers share (``judge.max_concurrency``), which the work is heavy enough to reach.

Each worker runs its own judge gateway, whose own bound alone would allow ``max_concurrency`` calls per
worker (3 x 4 here): only the shared bound (services/judge/slots.py) keeps the total at 4. Each process sends
a different API key, so the judge stub knows which worker sent each request.

Skipped on SQLite: there the service is one process (tests/integration/test_kill_resume.py kills and restarts
it); CI runs this in its PostgreSQL leg.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.models import JobItem, MetricScore
from tests.judgefake import answer, completion
from tests.live import Served

ROOT = Path(__file__).resolve().parents[2]
PG = (os.environ.get("RAGMETA_TEST_DATABASE_URL") or "").startswith("postgresql")
BOUND = 4
WORKERS = 3
OUTPUTS = 60
BATCH = 10  # scoring items per batch: 6 batches of 10 judge calls
LATENCY_S = 0.4
METRIC = "opik.hallucination"  # one judge call per output


@dataclass
class Call:
    worker: str  # the API key the request came with
    start: float
    end: float | None = None
    answered: bool = False


@dataclass
class SlowJudge:
    """A loopback OpenAI-compatible judge answering after ``latency_s``; records every call's interval and
    sender. A request whose client goes away (a killed worker) ends when the disconnect is seen."""

    latency_s: float
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _served: Served | None = None

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        call = Call(request.headers.get("authorization", "").removeprefix("Bearer "), time.monotonic())
        with self._lock:
            self.calls.append(call)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

        async def gone() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass

        wait = asyncio.ensure_future(asyncio.sleep(self.latency_s))
        left = asyncio.ensure_future(gone())
        try:
            await asyncio.wait({wait, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            with self._lock:
                call.end = time.monotonic()
                call.answered = wait.done() and not left.done()
                self.in_flight -= 1
            wait.cancel()
            left.cancel()
        content, tools = answer(body)
        return JSONResponse(completion(body, content, tools))

    def in_flight_of(self, worker: str) -> int:
        with self._lock:
            return sum(1 for c in self.calls if c.worker == worker and c.end is None)

    def answered(self) -> int:
        with self._lock:
            return sum(1 for c in self.calls if c.end is not None and c.answered)

    def start(self) -> SlowJudge:
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._served = Served(app, log_level="error", timeout_keep_alive=60).start()
        self.port = self._served.port
        return self

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()


def most_at_once(calls: list[Call], killed: str, killed_at: float) -> int:
    """The most calls in flight at any instant. The killed worker's calls end at the kill at the latest: its
    slots are released from then on (its connections die with it), whatever the stub saw afterwards."""
    events: list[tuple[float, int]] = []
    for c in calls:
        end = c.end if c.end is not None else float("inf")
        if c.worker == killed:
            end = min(end, killed_at)
        if end > c.start:
            events += [(c.start, 1), (end, -1)]
    now = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
        now += step
        peak = max(peak, now)
    return peak


def senders_at_once(calls: list[Call]) -> int:
    """The most workers with calls in flight at the same instant (calls of several processes competing)."""
    at = [{c.worker for c in calls if c.start <= t.start < (c.end or float("inf"))} for t in calls]
    return max((len(workers) for workers in at), default=0)


def test_most_at_once_counts_overlaps_and_cuts_the_killed_workers_calls() -> None:
    calls = [Call("a", 0, 2), Call("b", 1, 3), Call("k", 1.5, None), Call("a", 3, 4)]
    assert most_at_once(calls, "k", killed_at=10) == 3
    assert most_at_once(calls, "k", killed_at=1.2) == 2
    assert most_at_once([Call("a", 0, 1), Call("a", 1, 2)], "k", 0) == 1
    assert senders_at_once(calls) == 3 and senders_at_once([Call("a", 0, 1), Call("b", 1, 2)]) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(database_url: str, judge: SlowJudge, key: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGMETA_DATABASE_URL": database_url,
        "RAGMETA_AUTH__ENABLED": "false",  # loopback only: the open mode is allowed there
        "RAGMETA_JOBS__EMBEDDED_WORKER": "false",  # the API leaves jobs to the three workers
        "RAGMETA_JOBS__LEASE_S": "6",
        "RAGMETA_JOBS__SCORING_BATCH_SIZE": str(BATCH),
        "RAGMETA_JUDGE__BASE_URL": f"http://127.0.0.1:{judge.port}/v1",
        "RAGMETA_JUDGE__MODEL": "judge-model",
        "RAGMETA_JUDGE__MAX_CONCURRENCY": str(BOUND),
        "RAGMETA_JUDGE__TIMEOUT_S": "60",
        "RAGMETA_JUDGE__RETRIES": "1",
        "RAGMETA_JUDGE__LANGUAGE": "en",
        "RAGMETA_JUDGE__API_KEY_ENV": "RAGMETA_TEST_JUDGE_KEY",
        "RAGMETA_TEST_JUDGE_KEY": key,
    }


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )


def _load(c: httpx.Client) -> int:
    ds = c.post("/datasets", json={"name": "distributed", "language": "en"}).json()["id"]
    text = " ".join(f"Sentence number {i} of the document." for i in range(OUTPUTS))
    assert c.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": text}]).status_code == 200
    qs = [
        {"external_id": f"q{i}", "question": f"What is sentence {i}?", "reference_answer": f"Sentence {i}."}
        for i in range(OUTPUTS)
    ]
    assert c.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    run = c.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    outs = [
        {
            "question_id": f"q{i}",
            "answer": f"It is sentence {i}.",
            "retrieved": [{"text": f"Sentence number {i} of the document."}],
        }
        for i in range(OUTPUTS)
    ]
    assert c.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    return int(run)


def _wait(what: str, ok: Any, timeout_s: float, procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not ok():
        if time.monotonic() > deadline or any(p.poll() not in (None, -signal.SIGKILL) for p in procs):
            tails = "\n".join(f"--- {f.name}\n{f.read_text()[-1500:]}" for f in sorted(logs.glob("*.log")))
            raise AssertionError(f"{what}: not within {timeout_s} s\n{tails}")
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.skipif(not PG, reason="PostgreSQL only: on SQLite the service is one process (test_kill_resume)")
def test_three_workers_one_killed_mid_batch_exactly_once_within_the_shared_bound(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    judge = SlowJudge(LATENCY_S).start()
    port = _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        api = _spawn(
            ["serve", "--host", "127.0.0.1", "--port", str(port)],
            _env(database_url, judge, "api"),
            tmp_path / "api.log",
        )
        procs.append(api)
        workers = {
            f"worker-{i}": _spawn(
                ["worker", "--id", f"worker-{i}"],
                _env(database_url, judge, f"worker-{i}"),
                tmp_path / f"worker-{i}.log",
            )
            for i in range(WORKERS)
        }
        procs += workers.values()
        base = f"http://127.0.0.1:{port}"

        def api_up() -> bool:
            try:
                return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        _wait("the API answers", api_up, 180, procs, tmp_path)
        with httpx.Client(base_url=base, timeout=60) as c:
            run = _load(c)
            job = c.post(f"/runs/{run}/scoring-jobs", json={"metrics": [METRIC]}).json()
            created_at = time.monotonic()
            assert job["total"] == OUTPUTS

            # Mid-batch: the victim has calls at the judge, and some calls of the job are answered already.
            victim = "worker-0"
            _wait(
                "worker-0 has judge calls in flight",
                lambda: judge.answered() >= BOUND and judge.in_flight_of(victim) > 0,
                300,
                procs,
                tmp_path,
            )
            killed_at = time.monotonic()
            workers[victim].send_signal(signal.SIGKILL)
            workers[victim].wait(10)

            def finished() -> bool:
                return bool(c.get(f"/jobs/{job['id']}").json()["status"] in ("done", "failed", "cancelled"))

            _wait("the job finishes", finished, 300, procs, tmp_path)
            final = c.get(f"/jobs/{job['id']}").json()
            finished_at = time.monotonic()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        judge.stop()

    outcome = (final["status"], final["done"], final["failed"], final["pending"])
    assert outcome == ("done", OUTPUTS, 0, 0), final
    with engine.connect() as conn:
        rows = conn.execute(select(MetricScore.output_id, MetricScore.metric)).all()
        retaken = conn.scalar(select(func.count()).select_from(JobItem).where(JobItem.attempts > 1))
    assert len(rows) == OUTPUTS, "missing scores"
    assert len(set(rows)) == len(rows), "duplicate scores"
    # the kill was mid-batch: the victim had calls at the judge, and its batch was taken again
    at_kill = [c for c in judge.calls if c.worker == victim and c.start < killed_at]
    in_flight_at_kill = sum(1 for c in at_kill if c.end is None or c.end >= killed_at)
    assert in_flight_at_kill > 0
    assert retaken is not None and retaken > 0
    senders = {call.worker for call in judge.calls}
    assert senders <= {f"worker-{i}" for i in range(WORKERS)} and len(senders) >= 2, senders
    peak = most_at_once(judge.calls, victim, killed_at)
    competing = senders_at_once(judge.calls)
    print(
        f"\njudge calls {len(judge.calls)} (answered {judge.answered()}) from {sorted(senders)}, victim in "
        f"flight at kill {in_flight_at_kill}, items taken again {retaken}, workers at the judge at once "
        f"{competing}, most calls at once {peak} (stub's live count {judge.max_in_flight}), shared bound "
        f"{BOUND}, per-worker bounds together {WORKERS * BOUND}; start-up {created_at - t0:.1f} s, job "
        f"{finished_at - created_at:.1f} s (killed at {killed_at - created_at:.1f} s)"
    )
    # several processes' calls were at the judge together, so per-process bounds alone would have let more in
    assert competing >= 2
    assert peak <= BOUND, f"{peak} judge calls at once, over the shared bound {BOUND}"
    assert peak == BOUND, f"the bound was never reached ({peak} of {BOUND}): an excess would go unseen"
