"""The embedded default: worker processes started and stopped by the app, scoring through the app's judge
gateway (one bound, one cache for all of them)."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from services.config import JudgeSettings, Settings
from services.jobs.processes import WorkerProcesses
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.conftest import admin_client
from tests.integration.test_inline_score import ANSWERS, CONTEXTS
from tests.judgefake import start_judge


def test_worker_processes_score_through_the_apps_gateway_and_stop_with_it(
    settings: Settings, engine: Engine
) -> None:
    fake = start_judge()
    try:
        s = settings.model_copy(deep=True)
        s.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=5.0, max_concurrency=2)
        s.judge.language = "en"
        s.jobs.embedded_worker, s.jobs.worker_processes, s.jobs.poll_interval_s = True, 1, 0.05
        with admin_client(create_app(s)) as client:
            app: Any = client.app
            # Started from a thread once the server serves (app.main._start_when_warm).
            deadline = time.monotonic() + 60
            while not (pids := app.state.resources.worker_processes.pids):
                assert time.monotonic() < deadline, "the worker process did not start"
                time.sleep(0.05)
            assert len(pids) == 1 and app.state.resources.worker is None
            run = make_run(client, load_mini(client))
            outputs = [
                {"question_id": q, "answer": a, "retrieved": [{"text": t} for t in CONTEXTS[q]]}
                for q, a in ANSWERS.items()
            ]
            assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
            job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["opik.hallucination"]}).json()
            deadline = time.monotonic() + 300
            while (state := client.get(f"/jobs/{job['id']}").json())["status"] not in ("done", "failed"):
                assert time.monotonic() < deadline, state
                time.sleep(0.2)
            assert (state["status"], state["done"], state["failed"]) == ("done", 3, 0), state
            assert len(fake.requests) == 3
            # the calls went through this process's gateway: its ledger figures reached the job
            assert state["summary"]["judge_usage"]["opik.hallucination"]["upstream_calls"] == 3
            gateway = app.state.resources.scoring.gateway
            assert gateway is not None and gateway.ledgers == {}  # released when the batch ended
        assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
    finally:
        fake.stop()


class _HeapProbe:
    """A worker process's resources whose thread writes how many objects start-up left out of the cyclic
    collector, once it has."""

    def __init__(self, path: Path) -> None:
        self.path = path
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while gc.get_freeze_count() == 0:
            time.sleep(0.01)
        self.path.with_suffix(".tmp").write_text(str(gc.get_freeze_count()))
        self.path.with_suffix(".tmp").rename(self.path)

    def release_models(self, idle_s: float, trim: bool = False) -> list[tuple[Any, ...]]:
        return []

    def close(self) -> None:
        pass


def _probe_runtime(settings: Settings, factory: sessionmaker[Session], gateway_url: str | None) -> _HeapProbe:
    return _HeapProbe(settings.data_dir / "frozen")


def test_a_worker_process_keeps_what_start_up_made_out_of_the_cyclic_collector(
    settings: Settings, engine: Engine
) -> None:
    """A collection in a worker (automatic while a batch runs, or the one after work) walks only what
    batches made, not what start-up imported (the judge libraries: 0.5 s of CPU per collection)."""
    s = settings.model_copy(deep=True)
    s.data_dir.mkdir(parents=True, exist_ok=True)
    workers = WorkerProcesses(s, None, 1, _probe_runtime).start()
    try:
        assert workers.wait_ready(120)
        deadline = time.monotonic() + 60
        while not (s.data_dir / "frozen").exists():
            assert time.monotonic() < deadline and all(p.is_alive() for p in workers.processes)
            time.sleep(0.05)
    finally:
        workers.stop()
    assert int((s.data_dir / "frozen").read_text()) > 10_000
