"""What one scoring call needs, passed to the adapters instead of being kept on them.

ScoringContext   settings, dataset language, k, word rule, job, cache policy (``refresh``), the judge
                 session, the process's long-lived resources and the batch's shared limits. Adapters are
                 stateless: ``adapter.score(samples, ctx)``. Everything in it but ``resources`` and
                 ``judge`` is plain data a worker on another machine can rebuild from the job row and
                 its settings.
JudgeSession     one scoring batch's view of the judge gateway: its ledger token (the batch's accounting,
                 released when the batch ends), a keep-alive HTTP pool to the gateway shared by every
                 library client of the batch, and the scope of each request (``SCOPE``, a context
                 variable set per sample and sent as a header, so one client serves every sample).
open_judge       opens and releases a JudgeSession around a batch.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from services.config import Settings
from services.judge.gateway import SCOPE_HEADER

if TYPE_CHECKING:
    import httpx

    from services.metrics.resources import ScoringResources
    from services.retrieval.segment import WordRule

T = TypeVar("T")

#: The scope of the judge requests made in this task: one metric on one sample ("o<output id>").
SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("ragmeta_judge_scope", default=None)


@dataclass
class JudgeSession:
    """One batch's ledger at the gateway and the HTTP pool its library clients share."""

    gateway: str  # "http://127.0.0.1:<port>"
    token: str
    http: httpx.AsyncClient
    job: str
    refresh: bool
    # Library caches already refreshed in this session (RAGChecker checkpoints, Ragas prompt files): a
    # refreshed job asks the judge again once, then reads what it just wrote like any other job.
    refreshed: set[str] = field(default_factory=set)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # What one metric of the batch computed for its companions, by name (RAGChecker's pass over a
    # checkpoint): they read it here instead of from the file. Dropped with the session.
    results: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None

    def base_url(self, metric: str, scope: str = "-") -> str:
        """The OpenAI-compatible base URL a library is given for ``metric`` (the scope travels per request
        in a header unless given here)."""
        return f"{self.gateway}/g/{self.token}/{metric.replace('/', '_')}/{scope}/v1"

    def lock(self, name: str) -> asyncio.Lock:
        """A lock per name (a checkpoint file, a prompt file) for the batch's tasks."""
        return self.locks.setdefault(name, asyncio.Lock())


def bounded_transport(connections: int) -> httpx.AsyncBaseTransport:
    """An httpx transport that never has more than ``connections`` requests at once, the others waiting
    their turn for a connection (``services.judge.transport``: aiohttp underneath).

    httpcore 1.0.9's pool does work quadratic in its connections on every request and every response, and
    httpcore + h11 cost about 1.5 ms of CPU per judge request: with one connection per sample in flight
    that was a fifth of a worker process's CPU (py-spy). The gateway's bound decides how many judge calls
    run; a few times that many waiting in each process keeps it busy, and the pool stays small."""
    from services.judge.transport import AiohttpTransport

    return AiohttpTransport(connections)


@asynccontextmanager
async def open_judge(
    gateway: str, job: str, refresh: bool, timeout_s: float, connections: int = 32
) -> AsyncIterator[JudgeSession]:
    """A JudgeSession for one batch: opens a ledger at the gateway, releases it on exit and keeps its
    figures in ``report``; at most ``connections`` requests to the gateway at once. Raises
    ``httpx.HTTPError`` when the gateway cannot be reached."""
    import httpx

    async def add_scope(request: httpx.Request) -> None:
        scope = SCOPE.get()
        if scope is not None and SCOPE_HEADER not in request.headers:
            request.headers[SCOPE_HEADER] = scope

    http = httpx.AsyncClient(
        timeout=timeout_s,
        transport=bounded_transport(max(1, connections)),
        event_hooks={"request": [add_scope]},
    )
    try:
        r = await http.post(f"{gateway}/ledgers", json={"job": job, "refresh": refresh})
        r.raise_for_status()
        session = JudgeSession(gateway=gateway, token=r.json()["token"], http=http, job=job, refresh=refresh)
        try:
            yield session
        finally:
            with _quiet():
                r = await http.delete(f"{gateway}/ledgers/{session.token}")
                if r.status_code == 200:
                    session.report = r.json()
    finally:
        await http.aclose()


class _quiet:
    """Releasing a ledger must not hide the batch's own outcome: a gateway gone at that point is ignored."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, *_: Any) -> bool:
        import httpx

        return exc_type is not None and issubclass(exc_type, httpx.HTTPError)


@dataclass(frozen=True)
class ScoringContext:
    settings: Settings
    language: str = "en"
    k: int = 5
    # What a word is for the word-level reference metrics (services.retrieval.segment.WORD_RULES).
    word_rule: WordRule = "joined"
    job: str = "adhoc"
    refresh: bool = False  # ask the judge again: the gateway's cache and every library's own caches
    resources: ScoringResources | None = None
    judge: JudgeSession | None = None
    # Names of the metrics scored in the same batch (RAGChecker makes one judge pass for all of its own).
    batch_metrics: frozenset[str] = frozenset()
    # Samples of the batch scored at once, all metrics together; the gateway bounds the judge calls.
    slots: asyncio.Semaphore | None = None

    def for_k(self, k: int) -> ScoringContext:
        return replace(self, k=k)

    def model(self, key: tuple[Any, ...], load: Callable[[], T]) -> T:
        """A loaded model (embeddings, BERTScore) kept by the process's resources, else loaded now."""
        if self.resources is None:
            return load()
        return self.resources.model(key, load)

    @property
    def judge_language(self) -> str:
        return self.settings.judge.language or self.language
