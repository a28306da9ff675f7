"""The API's resources: one typed object in ``app.state.resources``, made by ``create_app`` and closed by
its lifespan, read by routers and dependencies through ``get_resources`` / ``ResourcesDep``.

``core`` is what the API shares with the workers (``services.resources.Resources``: engine, sessions,
scoring, loaded indexes, LLM clients); the rest is HTTP's own: the database slots requests wait for, the
limiters of CPU-heavy work, the report caches, the report process pool, the credential state and the
embedded worker or worker processes.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import anyio
from fastapi import Depends, FastAPI, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.settings import Settings
from services.metrics.resources import ScoringResources
from services.rag.index import IndexCache
from services.rag.llm import LLMClients
from services.reports.cache import ReportCache
from services.reports.page_store import PageStore
from services.reports.pool import ReportPool
from services.resources import Resources
from services.telemetry import Telemetry

if TYPE_CHECKING:
    from app.auth_state import AuthState
    from app.db_slots import DbSlots
    from services.jobs.processes import WorkerProcesses
    from services.jobs.queue import QueueWorker
    from services.jobs.worker import Worker


class UploadRoute(NamedTuple):
    """A route that reads a batch upload itself: its body streams under the upload limit (app.middleware)."""

    path: str
    regex: re.Pattern[str]
    methods: frozenset[str]


@dataclass(kw_only=True)
class AppResources:
    settings: Settings
    core: Resources
    # Requests wait on the loop for a database slot, one per connection the pool can lend (app.deps).
    db_slots: DbSlots
    # Report renders are CPU-bound: a few at a time, waiting on the loop rather than in pool threads.
    report_limiter: anyio.CapacityLimiter
    # Study imports parse and locate text (CPU) in threads: a few at a time.
    import_limiter: anyio.CapacityLimiter
    answer_limiter: anyio.CapacityLimiter
    # The last computed reports (and report page sections), and the computations under way (event loop only).
    report_cache: ReportCache[Any]
    section_cache: ReportCache[Any]
    # Report pages kept on disk across restarts (services.reports.page_store); None: not kept.
    page_store: PageStore | None = None
    report_pool: ReportPool
    auth: AuthState
    # The probes' (/healthz, /readyz) own connection and thread: never waiting behind requests for either.
    probe_engine: Engine
    probe_limiter: anyio.CapacityLimiter
    # The code's migration head, read once (the scripts do not change under a running process).
    migration_head: str
    # Inline scoring requests being scored at once (made on the lifespan's loop).
    inline_slots: asyncio.Semaphore | None = None
    worker: Worker | QueueWorker | None = None
    worker_processes: WorkerProcesses | None = None
    # Found once the routers are included (app.main.create_app, which refuses to build without any).
    upload_routes: list[UploadRoute] = field(default_factory=list)
    # The process's operational metrics (app.telemetry serves them at /-/metrics).
    telemetry: Telemetry = field(default_factory=Telemetry)

    @property
    def engine(self) -> Engine:
        return self.core.engine

    @property
    def session_factory(self) -> sessionmaker[Session]:
        return self.core.session_factory

    @property
    def read_session_factory(self) -> sessionmaker[Session]:
        return self.core.read_session_factory

    @property
    def scoring(self) -> ScoringResources:
        return self.core.scoring

    @property
    def indexes(self) -> IndexCache:
        return self.core.indexes

    @property
    def llm(self) -> LLMClients:
        return self.core.llm


def resources_of(app: FastAPI) -> AppResources:
    resources: AppResources = app.state.resources
    return resources


def get_resources(request: Request) -> AppResources:
    return resources_of(request.app)


ResourcesDep = Annotated[AppResources, Depends(get_resources)]
