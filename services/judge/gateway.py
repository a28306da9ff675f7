"""The judge gateway: one loopback OpenAI-compatible endpoint that every metric library calls.

Ragas (openai SDK / instructor), DeepEval (openai SDK), Opik and RAGChecker (litellm) each have their own HTTP
stack, retry policy and concurrency knobs. Rather than tuning four stacks, each library is pointed at
``http://127.0.0.1:<port>/g/<job>/<metric>/<scope>/v1``; the gateway is then the one place that

- bounds concurrent upstream calls across all libraries (``judge.max_concurrency``);
- retries 429 / 5xx / timeouts / connection errors with exponential back-off (``judge.retries``), or after
  the delay the judge asks for in ``Retry-After`` / ``retry-after-ms`` when it is within the timeout (a longer
  one ends the retries at once: waiting past the timeout would only hold the metric);
- caches answers in the database, keyed on the upstream model and the full request body, so a second scoring
  of a run makes no upstream call and identical requests from different metrics are sent once. Requests a
  metric repeats on purpose (Ragas' answer relevancy asks the same prompt several times) are told apart by
  their occurrence number within one ``scope`` (one metric on one output), so they are not collapsed;
- counts calls, cache hits, tokens and latency per job and metric;
- turns an upstream that fails or hangs into a prompt, non-retryable 400 (``judge_error``) so no library
  retries it again or waits forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import json
import logging
import random
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.config import JudgeSettings
from services.judge.repository import JudgeCallRepository

log = logging.getLogger("ragmeta.judge")
RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    upstream_calls: int = 0
    upstream_retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    causes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class JudgeFailure(Exception):
    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause


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


def request_key(model: str, body: dict[str, Any], occurrence: int) -> str:
    # Fields that only steer transport do not change the answer.
    payload = {k: v for k, v in body.items() if k not in ("stream", "user", "metadata")}
    blob = json.dumps({"model": model, "body": payload, "n": occurrence}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgeGateway:
    """Runs in a background thread with its own event loop; ``base_url(...)`` is what libraries are given."""

    def __init__(
        self, judge: JudgeSettings, session_factory: sessionmaker[Session] | None, cache: bool = True
    ):
        self.judge = judge
        self.session_factory = session_factory
        self.cache = cache and session_factory is not None
        self.usage: dict[tuple[str, str], Usage] = defaultdict(Usage)
        # The same figures per scope (one metric on one output), for per-score tokens and latency.
        self.scope_usage: dict[tuple[str, str, str], Usage] = defaultdict(Usage)
        # Occurrence counters restart for every job, metric and scope: a re-run asks its repeats again as
        # occurrences 0, 1, 2... and finds them all in the cache.
        self._occurrences: dict[tuple[str, str, str, str], int] = defaultdict(int)
        # Identical requests arriving together wait for the first one's answer instead of being sent twice.
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        # Jobs that asked for fresh answers: the cache is written but not read for them.
        self.refresh_jobs: set[str] = set()
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._client: httpx.AsyncClient | None = None
        # The back-off's sleep: a seam for tests, which record the delays instead of waiting them out.
        self.sleep = asyncio.sleep
        self.port = 0

    # -------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> JudgeGateway:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        @contextlib.asynccontextmanager
        async def lifespan(_: Any) -> Any:
            yield
            if self._client is not None:
                await self._client.aclose()

        app = Starlette(
            lifespan=lifespan,
            routes=[
                Route("/g/{job}/{metric}/{scope}/v1/chat/completions", self._endpoint, methods=["POST"]),
                Route("/g/{job}/{metric}/{scope}/chat/completions", self._endpoint, methods=["POST"]),
            ],
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="judge-gateway", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise RuntimeError("the judge gateway did not start")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def base_url(self, job: int | str, metric: str, scope: str = "-") -> str:
        safe = metric.replace("/", "_")
        return f"http://127.0.0.1:{self.port}/g/{job}/{safe}/{scope}/v1"

    def reset_occurrences(self, job: int | str, metric: str) -> None:
        """Start numbering repeated requests afresh: a batch computed again (a retried job item) then asks its
        deliberate repeats as occurrences 0, 1, 2... and finds them in the cache."""
        key = (str(job), metric.replace("/", "_"))
        with self._lock:
            for k in [k for k in self._occurrences if k[:2] == key]:
                del self._occurrences[k]

    def usage_for(self, job: int | str, metric: str, scope: str | None = None) -> Usage:
        if scope is None:
            return self.usage[(str(job), metric.replace("/", "_"))]
        return self.scope_usage[(str(job), metric.replace("/", "_"), scope)]

    def fingerprint(self, language: str, library: str, version: str | None) -> dict[str, Any]:
        return {
            "model": self.judge.model,
            "endpoint": self.judge.host,
            "language": language,
            "library": library,
            "library_version": version,
        }

    # --------------------------------------------------------------------------------------------- serving
    async def _endpoint(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        job, metric, scope = (request.path_params[k] for k in ("job", "metric", "scope"))
        usages = (self.usage[(job, metric)], self.scope_usage[(job, metric, scope)])
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse(
                {"error": {"message": "body is not JSON", "type": "judge_error"}}, status_code=400
            )
        if body.get("stream"):
            return JSONResponse(
                {"error": {"message": "streaming is not supported", "type": "judge_error"}}, status_code=400
            )
        model = self.judge.model or str(body.get("model"))
        base_key = request_key(model, body, 0)
        with self._lock:
            for usage in usages:
                usage.calls += 1
            occurrence = 0
            if scope != "-":
                occurrence = self._occurrences[(job, metric, scope, base_key)]
                self._occurrences[(job, metric, scope, base_key)] += 1
        key = base_key if occurrence == 0 else request_key(model, body, occurrence)
        use_cache = self.cache and job not in self.refresh_jobs
        cached = await asyncio.to_thread(self._cached, key) if use_cache else None
        if cached is not None:
            with self._lock:
                for usage in usages:
                    usage.cache_hits += 1
            return JSONResponse(cached)
        pending = self._inflight.get(key) if use_cache else None
        if pending is not None:
            try:
                response = await asyncio.shield(pending)
            except JudgeFailure:
                pass
            else:
                with self._lock:
                    for usage in usages:
                        usage.cache_hits += 1
                return JSONResponse(response)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            response, latency, retries = await self._forward(model, body)
            future.set_result(response)
        except JudgeFailure as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters handle it, nobody else needs to
            self._inflight.pop(key, None)
            with self._lock:
                for usage in usages:
                    usage.failures += 1
                    usage.causes[exc.cause] = usage.causes.get(exc.cause, 0) + 1
            # 400 is not retried by the openai SDK or litellm: the failure reaches the metric at once.
            return JSONResponse(
                {"error": {"message": str(exc), "type": "judge_error", "code": exc.cause}}, status_code=400
            )
        tokens = response.get("usage") or {}
        with self._lock:
            for usage in usages:
                usage.upstream_calls += 1
                usage.upstream_retries += retries
                usage.prompt_tokens += int(tokens.get("prompt_tokens") or 0)
                usage.completion_tokens += int(tokens.get("completion_tokens") or 0)
                usage.latency_ms += latency
        if self.cache:
            await asyncio.to_thread(self._store, key, model, body, response, tokens, latency)
        self._inflight.pop(key, None)
        return JSONResponse(response)

    def _cached(self, key: str) -> dict[str, Any] | None:
        assert self.session_factory is not None
        with self.session_factory() as s:
            hit = JudgeCallRepository(s).get(key)
            return dict(hit.response) if hit is not None else None

    def _store(
        self,
        key: str,
        model: str,
        body: dict[str, Any],
        response: dict[str, Any],
        tokens: dict[str, Any],
        latency: float,
    ) -> None:
        assert self.session_factory is not None
        with self.session_factory() as s:
            JudgeCallRepository(s).put(
                key,
                model,
                body,
                response,
                tokens.get("prompt_tokens"),
                tokens.get("completion_tokens"),
                latency,
            )

    async def _forward(self, model: str, body: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(max(1, self.judge.max_concurrency))
            # No keep-alive: a pooled connection can outlive the gateway's loop (and the upstream's), and one
            # TCP handshake per judge call is negligible beside the call itself.
            self._client = httpx.AsyncClient(
                timeout=self.judge.timeout_s, limits=httpx.Limits(max_keepalive_connections=0)
            )
        assert self._client is not None
        url = (self.judge.base_url or "").rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.judge.api_key()}"}
        payload = {**body, "model": model}
        attempts = max(0, self.judge.retries) + 1
        last = JudgeFailure("error", "no attempt made")
        asked: float | None = None  # the delay the judge's last answer asked for (Retry-After)
        for attempt in range(attempts):
            if attempt:
                # The judge's own delay when it gave one, else exponential back-off with jitter:
                # 0.5, 1, 2, 4 ... seconds (capped at 20).
                backoff = min(20.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
                await self.sleep(asked if asked is not None else backoff)
            asked = None
            async with self._semaphore:
                t0 = time.perf_counter()
                try:
                    resp = await self._client.post(url, json=payload, headers=headers)
                except httpx.TimeoutException:
                    last = JudgeFailure("timeout", f"no answer within {self.judge.timeout_s} s")
                    continue
                except httpx.TransportError as exc:
                    last = JudgeFailure("connection", str(exc)[:200] or type(exc).__name__)
                    continue
                latency = (time.perf_counter() - t0) * 1000
            if resp.status_code in RETRYABLE:
                cause = "rate_limited" if resp.status_code == 429 else f"http_{resp.status_code}"
                text = "HTTP 429 from the judge" if resp.status_code == 429 else resp.text[:200]
                asked = retry_after_s(resp.headers)
                if asked is not None and asked > self.judge.timeout_s:
                    raise JudgeFailure(
                        cause,
                        f"{text} (the judge asks to retry after {asked:.0f} s, longer than the "
                        f"{self.judge.timeout_s:g} s timeout)",
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
                    "malformed_response", "the judge's answer is not a chat completion"
                ) from None
            return data, latency, attempt
        raise last


_gateway: JudgeGateway | None = None
_gateway_lock = threading.Lock()


def shared_gateway(judge: JudgeSettings, session_factory: sessionmaker[Session] | None) -> JudgeGateway:
    """The process's gateway, started on first use (restarted when the judge configuration changes)."""
    global _gateway
    with _gateway_lock:
        if _gateway is not None and _gateway.judge != judge:
            _gateway.stop()
            _gateway = None
        if _gateway is None:
            _gateway = JudgeGateway(judge, session_factory).start()
        return _gateway
