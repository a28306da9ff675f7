"""CPU per loopback chat completion of the HTTP clients and servers on the judge path.

    python bench/judge_transport.py [--requests 1500] [--concurrency 16]

A chat-completion request of ~6 kB and an answer of ~1 kB, ``--concurrency`` at once over keep-alive
connections, to a server in a process of its own: uvicorn + Starlette with h11 on asyncio, and with httptools
on uvloop (what the judge gateway serves with), and aiohttp's server. Clients: ``httpx.AsyncClient`` with
httpx's own transport (httpcore, h11) and with ``services.judge.transport.AiohttpTransport`` (what the judge
path's clients use). Prints the client's and the server's CPU per request, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BODY = {"model": "m", "messages": [{"role": "user", "content": "x" * 6000}], "temperature": 0}
REPLY = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "y" * 800}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
).encode()


def serve_starlette(port: int, ready: Any, http: str = "h11", loop: str = "asyncio") -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def chat(request: Request) -> Response:
        await request.json()
        return Response(REPLY, media_type="application/json")

    ready.put(True)
    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", http=http, loop=loop)


def serve_starlette_fast(port: int, ready: Any) -> None:
    serve_starlette(port, ready, http="httptools", loop="uvloop")


def serve_aiohttp(port: int, ready: Any) -> None:
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        json.loads(await request.read())
        return web.Response(body=REPLY, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    ready.put(True)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def client(kind: str, url: str, n: int, concurrency: int) -> float:
    import httpx

    from services.judge.transport import AiohttpTransport

    transport = AiohttpTransport(concurrency) if kind == "aiohttp" else None
    http = httpx.AsyncClient(transport=transport) if transport else httpx.AsyncClient()
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            r = await http.post(url, json=BODY)
            r.json()

    await asyncio.gather(*(one() for _ in range(50)))  # connections open, code warm
    t0 = time.process_time()
    await asyncio.gather(*(one() for _ in range(n)))
    cpu = time.process_time() - t0
    await http.aclose()
    return cpu / n * 1000


def main() -> None:
    import psutil

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    print(f"{'server':<27}{'client':<30}{'client ms/req':>14}{'server ms/req':>14}{'load':>7}")
    for name, target, port in (
        ("uvicorn h11 + Starlette", serve_starlette, 18761),
        ("uvicorn httptools uvloop", serve_starlette_fast, 18763),
        ("aiohttp", serve_aiohttp, 18762),
    ):
        ready = ctx.Queue()
        proc = ctx.Process(target=target, args=(port, ready), daemon=True)
        proc.start()
        ready.get()
        time.sleep(2)
        for kind, label in (("httpx", "httpx (httpcore, h11)"), ("aiohttp", "httpx over AiohttpTransport")):
            server = psutil.Process(proc.pid)
            s0 = sum(server.cpu_times()[:2])
            ms = asyncio.run(
                client(kind, f"http://127.0.0.1:{port}/v1/chat/completions", args.requests, args.concurrency)
            )
            served = (sum(server.cpu_times()[:2]) - s0) / (args.requests + 50) * 1000
            load = Path("/proc/loadavg").read_text().split(" ")[0]
            print(f"{name:<27}{label:<30}{ms:>14.3f}{served:>14.3f}{load:>7}", flush=True)
        proc.kill()


if __name__ == "__main__":
    main()
