"""Report computations in separate processes, so that their CPU never competes with the API for its GIL.

A report reads the store and then spends most of its time in numpy/scipy and Python statistics code;
rendered in the API process, a few of them at once slow every other request (and ``/healthz``) by the GIL
alone. ``ReportPool`` runs them in ``processes`` spawned worker processes, each with its own engine, and the
API process only awaits the result. ``processes = 0`` computes in the calling thread instead (tests, tools).

Failure modes: a ``ServiceError`` raised in a worker (NotFound, InvalidItems) is re-raised as is in the
caller; a worker that dies (killed, out of memory) raises ``BrokenProcessPool`` and the pool is rebuilt on
the next call.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings

T = TypeVar("T")

# One per worker process, set by its initializer: the process's own settings and sessions.
_worker: dict[str, Any] = {}


def _init_worker(settings_json: str) -> None:
    from services.db import make_engine, make_session_factory
    from services.offline import apply_offline_env

    apply_offline_env()
    settings = Settings.model_validate_json(settings_json)
    _worker["settings"] = settings
    _worker["factory"] = make_session_factory(make_engine(settings.database_url), write=False)
    # The statistics' lazily imported libraries and compiled kernels, once per worker, before any report.
    from services import stats

    stats.warm_up()


def _in_worker(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    from services.db import session_scope

    with session_scope(_worker["factory"]) as session:
        return fn(session, _worker["settings"], *args)


class ReportPool:
    def __init__(self, settings: Settings, factory: sessionmaker[Session], processes: int) -> None:
        self.settings = settings
        self.factory = factory
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.processes,
                    # spawn: forking a process that runs threads (the worker, the threadpool) is unsafe.
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(self.settings.model_dump_json(),),
                )
            return self._executor

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``fn(session, settings, *args)`` in a worker process (a read session of its own)."""
        try:
            return self._pool().submit(_in_worker, fn, args)
        except BrokenProcessPool:
            self.close()
            return self._pool().submit(_in_worker, fn, args)

    def run_here(self, fn: Callable[..., T], *args: Any) -> T:
        """The same call in this thread (``processes = 0``)."""
        from services.db import session_scope

        with session_scope(self.factory) as session:
            return fn(session, self.settings, *args)

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
