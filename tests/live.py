"""The app served over real HTTP on a loopback port (uvicorn in a thread of the test process), for clients
that are separate processes: the browser, the `ragmeta` executable."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI


class Served:
    """An ASGI app served by uvicorn in a daemon thread of the test process, on a loopback socket bound
    before the server starts (no window in which another process can take the port)."""

    def __init__(self, app: Any, start_timeout_s: float = 30, **config: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it a response written in two segments waits for the
        # client's delayed ACK (~40 ms), and a stub judge of 200 ms answered in ~250 (bench/judges.py).
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config.setdefault("log_level", "warning")
        self._server = uvicorn.Server(uvicorn.Config(app, **config))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._start_timeout_s = start_timeout_s

    def start(self) -> Served:
        """Start serving; returns once uvicorn has run the lifespan and listens (bounded wait)."""
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout_s
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            self.stop()
            raise RuntimeError("the test server did not start")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self._sock.close()


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL."""
    served = Served(app, lifespan="on").start()
    try:
        yield served.url
    finally:
        served.stop()


@asynccontextmanager
async def health_probe(
    client: httpx.AsyncClient, interval_s: float = 0.05
) -> AsyncIterator[list[httpx.Response]]:
    """GET /healthz every ``interval_s`` while the block runs; yields the list the answers are added to
    (complete once the block has ended)."""
    seen: list[httpx.Response] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            seen.append(await client.get("/healthz"))
            await asyncio.sleep(interval_s)

    task = asyncio.create_task(probe())
    try:
        yield seen
    finally:
        done.set()
        await task


def concurrently(
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    requests: Callable[[httpx.AsyncClient], list[Awaitable[httpx.Response]]],
) -> tuple[list[httpx.Response], list[httpx.Response]]:
    """Send the requests ``requests(client)`` makes all at once while /healthz is probed; returns their
    answers and the probes' answers."""

    async def scenario() -> tuple[list[httpx.Response], list[httpx.Response]]:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout_s) as client:
            async with health_probe(client) as probes:
                answers = await asyncio.gather(*requests(client))
            return list(answers), probes

    return asyncio.run(scenario())


def rater_task(
    live: Any, names: list[str], task: dict[str, Any], timeout_s: float
) -> tuple[int, dict[str, str]]:
    """An API key for each rater name, then the rating task ``task`` (its JSON body; its ``raters`` are the
    names) on the served app ``live`` (``url``, admin ``headers``): (task id, rater name -> key)."""
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=timeout_s) as api:
        keys = {n: api.post("/keys", json={"name": n, "role": "rater"}).json()["key"] for n in names}
        r = api.post("/tasks", json={**task, "raters": names})
        assert r.status_code == 201, r.text
        return int(r.json()["id"]), keys
