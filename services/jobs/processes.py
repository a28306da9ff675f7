"""Job workers in their own processes, started and stopped by the API (the embedded default).

Scoring is mostly Python in the metric libraries (JSON and pydantic work, the SDKs' request building): one
process keeps one core busy at best. ``WorkerProcesses`` runs ``n`` workers (by default one per core), each a
spawned process with its own engine, scoring loop and pools, claiming batches from the shared store like any
``ragmeta worker``. Their judge calls all go through the API process's judge gateway (``gateway_url``), so
one gateway bounds them together and its cache serves them all.

Failure modes: a worker process that dies leaves its batch to be taken over when its lease expires; a worker
whose parent disappears stops after its current batch.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.process import BaseProcess
from typing import Any

from services.config import Settings

log = logging.getLogger("ragmeta.worker")


def worker_count(settings: Settings) -> int:
    n = settings.jobs.worker_processes
    return (os.cpu_count() or 1) if n is None else n


def job_workers(settings: Settings) -> int:
    """How many workers a job's batches are cut for (an equal share each): the embedded worker processes
    (one worker thread counts as one); when jobs are left to ``ragmeta worker``s elsewhere,
    ``jobs.worker_processes`` when set, else 1."""
    jobs = settings.jobs
    if jobs.embedded_worker:
        return max(1, worker_count(settings))
    return max(1, jobs.worker_processes or 1)


def run_worker_process(
    settings_json: str, gateway_url: str | None, worker_id: str, parent: int, ready: Any = None
) -> None:
    """The body of one worker process: a Worker with its own resources, until SIGTERM or its parent ends.
    With a judge configured, the judge libraries are imported before the worker takes its first batch
    (``ready`` is set once they are): a batch importing openai while a background thread did the same
    failed with ``KeyError: 'openai.types'``."""
    from services.jobs.queue import make_worker
    from services.jobs.worker import JobContext
    from services.offline import apply_offline_env
    from services.resources import Resources

    # Ctrl-C reaches the whole process group; the parent's SIGTERM is what stops a worker after its batch
    # (a KeyboardInterrupt here would drop the batch in the middle).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    apply_offline_env()
    settings = Settings.model_validate_json(settings_json)

    def warm() -> None:
        if settings.judge.configured:
            from services.metrics.judges.preload import preload

            preload()
        if ready is not None:
            ready.set()

    warm()
    # The engine is the resources' own: disposed when they close.
    resources = Resources.open(settings, gateway_url=gateway_url)
    worker = make_worker(JobContext(resources.session_factory, settings, resources), worker_id=worker_id)
    signal.signal(signal.SIGTERM, lambda *_: worker.request_stop())

    def orphaned() -> None:
        while not worker.stopping.wait(2.0):
            if os.getppid() != parent:
                worker.request_stop()

    threading.Thread(target=orphaned, name="parent-watch", daemon=True).start()
    try:
        worker.run_forever()
    finally:
        resources.close()


class WorkerProcesses:
    def __init__(self, settings: Settings, gateway_url: str | None, count: int) -> None:
        self.settings = settings
        self.gateway_url = gateway_url
        self.count = count
        self.processes: list[BaseProcess] = []
        self._ready: list[Any] = []

    def wait_ready(self, timeout: float) -> bool:
        """Whether every worker process has imported the judge libraries within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        return all(event.wait(max(0.0, deadline - time.monotonic())) for event in self._ready)

    def start(self) -> WorkerProcesses:
        # spawn: forking a process that runs threads (the gateway, the threadpool) is unsafe.
        context = multiprocessing.get_context("spawn")
        settings_json = self.settings.model_dump_json()
        for i in range(self.count):
            ready = context.Event()
            process = context.Process(
                target=run_worker_process,
                args=(settings_json, self.gateway_url, f"embedded-{i}", os.getpid(), ready),
                name=f"ragmeta-worker-{i}",
            )
            process.start()
            self.processes.append(process)
            self._ready.append(ready)
        log.info("%d worker processes started (judge gateway %s)", self.count, self.gateway_url)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid is not None]

    def stop(self, timeout: float = 15.0) -> None:
        """Ask every worker to stop after its batch, then end those still running after ``timeout``."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: the worker stops after its current batch
        for process in self.processes:
            process.join(timeout)
            if process.is_alive():
                process.kill()
                process.join(5)
        self.processes = []
        self._ready = []
