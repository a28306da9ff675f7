"""Chat completions sent to an OpenAI-compatible endpoint under one bound and one retry policy.

The judge gateway (``services.judge.gateway``) forwards every metric library's judge calls through one of
these, and the generator (``services.rag.llm``) sends its answers through another, so both share the same
policy:

- at most ``max_concurrency`` requests in flight (and a slot of a ``SharedBound`` with other processes'
  gateways, when given);
- 408 / 409 / 429 / 5xx, timeouts and connection errors are retried ``retries`` times, after the delay the
  endpoint asks for in ``Retry-After`` / ``retry-after-ms`` when it is within the timeout (a longer one ends
  the retries at once: waiting past the timeout would only hold the caller), else with exponential back-off
  and jitter (0.5, 1, 2, 4 ... seconds, capped at 20);
- what still fails is ``JudgeFailure`` whose ``cause`` is one of ``timeout``, ``connection``,
  ``rate_limited``, ``http_<status>``, ``malformed_response``, with the attempts made.

An ``Upstream`` lives on one event loop: it is opened and closed there by its owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import httpx

from services.config import LLMEndpoint
from services.judge.transport import AiohttpTransport

RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})


class SharedBound(Protocol):
    """A bound on upstream calls shared with other processes: a slot is held for each call."""

    def slot(self) -> contextlib.AbstractAsyncContextManager[object]: ...

    async def aclose(self) -> None: ...


class JudgeFailure(Exception):
    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause
        # Requests sent before giving up (set by ``Upstream.complete``).
        self.attempts = 0


def retry_after_s(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The delay a 429 / 503 answer asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an
    HTTP date; None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Upstream:
    """The bounded, retrying client of one endpoint, called ``name`` in failure texts (``judge``,
    ``generator``). ``sleep`` waits out the back-off (tests record the delays instead)."""

    def __init__(
        self,
        endpoint: LLMEndpoint,
        max_concurrency: int,
        shared: SharedBound | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        name: str = "judge",
    ) -> None:
        self.endpoint = endpoint
        self.name = name
        self.bound = max(1, max_concurrency)
        self.shared = shared
        self.sleep = sleep or asyncio.sleep
        self._semaphore: asyncio.Semaphore | None = None
        self._client: httpx.AsyncClient | None = None

    async def open(self) -> Upstream:
        """Create the client and the bound on the running loop (keep-alive connections for its life)."""
        self._semaphore = asyncio.Semaphore(self.bound)
        # aiohttp underneath (services.judge.transport): a third of httpx's own transport's CPU per request.
        self._client = httpx.AsyncClient(
            timeout=self.endpoint.timeout_s, transport=AiohttpTransport(self.bound * 2)
        )
        return self

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self.shared is not None:
            await self.shared.aclose()

    async def complete(self, model: str, body: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        """The endpoint's answer to the chat-completion ``body``, its latency (ms) and the retries it took;
        ``JudgeFailure`` (with the attempts made) when it gives none that can be used."""
        sent = [0]
        try:
            return await self._attempts(model, body, sent)
        except JudgeFailure as exc:
            exc.attempts = sent[0]
            raise

    async def _attempts(
        self, model: str, body: dict[str, Any], sent: list[int]
    ) -> tuple[dict[str, Any], float, int]:
        if self._client is None or self._semaphore is None:
            raise RuntimeError("the upstream client is not open")
        endpoint = self.endpoint
        url = (endpoint.base_url or "").rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {endpoint.api_key()}"}
        payload = {**body, "model": model}
        attempts = max(0, endpoint.retries) + 1
        last = JudgeFailure("error", "no attempt made")
        asked: float | None = None  # the delay the endpoint's last answer asked for (Retry-After)
        for attempt in range(attempts):
            if attempt:
                backoff = min(20.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
                await self.sleep(asked if asked is not None else backoff)
            asked = None
            async with self._semaphore, self.shared.slot() if self.shared else contextlib.nullcontext():
                t0 = time.perf_counter()
                sent[0] += 1
                try:
                    resp = await self._client.post(url, json=payload, headers=headers)
                except httpx.TimeoutException:
                    last = JudgeFailure("timeout", f"no answer within {endpoint.timeout_s} s")
                    continue
                except httpx.TransportError as exc:
                    last = JudgeFailure("connection", str(exc)[:200] or type(exc).__name__)
                    continue
                latency = (time.perf_counter() - t0) * 1000
            if resp.status_code in RETRYABLE:
                cause = "rate_limited" if resp.status_code == 429 else f"http_{resp.status_code}"
                text = f"HTTP 429 from the {self.name}" if resp.status_code == 429 else resp.text[:200]
                asked = retry_after_s(resp.headers)
                if asked is not None and asked > endpoint.timeout_s:
                    raise JudgeFailure(
                        cause,
                        f"{text} (the {self.name} asks to retry after {asked:.0f} s, longer than the "
                        f"{endpoint.timeout_s:g} s timeout)",
                    )
                last = JudgeFailure(cause, text)
                continue
            if resp.status_code >= 400:
                raise JudgeFailure(f"http_{resp.status_code}", resp.text[:300])
            try:
                data = resp.json()
                data["choices"][0]["message"]
            except (ValueError, KeyError, IndexError, TypeError):
                raise JudgeFailure(
                    "malformed_response", f"the {self.name}'s answer is not a chat completion"
                ) from None
            return data, latency, attempt
        raise last
