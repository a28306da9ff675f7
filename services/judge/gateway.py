"""The judge gateway: one loopback OpenAI-compatible endpoint that every metric library calls.

Ragas (openai SDK / instructor), DeepEval (openai SDK), Opik and RAGChecker (litellm) each have their own HTTP
stack, retry policy and concurrency knobs. Rather than tuning four stacks, each library is pointed at
``http://127.0.0.1:<port>/g/<ledger>/<metric>/<scope>/v1`` (the scope may also come in an ``x-ragmeta-scope``
header, which lets one client serve every sample); the gateway is then the one place that

- bounds concurrent upstream calls across all libraries (``judge.max_concurrency``) and retries them
  (``services.judge.upstream``, whose policy the generator's answers share):
  429 / 5xx / timeouts / connection errors with exponential back-off (``judge.retries``), or after
  the delay the judge asks for in ``Retry-After`` / ``retry-after-ms`` when it is within the timeout (a longer
  one ends the retries at once: waiting past the timeout would only hold the metric);
- caches answers in the database, keyed on the upstream model and the full request body, so a second scoring
  of a run makes no upstream call and identical requests from different metrics are sent once. Requests a
  metric repeats on purpose (Ragas' answer relevancy asks the same prompt several times) are told apart by
  their occurrence number within one ``scope`` (one metric on one output), so they are not collapsed; a
  scope ending in ``~r<i>`` (``repeat_scope``) is repeat i of a scoring job that asks the judge several
  independent times, and its requests are keyed apart from every other repeat's (re-running the job reads
  each repeat's own answers back);
- counts calls, cache hits, tokens and latency in a *ledger* per scoring batch (per metric and per scope),
  opened and released by whoever scores (``POST /ledgers``, ``DELETE /ledgers/<token>`` returns the
  figures): nothing accumulates from one job to the next;
- turns an upstream that fails or hangs into a prompt, non-retryable 400 (``judge_error``) so no library
  retries it again or waits forever.

Ownership: a ``JudgeGateway`` is started and stopped by its owner (``services.metrics.resources``: the app
lifespan, a worker process, a bench), never as a side effect of scoring. Workers in other processes (or on
other machines) reach it by its URL, so one gateway bounds the judge calls of all of them. Keep-alive
connections are kept both ways (clients -> gateway -> judge); cache writes are batched (one transaction per
``CACHE_FLUSH_S``, and one when a ledger is released), and an answer waiting to be written is served from
memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from services.config import JudgeSettings
from services.judge.repository import CachedCall, JudgeCallRepository
from services.judge.upstream import RETRYABLE, JudgeFailure, SharedBound, Upstream, retry_after_s

__all__ = [
    "RETRYABLE",
    "JudgeFailure",
    "JudgeGateway",
    "Ledger",
    "SharedBound",
    "Usage",
    "answer_digest",
    "request_key",
    "retry_after_s",
]

log = logging.getLogger("ragmeta.judge")
SCOPE_HEADER = "x-ragmeta-scope"
CACHE_FLUSH_S = 0.25
# A ledger nobody released (its worker died) is dropped after this long without a call.
LEDGER_IDLE_S = 3600.0


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
        return {**self.__dict__, "causes": dict(self.causes)}

    def add(self, other: dict[str, Any]) -> None:
        """Add the figures of another usage (``as_dict`` form): a job's totals over its batches."""
        for name, value in other.items():
            if name == "causes":
                for cause, n in value.items():
                    self.causes[cause] = self.causes.get(cause, 0) + int(n)
            elif hasattr(self, name):
                setattr(self, name, getattr(self, name) + value)


@dataclass
class Ledger:
    """The accounting of one scoring batch: per metric, per (metric, scope), and the occurrence numbers of
    requests repeated within a scope. Released as a whole when the batch ends."""

    token: str
    job: str
    refresh: bool
    used_at: float = field(default_factory=time.monotonic)
    usage: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))
    scopes: dict[tuple[str, str], Usage] = field(default_factory=lambda: defaultdict(Usage))
    occurrences: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    # Requests a refreshed batch has had answered afresh (it may read those from the cache).
    fresh: set[str] = field(default_factory=set)
    # The answers each (metric, scope) was given: request key -> digest of the answer (``answer_digest``).
    # What a score rests on, for the score memo (services.metrics.memo).
    answers: dict[tuple[str, str], dict[str, str]] = field(default_factory=lambda: defaultdict(dict))

    def report(self) -> dict[str, Any]:
        scopes: dict[str, dict[str, Any]] = defaultdict(dict)
        for (metric, scope), usage in self.scopes.items():
            scopes[metric][scope] = usage.as_dict()
        answers: dict[str, dict[str, Any]] = defaultdict(dict)
        for (metric, scope), given in self.answers.items():
            answers[metric][scope] = dict(given)
        return {
            "job": self.job,
            "metrics": {m: u.as_dict() for m, u in self.usage.items()},
            "scopes": dict(scopes),
            "answers": dict(answers),
        }


