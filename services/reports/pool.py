"""Report computations in separate processes, so that their CPU never competes with the API for its GIL.

A report reads the store and then spends most of its time in numpy/scipy and Python statistics code;
rendered in the API process, a few of them at once slow every other request (and ``/healthz``) by the GIL
alone. ``ReportPool`` runs them in ``processes`` spawned worker processes, each with its own engine, and the
API process only awaits the result. ``processes = 0`` computes in the calling thread instead (tests, tools).

Failure modes: a ``ServiceError`` raised in a worker (NotFound, InvalidItems) is re-raised as is in the
caller; a worker that dies (killed, out of memory) raises ``BrokenProcessPool`` and the pool is rebuilt on
the next call. ``close`` ends the workers itself and returns once they are gone: the server leaves by its
own SIGTERM right after, when no exit hook of the executor runs. A worker whose parent disappears (SIGKILL)
exits on its own.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings

T = TypeVar("T")

# One per worker process, set by its initializer: the process's own settings and sessions.
_worker: dict[str, Any] = {}


def _init_worker(settings_json: str) -> None:
    from services.db import make_engine, make_session_factory
    from services.offline import apply_offline_env

    # Ctrl-C in a terminal reaches the whole process group: the parent decides when its workers end (a
    # KeyboardInterrupt here would break the pool under a server still shutting down gracefully).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settings = Settings.model_validate_json(settings_json)
    os.nice(settings.background_niceness)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="parent-watch", daemon=True).start()
    apply_offline_env()
    engine = make_engine(settings.database_url)
    # Closed on a normal exit, so the database sees a goodbye rather than a dropped connection.
    multiprocessing.util.Finalize(engine, engine.dispose, exitpriority=10)
    signal.signal(signal.SIGTERM, lambda *_: _leave(engine))
    _worker["settings"] = settings
    _worker["factory"] = make_session_factory(engine, write=False)
    # The statistics' lazily imported libraries and compiled kernels, the report code and the figure's
    # matplotlib, once per worker, before any report: the first page then costs what any page does.
    from services import stats
    from services.reports import render  # noqa: F401
    from services.reports.presentation import figure

    stats.warm_up()
    figure.warm_up()


def _exit_with(parent_sentinel: int) -> None:
    # A pool worker waits on its call queue forever, and holds the resource tracker open with it, when the
    # parent dies without shutting the pool down (SIGKILL, out of memory).
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(1)


def _leave(engine: Engine) -> None:
    # The parent's SIGTERM: a report still in progress has no one waiting for it any more. The interpreter's
    # own teardown is skipped: after the statistics' imports it takes seconds.
    engine.dispose()
    os._exit(0)


def _ready() -> int:
    return os.getpid()


def _in_worker(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    from services.db import session_scope

    with session_scope(_worker["factory"]) as session:
        return fn(session, _worker["settings"], *args)


def _running_after(processes: Sequence[BaseProcess], timeout: float) -> list[BaseProcess]:
    """Those of ``processes`` still running ``timeout`` seconds from now (or as soon as none is)."""
    pending = {process.sentinel: process for process in processes}
    deadline = time.monotonic() + timeout
    while pending:
        ready = multiprocessing.connection.wait(list(pending), max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        for sentinel in ready:
            pending.pop(cast(int, sentinel))
    return list(pending.values())


class ReportPool:
    def __init__(self, settings: Settings, factory: sessionmaker[Session] | None, processes: int) -> None:
        """``factory`` (read sessions for ``run_here``) may be None for a pool with processes, started
        before the app that will own it (``ragmeta serve``: the report process warms up while the API
        imports)."""
        self.settings = settings
        self.factory = factory
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._warming: list[Future[int]] = []

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

    def start(self) -> list[Future[int]]:
        """Start the worker processes now and have them warm up, without waiting: with spawned workers an
        executor starts one per submitted call, so one call per process. Their futures end (with each
        process id) once warm; a report asked for before then waits for the warm-up left, not all of it."""
        if not self.processes:
            return []
        with self._lock:
            started = self._executor is not None and bool(self._warming)
        if started:  # started early, before its app's lifespan starts it again
            return self._warming
        pool = self._pool()
        self._warming = [pool.submit(_ready) for _ in range(self.processes)]
        return self._warming

    def wait_warm(self, timeout: float) -> bool:
        """Whether the processes ``start`` started have warmed up within ``timeout`` seconds (True at once
        when none was started); a process that failed to start counts as done."""
        deadline = time.monotonic() + timeout
        for future in self._warming:
            try:
                future.result(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return False
            except Exception:  # a broken pool is rebuilt by the next submit
                continue
        return True

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

        if self.factory is None:
            raise RuntimeError("a report pool made without a session factory computes in its processes only")
        with session_scope(self.factory) as session:
            return fn(session, self.settings, *args)

    def close(self) -> None:
        """End the workers now, and return once they are gone: pending reports are cancelled, one in
        progress is abandoned (no request waits for it when the pool closes). A worker still running 5 s
        after its SIGTERM is killed."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        # The executor ends its workers from a thread of its own and joins them only in an exit hook, which
        # does not run when the server leaves by its own SIGTERM (uvicorn re-raises it); an idle worker
        # told to leave that way takes seconds to tear its interpreter down. They are ended here.
        processes = list(executor._processes.values())
        # A thread (typeshed types it as the wakeup pipe).
        manager = cast("threading.Thread | None", executor._executor_manager_thread)
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        # Their exit is read from each process's sentinel, not from join(): the executor's thread reaps them
        # too, and a status reaped there would read here as still running.
        for late in _running_after(processes, 5.0):
            late.kill()
        _running_after(processes, 5.0)
        if manager is not None:
            # It leaves once it sees its workers gone; nothing of the pool outlives close.
            manager.join(5)
