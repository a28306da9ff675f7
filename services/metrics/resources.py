"""What scoring keeps for the life of a process, owned by the app lifespan or the worker and closed by it.

- the event loop every scoring batch runs on (one per process, in its own thread): pooled connections and
  the libraries' loop-bound state live as long as the process, not one ``asyncio.run`` per metric;
- the judge gateway: an external one (``gateway_url``: the API's own, for worker processes; any URL for
  workers elsewhere) or one this object starts for its settings' judge when first needed and stops on close
  (restarted if the judge configuration changes);
- thread pools and a keep-alive HTTP client for libraries that block, and loaded models (embeddings,
  BERTScore), each released when no batch has used it for ``jobs.model_idle_s`` (``release_models``, called
  by an idle worker).

Nothing here is a module global: two apps in one process (tests) have two of these.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import gc
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings

if TYPE_CHECKING:
    import httpx

    from services.judge.gateway import JudgeGateway

T = TypeVar("T")


class ScoringResources:
    def __init__(
        self,
        settings: Settings,
        session_factory: sessionmaker[Session] | None = None,
        gateway_url: str | None = None,
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.external_gateway = gateway_url or settings.judge.gateway_url
        self._gateway: JudgeGateway | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._threads: dict[str, ThreadPoolExecutor] = {}
        self._http: dict[str, httpx.Client] = {}
        self._models: dict[tuple[Any, ...], Any] = {}
        self._model_used: dict[tuple[Any, ...], float] = {}
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()
        # An engine of these resources' own, for the judge cache when no session factory was given (tools,
        # benches); disposed on close.
        self._engine: Engine | None = None
        self.closed = False

    # ------------------------------------------------------------------------------------------- the gateway
    def gateway_url(self) -> str | None:
        """The judge gateway's URL; starts this process's own gateway on first use. None without a judge."""
        if self.external_gateway:
            return self.external_gateway.rstrip("/")
        judge = self.settings.judge
        if not judge.configured:
            return None
        with self._lock:
            if self._gateway is not None and self._gateway.judge != judge:
                self._gateway.stop()
                self._gateway = None
            if self._gateway is None:
                from services.judge.gateway import JudgeGateway
                from services.judge.slots import judge_slots

                factory = self.session_factory or self._own_session_factory()
                shared = judge_slots(self.settings)
                self._gateway = JudgeGateway(judge, factory, shared=shared).start()
            return self._gateway.url

    def _own_session_factory(self) -> sessionmaker[Session]:
        from services.db import make_engine, make_session_factory

        if self._engine is None:
            self._engine = make_engine(self.settings.database_url, self.settings.database_wait_s)
        return make_session_factory(self._engine)

    @property
    def gateway(self) -> JudgeGateway | None:
        """This process's own gateway, when it runs one."""
        return self._gateway

    # ------------------------------------------------------------------------------------------- the loop
    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the scoring loop and wait for it (called from worker or request threads)."""
        return self.submit(coro).result()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start a coroutine on the scoring loop; its future (``asyncio.wrap_future`` awaits it elsewhere)."""
        try:
            loop = self._scoring_loop()
        except RuntimeError:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def _scoring_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.closed:
                raise RuntimeError("the scoring resources are closed")
            if self._loop is None:
                import uvloop

                # libuv's loop: the judge libraries' calls are many small awaits and socket reads, whose
                # scheduling costs about half asyncio's own loop's CPU on it (bench/judges.py).
                loop = uvloop.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._loop_thread = threading.Thread(target=serve, name="scoring-loop", daemon=True)
                self._loop_thread.start()
                ready.wait(10)
                self._loop = loop
            return self._loop

    # ------------------------------------------------------------------------------- threads and models
    def threads(self, name: str, size: int) -> ThreadPoolExecutor:
        """A thread pool kept for the process (one per name)."""
        with self._lock:
            pool = self._threads.get(name)
            if pool is None:
                pool = ThreadPoolExecutor(max(1, size), thread_name_prefix=name)
                self._threads[name] = pool
            return pool

    def http(self, name: str, connections: int) -> httpx.Client:
        """A blocking keep-alive HTTP client kept for the process (one per name), for libraries that call
        from threads; closed with the resources."""
        import httpx

        with self._lock:
            client = self._http.get(name)
            if client is None:
                limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
                client = self._http[name] = httpx.Client(limits=limits)
            return client

    def model(self, key: tuple[Any, ...], load: Callable[[], T]) -> T:
        with self._model_lock:
            if key not in self._models:
                self._models[key] = load()
            self._model_used[key] = time.monotonic()
            value: T = self._models[key]
            return value

    def release_models(self, idle_s: float, trim: bool = False) -> list[tuple[Any, ...]]:
        """Drop the models no batch has asked for in the last ``idle_s`` seconds (a batch still running with
        one keeps its own reference); when one was dropped, or ``trim`` (work just ended), collect garbage and
        return freed memory to the system. The keys dropped."""
        now = time.monotonic()
        with self._model_lock:
            gone = [key for key, used in self._model_used.items() if now - used >= idle_s]
            for key in gone:
                del self._models[key]
                del self._model_used[key]
        if gone or trim:
            release_memory()
        return gone

    # ----------------------------------------------------------------------------------------------- close
    def close(self) -> None:
        with self._lock:
            self.closed = True
            loop, thread, self._loop = self._loop, self._loop_thread, None
            gateway, self._gateway = self._gateway, None
            pools, self._threads = list(self._threads.values()), {}
            clients, self._http = list(self._http.values()), {}
        if loop is not None:
            # What the libraries left running on the loop (litellm's logging worker, idle keep-alive
            # connections) is cancelled and awaited, as asyncio.run does, before the loop stops.
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(10)
            loop.close()
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        for client in clients:
            client.close()
        if gateway is not None:
            gateway.stop()
        self._models.clear()
        if self._engine is not None:
            self._engine.dispose()


def release_memory() -> None:
    """Collect garbage and give the heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    more elsewhere): what a long-lived worker freed stops counting in its resident memory."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


async def _cancel_pending() -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()
