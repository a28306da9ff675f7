"""Calls to an OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, TGI) for the generator.

The generator's answers go through the same bounded, retrying upstream client as the judge's calls
(``services.judge.upstream``): at most ``generator.max_concurrency`` in flight, 408/409/429/5xx, timeouts and
connection errors retried ``retries`` times with the same back-off and ``Retry-After`` handling. They do not
go through the judge gateway itself: its cache would hand a regenerated run the answers of the last one, and
its bound and ledgers are the judge's, not the generator's endpoint's. What still fails is raised as
LLMError whose text starts with a cause ("timeout", "rate_limited", "http_500", "connection",
"malformed_response") so that jobs can count failures by cause.

The clients are owned by ``services.resources.Resources`` (the app lifespan or the worker) and run on its
scoring loop; nothing here is kept between calls at module level.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from services.config import LLMEndpoint
from services.judge.upstream import JudgeFailure, Upstream

T = TypeVar("T")


class LLMError(Exception):
    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float


class Runner(Protocol):
    """An event loop in a thread of its own (``ScoringResources``): runs a coroutine and waits for it."""

    def run(self, coro: Coroutine[Any, Any, T]) -> T: ...


class LLMClient:
    """One endpoint's bounded, retrying client, on ``runner``'s loop (opened there on first use)."""

    def __init__(self, endpoint: LLMEndpoint, max_concurrency: int, runner: Runner) -> None:
        self.endpoint = endpoint.model_copy(deep=True)
        self.runner = runner
        self.upstream = Upstream(self.endpoint, max_concurrency, name="generator")
        self._opened = False
        self._lock = threading.Lock()

    def chat(self, messages: list[dict[str, str]]) -> ChatResult:
        """One chat completion, from any thread. Raises LLMError after the retries are exhausted."""
        endpoint = self.endpoint
        if not endpoint.configured:
            raise LLMError("not_configured", "no LLM endpoint configured")
        with self._lock:
            if not self._opened:
                self.runner.run(self.upstream.open())
                self._opened = True
        body = {"messages": messages, "temperature": endpoint.temperature}
        try:
            data, latency, _ = self.runner.run(self.upstream.complete(endpoint.model or "", body))
        except JudgeFailure as exc:
            message = str(exc).split(": ", 1)[-1]
            if exc.cause == "timeout":
                message = f"no answer within {endpoint.timeout_s} s ({endpoint.retries} retries)"
            raise LLMError(exc.cause, message) from exc
        text = data["choices"][0]["message"].get("content")
        if not isinstance(text, str):
            raise LLMError("malformed_response", "the answer has no text content")
        usage = data.get("usage") or {}
        return ChatResult(
            text=text.strip(),
            model=str(data.get("model") or endpoint.model),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_ms=latency,
        )

    def close(self) -> None:
        with self._lock:
            if self._opened:
                self._opened = False
                # The loop may have ended already (its owner closes it last).
                with contextlib.suppress(RuntimeError, asyncio.CancelledError):
                    self.runner.run(self.upstream.aclose())


class LLMClients:
    """The clients of the endpoints in use, one per endpoint configuration (a test or an operator may change
    the generator's settings while the process runs); closed with their owner."""

    def __init__(self, runner: Runner, max_concurrency: int) -> None:
        self.runner = runner
        self.max_concurrency = max_concurrency
        self._clients: dict[str, LLMClient] = {}
        self._lock = threading.Lock()

    def get(self, endpoint: LLMEndpoint) -> LLMClient:
        key = endpoint.model_dump_json()
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                bound = int(getattr(endpoint, "max_concurrency", self.max_concurrency))
                client = self._clients[key] = LLMClient(endpoint, bound, self.runner)
            return client

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
