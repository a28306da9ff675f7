"""The app served over real HTTP on a loopback port (uvicorn in a thread of the test process), for clients
that are separate processes: the browser, the `ragmeta` executable."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import httpx
import uvicorn
from fastapi import FastAPI


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    # Wait for start-up (bounded: uvicorn sets `started` once the lifespan and socket are up).
    for _ in range(600):
        if server.started or not thread.is_alive():
            break
        started.wait(0.05)
    if not server.started:
        raise RuntimeError("the test server did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


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