def answer_digest(response: dict[str, Any]) -> str:
    """A digest of one judge answer as stored in the cache (canonical JSON: the same after a round trip
    through SQLite's JSON or PostgreSQL's JSONB)."""
    blob = json.dumps(response, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def request_key(model: str, body: dict[str, Any], occurrence: int, repeat: int = 0) -> str:
    # Fields that only steer transport do not change the answer.
    payload = {k: v for k, v in body.items() if k not in ("stream", "user", "metadata")}
    keyed: dict[str, Any] = {"model": model, "body": payload, "n": occurrence}
    if repeat:  # repeat 0 keeps the keys answers were cached under before repeats existed
        keyed["repeat"] = repeat
    blob = json.dumps(keyed, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


REPEAT_MARK = "~r"


def repeat_scope(scope: str, repeat: int) -> str:
    """The scope of repeat ``repeat`` of a sample whose first asking has scope ``scope``."""
    return scope if repeat <= 0 else f"{scope}{REPEAT_MARK}{repeat}"


def scope_repeat(scope: str) -> int:
    """The repeat index a scope names (0 when it names none or is unreadable)."""
    _, mark, tail = scope.rpartition(REPEAT_MARK)
    return int(tail) if mark and tail.isdigit() else 0


class JudgeGateway:
    """Runs in a background thread with its own event loop; ``url`` is what clients are given."""

    def __init__(
        self,
        judge: JudgeSettings,
        session_factory: sessionmaker[Session] | None,
        cache: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        shared: SharedBound | None = None,
    ):
        self.judge = judge.model_copy(deep=True)
        # The bound shared with other processes' gateways (PostgreSQL: services.judge.slots), on top of this
        # gateway's own ``max_concurrency``; None: this gateway's bound is the bound.
        self.shared = shared
        self.session_factory = session_factory
        self.cache = cache and session_factory is not None
        self.ledgers: dict[str, Ledger] = {}
        # Every request since the gateway started, whichever ledger it was for (the Prometheus totals).
        self.totals = Usage()
        # Identical requests arriving together wait for the first one's answer instead of being sent twice.
        # A request being answered (from upstream, or read from the table), with whether its answer is fresh.
        self._inflight: dict[str, asyncio.Future[tuple[dict[str, Any], bool]]] = {}
        # Answers not yet written to the cache table (served from here meanwhile).
        self._pending: dict[str, CachedCall] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._upstream: Upstream | None = None
        # The back-off's sleep: a seam for tests, which record the delays instead of waiting them out.
        self.sleep = asyncio.sleep
        self.host = host
        self.port = port

    # -------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> JudgeGateway:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        @contextlib.asynccontextmanager
        async def lifespan(_: Any) -> Any:
            self._loop = asyncio.get_running_loop()
            # Keep-alive to the judge: this client lives as long as the gateway's own loop. Its back-off
            # sleeps through ``self.sleep``, read at each wait (tests replace it after start).
            upstream = Upstream(
                self.judge, self.judge.max_concurrency, self.shared, sleep=lambda s: self.sleep(s)
            )
            self._upstream = await upstream.open()
            if self.cache:
                self._flusher = asyncio.create_task(self._flush_forever())
            yield
            if self._flusher is not None:
                self._flusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._flusher
            await self._flush()
            await upstream.aclose()

        chat = [
            Route("/g/{token}/{metric}/{scope}/v1/chat/completions", self._endpoint, methods=["POST"]),
            Route("/g/{token}/{metric}/{scope}/chat/completions", self._endpoint, methods=["POST"]),
        ]
        control = [
            Route("/ledgers", self._open, methods=["POST"]),
            Route("/ledgers/{token}", self._report, methods=["GET", "DELETE"]),
            Route("/stats", self._stats, methods=["GET"]),
        ]
        app = Starlette(lifespan=lifespan, routes=chat + control)
        if not self.port:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        config = uvicorn.Config(
            app,
            host=self.host,
            port=self.port,
            log_level="error",
            lifespan="on",
            # libuv's loop and httptools' parser: about half the CPU per request of asyncio's loop and h11
            # (bench/judge_transport.py), on a hop every judge request of the service makes.
            loop="uvloop",
            http="httptools",
            # Clients keep their connections between the calls of a batch and across batches.
            timeout_keep_alive=60,
        )
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

    @property
    def in_flight(self) -> int:
        """Requests being answered now (sent upstream, or read from the cache table)."""
        return len(self._inflight)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def base_url(self, token: str, metric: str, scope: str = "-") -> str:
        return f"{self.url}/g/{token}/{metric.replace('/', '_')}/{scope}/v1"

    # ---------------------------------------------------------------------------------------------- ledgers
    def open_ledger(self, job: str, refresh: bool = False) -> str:
        """A new ledger for one scoring batch; its token goes in the URLs the batch's clients call."""
        now = time.monotonic()
        with self._lock:
            for token in [t for t, led in self.ledgers.items() if now - led.used_at > LEDGER_IDLE_S]:
                del self.ledgers[token]
            token = secrets.token_hex(8)
            self.ledgers[token] = Ledger(token=token, job=str(job), refresh=refresh)
        return token

    def close_ledger(self, token: str) -> dict[str, Any] | None:
        """Release the ledger; its figures, or None when it does not exist (any more)."""
        with self._lock:
            ledger = self.ledgers.pop(token, None)
        return ledger.report() if ledger is not None else None

    async def _open(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        try:
            body = await request.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        token = self.open_ledger(str(body.get("job", "-")), bool(body.get("refresh", False)))
        return JSONResponse({"token": token}, status_code=201)

    async def _report(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        token = request.path_params["token"]
        if request.method == "DELETE":
            # The batch's answers reach the cache table before its scores are stored: a score memo entry
            # (services/metrics/memo.py) never refers to an answer that is not there yet.
            if self.cache:
                with contextlib.suppress(Exception):
                    await self._flush()
            report = self.close_ledger(token)
        else:
            with self._lock:
                ledger = self.ledgers.get(token)
                report = ledger.report() if ledger is not None else None
        if report is None:
            return JSONResponse({"error": {"message": f"no ledger {token}"}}, status_code=404)
        return JSONResponse(report)

    async def _stats(self, _: Any) -> Any:
        from starlette.responses import JSONResponse

        with self._lock:
            return JSONResponse({"ledgers": len(self.ledgers), "pending_cache_writes": len(self._pending)})

    # --------------------------------------------------------------------------------------------- serving
    async def _endpoint(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        token, metric = request.path_params["token"], request.path_params["metric"]
        scope = request.headers.get(SCOPE_HEADER) or request.path_params["scope"]
        ledger = self.ledgers.get(token)
        if ledger is None:
            return JSONResponse(
                {
                    "error": {
                        "message": f"unknown_ledger: no ledger {token}",
                        "type": "judge_error",
                        "code": "unknown_ledger",
                    }
                },
                status_code=400,
            )
        ledger.used_at = time.monotonic()
        usages = (ledger.usage[metric], ledger.scopes[(metric, scope)], self.totals)
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
        repeat = scope_repeat(scope)
        base_key = request_key(model, body, 0, repeat)
        for usage in usages:
            usage.calls += 1
        key = self._occurrence_key(ledger, metric, scope, model, body, base_key, repeat)
        # A refreshed batch reads no answer stored before it: only those it asked for itself (a request two
        # of its metrics make is still sent once); a request being sent upstream now is fresh for everyone.
        readable = self.cache and (not ledger.refresh or key in ledger.fresh)
        # Everything from here to claiming the key runs without an await (one loop): an identical request
        # finds either the answer or the claim, never neither (two requests read the table at once, both
        # miss, both go upstream).
        while True:
            waiting = self._pending.get(key) if readable else None
            if waiting is not None:
                self._hit(ledger, key, usages, metric, scope, waiting.response)
                return JSONResponse(waiting.response)
            claim = self._inflight.get(key) if self.cache else None
            if claim is None:
                break
            try:
                response, fresh = await asyncio.shield(claim)
            except JudgeFailure:
                break
            if fresh or readable:
                self._hit(ledger, key, usages, metric, scope, response)
                return JSONResponse(response)
            # an answer read from the table while this batch refreshes: ask again (claim the key anew)
        future: asyncio.Future[tuple[dict[str, Any], bool]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            stored = await asyncio.to_thread(self._read, key) if readable else None
            if stored is not None:
                future.set_result((stored, False))
                self._inflight.pop(key, None)
                self._hit(ledger, key, usages, metric, scope, stored)
                return JSONResponse(stored)
            response, latency, retries = await self._forward(model, body)
            future.set_result((response, True))
        except BaseException as exc:
            if not isinstance(exc, JudgeFailure):
                # Cancelled or broken: the claim must not stay (identical requests would wait on it forever).
                if not future.done():
                    future.set_exception(JudgeFailure("exception", f"{type(exc).__name__}: {exc}"))
                    future.exception()
                self._inflight.pop(key, None)
                raise
            future.set_exception(exc)
            future.exception()  # retrieved: waiters handle it, nobody else needs to
            self._inflight.pop(key, None)
            self._count_failure(usages, exc)
            # 400 is not retried by the openai SDK or litellm: the failure reaches the metric at once.
            return JSONResponse(
                {"error": {"message": str(exc), "type": "judge_error", "code": exc.cause}}, status_code=400
            )
        self._record_answer(ledger, key, metric, scope, usages, model, body, response, latency, retries)
        return JSONResponse(response)

    @staticmethod
    def _occurrence_key(
        ledger: Ledger, metric: str, scope: str, model: str, body: dict[str, Any], base_key: str, repeat: int
    ) -> str:
        """The cache key of this request: within a scope, the n-th identical request is its own key (a
        metric asking the same thing twice gets two answers, as it would upstream)."""
        occurrence = 0
        if scope != "-":
            occurrence = ledger.occurrences[(metric, scope, base_key)]
            ledger.occurrences[(metric, scope, base_key)] += 1
        return base_key if occurrence == 0 else request_key(model, body, occurrence, repeat)

    @staticmethod
    def _count_failure(usages: tuple[Usage, ...], exc: JudgeFailure) -> None:
        for usage in usages:
            usage.failures += 1
            usage.causes[exc.cause] = usage.causes.get(exc.cause, 0) + 1
            # A request that failed was still sent, and retried: the judge was asked (and may bill) all
            # the same, as with an answered one (one call, its extra attempts as retries).
            if exc.attempts:
                usage.upstream_calls += 1
                usage.upstream_retries += exc.attempts - 1

    def _record_answer(
        self,
        ledger: Ledger,
        key: str,
        metric: str,
        scope: str,
        usages: tuple[Usage, ...],
        model: str,
        body: dict[str, Any],
        response: dict[str, Any],
        latency: float,
        retries: int,
    ) -> None:
        """An upstream answer: counted in the ledger, queued for the cache table, its claim released (no
        await in here: waiters see the answer and the released claim together)."""
        tokens = response.get("usage") or {}
        if ledger.refresh:
            ledger.fresh.add(key)
        ledger.answers[(metric, scope)][key] = answer_digest(response)
        for usage in usages:
            usage.upstream_calls += 1
            usage.upstream_retries += retries
            usage.prompt_tokens += int(tokens.get("prompt_tokens") or 0)
            usage.completion_tokens += int(tokens.get("completion_tokens") or 0)
            usage.latency_ms += latency
        if self.cache:
            self._pending[key] = CachedCall(
                key,
                model,
                body,
                response,
                tokens.get("prompt_tokens"),
                tokens.get("completion_tokens"),
                latency,
            )
        self._inflight.pop(key, None)

    @staticmethod
    def _hit(
        ledger: Ledger,
        key: str,
        usages: tuple[Usage, ...],
        metric: str,
        scope: str,
        response: dict[str, Any],
    ) -> None:
        if ledger.refresh:
            ledger.fresh.add(key)
        ledger.answers[(metric, scope)][key] = answer_digest(response)
        for usage in usages:
            usage.cache_hits += 1

    # ------------------------------------------------------------------------------------------------ cache

    def _read(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or None (also when the store cannot be read: the judge is asked instead)."""
        assert self.session_factory is not None
        try:
            with self.session_factory() as s:
                return JudgeCallRepository(s).responses([key]).get(key)
        except Exception:
            log.warning("judge cache: reading an answer failed; asking the judge", exc_info=True)
            return None

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(CACHE_FLUSH_S)
            if self._pending:
                try:
                    await self._flush()
                except Exception:  # the store is busy or down: the answers wait for the next round
                    log.exception("judge cache: writing %d answers failed", len(self._pending))

    async def _flush(self) -> None:
        """Write every answer waiting, in one transaction; each stays served from memory until written."""
        if not self._pending or self.session_factory is None:
            return
        batch = dict(self._pending)
        await asyncio.to_thread(self._write, list(batch.values()))
        for key, call in batch.items():
            if self._pending.get(key) is call:
                del self._pending[key]

    def flush_cache(self) -> None:
        """Write the answers waiting now (from another thread; the gateway also does it on its own)."""
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._flush(), self._loop).result(30)

    def _write(self, calls: list[CachedCall]) -> None:
        assert self.session_factory is not None
        with self.session_factory() as s:
            JudgeCallRepository(s).put_many(calls)
            s.commit()

    async def _forward(self, model: str, body: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        """The judge's answer, its latency and the retries it took; ``JudgeFailure`` (with the attempts
        made) when it gives none that can be used."""
        assert self._upstream is not None
        return await self._upstream.complete(model, body)
