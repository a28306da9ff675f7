"""What a process keeps for its life, owned by whoever runs it (the app lifespan, a worker, a tool) and
closed by it: the database engine and session factories, scoring's loop, judge gateway, pools and models
(``ScoringResources``), the loaded retrieval indexes and their embedding models (``IndexCache``, bounded
by ``retrieval.max_loaded_indexes``) and the generator's LLM clients.

Nothing of this is a module global: two apps in one process (tests) have two of these, and closing one
leaves the other untouched.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services import metrics, pairjudge, rag
from services.config import Settings
from services.db import make_engine, make_session_factory, read_factory
from services.jobs.registry import JobHandlers, process_handlers
from services.metrics.resources import ScoringResources
from services.rag.index import IndexCache
from services.rag.llm import LLMClients

log = logging.getLogger("ragmeta")


def register_job_handlers(registry: JobHandlers = process_handlers) -> JobHandlers:
    """Register every domain's job handlers with ``registry`` (this process's by default); idempotent.
    Opening ``Resources`` does it, so every process that can run a job has them; registering loads no
    handler code (they are made on their first batch)."""
    metrics.register_job_handlers(registry)
    pairjudge.register_job_handlers(registry)
    rag.register_job_handlers(registry)
    return registry


@dataclass(kw_only=True)
class Resources:
    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    read_session_factory: sessionmaker[Session]
    scoring: ScoringResources
    indexes: IndexCache
    llm: LLMClients
    # What ``close`` ends, in reverse order of registration.
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)
    closed: bool = False

    @classmethod
    def open(
        cls,
        settings: Settings,
        engine: Engine | None = None,
        session_factory: sessionmaker[Session] | None = None,
        gateway_url: str | None = None,
    ) -> Resources:
        """The resources of ``settings``: on ``engine`` (not disposed on close) or an engine of their own
        (disposed on close); with ``session_factory``, its sessions rather than new ones on the engine.
        Registers every domain's job handlers with this process; starts nothing else: the scoring loop,
        the judge gateway and models start on first use."""
        register_job_handlers()
        stack = ExitStack()
        if session_factory is not None:
            engine = engine or session_factory.kw["bind"]
        if engine is None:
            engine = make_engine(settings.database_url, settings.database_wait_s)
            stack.callback(engine.dispose)
        factory = session_factory or make_session_factory(engine)
        scoring = ScoringResources(settings, factory, gateway_url=gateway_url)
        stack.callback(scoring.close)
        indexes = IndexCache(settings.retrieval.max_loaded_indexes)
        stack.callback(indexes.clear)
        llm = LLMClients(scoring, settings.generator.max_concurrency)
        # Before the scoring loop it runs on.
        stack.callback(llm.close)
        return cls(
            settings=settings,
            engine=engine,
            session_factory=factory,
            read_session_factory=read_factory(factory),
            scoring=scoring,
            indexes=indexes,
            llm=llm,
            _stack=stack,
        )

    def release_models(self, idle_s: float, trim: bool = False) -> list[tuple[Any, ...]]:
        """Release the scoring models no batch has used for ``idle_s`` seconds (an idle worker calls it)."""
        return self.scoring.release_models(idle_s, trim)

    def on_close(self) -> ExitStack:
        """Where an owner registers what must end before these resources do (workers, pools)."""
        return self._stack

    def close(self) -> None:
        """End everything, in reverse order of start, each step even when one before it fails."""
        self.closed = True
        self._stack.close()
