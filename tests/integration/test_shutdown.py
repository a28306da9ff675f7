"""The real server, stopped with SIGTERM after serving reports, or while clients write, score and read
reports, leaves no process and no database connection behind: not its report process, not the
multiprocessing resource tracker, not its job worker processes."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from sqlalchemy import Engine, make_url, text

from tests.integration.test_kill_resume import _free_port, _load

ROOT = Path(__file__).resolve().parents[2]


def _serve(database_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "RAGMETA_DATABASE_URL": database_url,
        # A loopback server: the open demo mode (no credential) is allowed there.
        "RAGMETA_AUTH__ENABLED": "false",
        "RAGMETA_REPORT_PROCESSES": "1",
        "RAGMETA_JOBS__EMBEDDED_WORKER": "true",
        "RAGMETA_JOBS__WORKER_PROCESSES": "1",
        "PYTHONPATH": str(ROOT),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_healthy(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"server did not start: {log.read_text()[-2000:]}")


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _database_ports(processes: list[psutil.Process], db_port: int) -> set[int]:
    """The local ports of the processes' TCP connections to the database server."""
    ports = set()
    for p in processes:
        for conn in p.net_connections(kind="tcp"):
            if conn.raddr and conn.raddr.port == db_port:
                ports.add(conn.laddr.port)
    return ports


def _sessions_from(engine: Engine, ports: set[int]) -> list[tuple[int, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT client_port, state FROM pg_stat_activity WHERE client_port = ANY(:ports)"),
            {"ports": sorted(ports)},
        ).all()
    return [(int(r[0]), r[1]) for r in rows]


@pytest.fixture
def served(
    database_url: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path, list[psutil.Process]]]:
    """The server, its address, its log, and a list the test adds the server's children to: whatever the
    outcome, none of them is left running (psutil refuses to signal a pid that was reused)."""
    port, log = _free_port(), tmp_path / "server.log"
    proc = _serve(database_url, port, log)
    tracked = [psutil.Process(proc.pid)]
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(proc, base, log)
        yield proc, base, log, tracked
    finally:
        if proc.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                tracked += tracked[0].children(recursive=True)
        for p in tracked:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        proc.wait(10)


@pytest.mark.slow
def test_sigterm_after_reports_leaves_no_process_and_no_connection(
    served: tuple[subprocess.Popen[bytes], str, Path, list[psutil.Process]], database_url: str, engine: Engine
) -> None:
    proc, base, log, tracked = served
    with httpx.Client(base_url=base, timeout=120) as c:
        run = _load(c)
        for seed in range(4):  # distinct reports, each computed in the report process
            r = c.get(f"/runs/{run}/report", params={"seed": seed})
            assert r.status_code == 200, r.text
    server = psutil.Process(proc.pid)
    children = server.children(recursive=True)
    tracked += children
    commands = [" ".join(p.cmdline()) for p in children]
    # the report process and the job worker process (both spawned), and the resource tracker
    assert sum("spawn_main" in c for c in commands) == 2, commands
    assert any("resource_tracker" in c for c in commands), commands
    postgres = engine.dialect.name == "postgresql"
    ports: set[int] = set()
    if postgres:
        ports = _database_ports(children, make_url(database_url).port or 5432)
        assert _sessions_from(engine, ports), "the children hold no database connection to watch"
        ports |= _database_ports([server], make_url(database_url).port or 5432)
    _stop_and_check(proc, log, children, commands, engine, ports)


