"""A loopback OpenAI-compatible chat server for tests: scripted answers, recorded requests, injected faults.

It is a test double: it answers from a script written by each test and never produces a report.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.live import Served

Reply = str | dict[str, Any] | Response
Script = Callable[[dict[str, Any], int], Reply]


@dataclass
class FakeLLM:
    """``script(request_body, call_index)`` returns the assistant text, a full JSON body, or a Response.

    Faults: ``fail_first`` answers the first N calls with ``fail_status``; ``hang_first`` makes the first
    N calls sleep ``hang_s`` before answering; ``latency_s`` delays every call.
    """

    script: Script = lambda body, i: "ok"
    latency_s: float = 0.0
    fail_first: int = 0
    fail_status: int = 500
    hang_first: int = 0
    hang_s: float = 30.0
    # Calls wait (without answering) while ``gate`` is set and not yet opened.
    gate: threading.Event | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    port: int = 0
    _served: Served | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            while self.gate is not None and not self.gate.is_set():
                await asyncio.sleep(0.01)
            if index < self.hang_first:
                await asyncio.sleep(self.hang_s)
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            if index < self.fail_first:
                return JSONResponse({"error": {"message": "injected failure"}}, status_code=self.fail_status)
            reply = self.script(body, index)
            if isinstance(reply, Response):
                return reply
            if isinstance(reply, dict):
                return JSONResponse(reply)
            return JSONResponse(completion(body.get("model", "fake"), reply))
        finally:
            with self._lock:
                self.in_flight -= 1

    def start(self) -> FakeLLM:
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._served = Served(app, log_level="error").start()
        self.port = self._served.port
        return self

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()

    def prompts(self) -> list[str]:
        return ["\n".join(str(m.get("content", "")) for m in r.get("messages", [])) for r in self.requests]


def completion(model: str, text: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def garbage() -> Response:
    return PlainTextResponse("<html>not json</html>", status_code=200)


__all__ = ["FakeLLM", "completion", "garbage", "json"]
