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

import gc
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.jobs.registry import WorkerResources

# What a worker process runs its jobs with, given by whoever starts the processes: a module-level function
# (spawned processes receive it by name) that registers the domains' job handlers, imports what must be
# imported before the first batch, and returns the process's resources (closed when the worker ends).
WorkerRuntime = Callable[[Settings, "sessionmaker[Session]", "str | None"], WorkerResources]

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
    settings_json: str,
    gateway_url: str | None,
    worker_id: str,
    parent: int,
    ready: Any,
    runtime: WorkerRuntime,
) -> None:
    """The body of one worker process: a Worker with the resources ``runtime`` makes, until SIGTERM or its
    parent ends. ``ready`` is set once the runtime returned: with a judge configured it imports the judge
    libraries before the worker takes its first batch (a batch importing openai while a background thread
    did the same failed with ``KeyError: 'openai.types'``)."""
    from services.db import make_engine, make_session_factory
    from services.jobs.queue import make_worker
    from services.jobs.registry import JobContext
    from services.logs import configure_logs
    from services.offline import apply_offline_env

    # Ctrl-C reaches the whole process group; the parent's SIGTERM is what stops a worker after its batch
    # (a KeyboardInterrupt here would drop the batch in the middle).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    apply_offline_env()
    settings = Settings.model_validate_json(settings_json)
    # Batch work: the API process it serves beside is scheduled first on a busy machine.
    os.nice(settings.background_niceness)
    configure_logs(settings)
    engine = make_engine(settings.database_url)
    factory = make_session_factory(engine)
    resources = runtime(settings, factory, gateway_url)
    # What start-up imported (the judge libraries: over a million objects) lives as long as the process:
    # kept out of the cyclic collector, so that a collection (the automatic ones while a batch runs, and
    # the one an idle worker makes after work, services.metrics.resources.release_memory) walks only what
    # the batches made: about 1 ms instead of 0.5 s of CPU.
    gc.collect()
    gc.freeze()
    if ready is not None:
        ready.set()
    worker = make_worker(JobContext(factory, settings, resources), worker_id=worker_id)
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
        engine.dispose()


class WorkerProcesses:
    def __init__(
        self, settings: Settings, gateway_url: str | None, count: int, runtime: WorkerRuntime
    ) -> None:
        self.settings = settings
        self.gateway_url = gateway_url
        self.count = count
        self.runtime = runtime
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
                args=(settings_json, self.gateway_url, f"embedded-{i}", os.getpid(), ready, self.runtime),
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