def _stop_and_check(
    proc: subprocess.Popen[bytes],
    log: Path,
    children: list[psutil.Process],
    commands: list[str],
    engine: Engine,
    ports: set[int],
) -> None:
    """SIGTERM the server, then: its spawned children were gone when it left, every child is gone soon
    after, and (PostgreSQL) no session of it or of them is left."""
    postgres = engine.dialect.name == "postgresql"
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    # The server ends its spawned children before it leaves: one merely told to leave is still tearing its
    # interpreter down at that moment, and one that missed the word never leaves.
    spawned = [p for p, c in zip(children, commands, strict=True) if "spawn_main" in c]
    survivors = [(p.pid, " ".join(p.cmdline())[:120]) for p in _alive(spawned)]
    assert not survivors, f"children alive when the server left: {survivors}\n{log.read_text()[-2000:]}"
    # The resource tracker leaves by itself once no process holds its pipe any more.
    deadline = time.monotonic() + 30
    while _alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [(p.pid, " ".join(p.cmdline())[:120]) for p in _alive(children)]
    assert not survivors, f"children alive after the server left: {survivors}"
    if postgres:
        # A backend leaves a moment after its client does.
        while (left := _sessions_from(engine, ports)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"database sessions of the stopped server: {left}"


LOAD_CLIENTS = 6
RATERS = ["r1", "r2", "r3"]


class Load:
    """Clients writing ratings, starting scoring jobs and reading distinct reports in a loop until told to
    stop, each with one request at a time; ``in_flight`` counts the requests sent and not yet answered."""

    def __init__(self, base: str, run: int) -> None:
        self.base, self.run = base, run
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.statuses: list[int] = []
        self.threads = [
            threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(LOAD_CLIENTS)
        ]

    def _request(self, c: httpx.Client, rng: random.Random) -> int:
        op = rng.choice(["ratings", "ratings", "report", "report", "scoring"])
        if op == "ratings":
            rows = [
                {
                    "question_id": f"q{rng.randrange(40)}",
                    "rater": rng.choice(RATERS),
                    "score": rng.randint(1, 5),
                }
            ]
            return c.post(f"/runs/{self.run}/ratings", json=rows).status_code
        if op == "scoring":
            return c.post(f"/runs/{self.run}/scoring-jobs", json={"metrics": ["ref.word_recall"]}).status_code
        # A distinct report each time: the report process always has work.
        params = {"seed": rng.randrange(2**31), "n_resamples": 200}
        return c.get(f"/runs/{self.run}/report", params=params).status_code

    def _client(self, i: int) -> None:
        rng = random.Random(i)
        with httpx.Client(base_url=self.base, timeout=30) as c:
            while not self.stop.is_set():
                with self.lock:
                    self.in_flight += 1
                try:
                    status = self._request(c, rng)
                except httpx.TransportError:  # the server is leaving or gone
                    status = 599
                    time.sleep(0.05)
                finally:
                    with self.lock:
                        self.in_flight -= 1
                self.statuses.append(status)

    def wait_busy(self, answered: int, in_flight: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.statuses) >= answered and self.in_flight >= in_flight:
                return
            time.sleep(0.05)
        raise AssertionError(f"no load: {len(self.statuses)} answered, {self.in_flight} in flight")


@pytest.mark.slow
def test_sigterm_under_load_leaves_no_process_and_no_connection(
    served: tuple[subprocess.Popen[bytes], str, Path, list[psutil.Process]], database_url: str, engine: Engine
) -> None:
    """SIGTERM while clients write ratings, start scoring jobs and read reports (requests in flight, the
    report process and the job worker busy): the same end as without load."""
    proc, base, log, tracked = served
    with httpx.Client(base_url=base, timeout=60) as c:
        run = _load(c)
        assert c.post("/raters", json=[{"name": r} for r in RATERS]).status_code == 200
    load = Load(base, run)
    for thread in load.threads:
        thread.start()
    try:
        load.wait_busy(answered=3 * LOAD_CLIENTS, in_flight=LOAD_CLIENTS // 2, timeout=90)
        assert not [s for s in load.statuses if s >= 500], load.statuses
        server = psutil.Process(proc.pid)
        children = server.children(recursive=True)
        tracked += children
        commands = [" ".join(p.cmdline()) for p in children]
        assert sum("spawn_main" in c for c in commands) == 2, commands
        ports: set[int] = set()
        if engine.dialect.name == "postgresql":
            db_port = make_url(database_url).port or 5432
            ports = _database_ports([server, *children], db_port)
            assert _sessions_from(engine, ports), "the server holds no database connection to watch"
        _stop_and_check(proc, log, children, commands, engine, ports)
    finally:
        load.stop.set()
        for thread in load.threads:
            thread.join(60)
    assert not any(t.is_alive() for t in load.threads)
