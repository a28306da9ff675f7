"""What a kind of job does, registered by the domain that owns it; the context every handler runs in.

The jobs package knows no domain: scoring, index building and generation register their handlers here
(``services.resources.register_job_handlers`` at each entry point's start-up), by name and as lazy
``"module:Class"`` targets, so that registering costs nothing and importing the jobs package loads no
domain. A worker asks the registry of its context for the handler of a job's kind; a kind nobody registered
fails with the kinds that are known.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from services.config import Settings


class WorkerResources(Protocol):
    """What a worker needs from the long-lived resources its owner hands it (the scoring loop, the judge
    gateway, pools, models): only that they end with it. Handlers that need more narrow the type to their
    own resources."""

    def close(self) -> None: ...

    def release_models(self, idle_s: float, trim: bool = False) -> list[tuple[Any, ...]]:
        """Release what no batch has used for ``idle_s`` seconds (called by an idle worker); ``trim``: also
        give freed memory back to the system (work just ended)."""
        ...


class JobHandler(Protocol):
    """What a kind of job does with a batch of its items.

    ``process`` gets the job's id and the batch's item keys, and opens the sessions it needs from ``ctx``
    (none is held for it). It returns, for each key, None (done) or an error text "cause: message" (failed:
    the item's error is recorded and the job goes on). Raising fails nothing by itself: the batch is put
    back and retried up to ``jobs.max_item_retries`` times.
    """

    batch_size: int

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]: ...


class UnknownJobKind(LookupError):
    """A job whose kind no domain registered a handler for in this process."""


class JobHandlers:
    """Handlers by job kind; each is a handler or a ``"module:Class"`` target made on first use."""

    def __init__(self) -> None:
        self._targets: dict[str, JobHandler | str] = {}
        self._loaded: dict[str, JobHandler] = {}
        self._lock = threading.Lock()

    def register(self, kind: str, handler: JobHandler | str) -> None:
        """Register the handler of ``kind``. Registering the same one again is a no-op (every entry point
        registers at start-up); a different one for a registered kind is a ValueError."""
        with self._lock:
            known = self._targets.get(kind)
            if known is not None and known != handler:
                raise ValueError(f"job kind {kind!r} already has a handler ({known!r})")
            self._targets[kind] = handler

    @property
    def kinds(self) -> list[str]:
        return sorted(self._targets)

    def get(self, kind: str) -> JobHandler:
        """The handler of ``kind``; UnknownJobKind naming the registered kinds when there is none."""
        with self._lock:
            loaded = self._loaded.get(kind)
            if loaded is not None:
                return loaded
            target = self._targets.get(kind)
            if target is None:
                known = ", ".join(self.kinds) or "none"
                raise UnknownJobKind(
                    f"no handler registered for job kind {kind!r} (registered: {known}); the worker's "
                    "start-up registers them (services.resources.register_job_handlers)"
                )
            if isinstance(target, str):
                module, _, name = target.partition(":")
                handler: JobHandler = getattr(importlib.import_module(module), name)()
            else:
                handler = target
            self._loaded[kind] = handler
            return handler


# The handlers of this process: filled at start-up by each domain, read by its workers and by the queue's
# dispatch (which cuts a job into batches of its handler's size). A registry of code, not of data: it holds
# no state of a job or a request.
process_handlers = JobHandlers()


@dataclass(frozen=True)
class JobContext:
    """What handlers share: ``session_factory`` for short write transactions and ``read_factory`` for
    reads; neither is held across slow work (a judge call, an LLM answer, an index build)."""

    session_factory: sessionmaker[Session]
    settings: Settings
    # What the handlers keep for the life of the process (loop, judge gateway, pools, models), owned by
    # whoever runs the worker; None: each batch that needs some makes (and closes) its own.
    resources: WorkerResources | None = None
    # The registry the worker takes handlers from: this process's unless a caller gives its own.
    handlers: JobHandlers = field(default_factory=lambda: process_handlers)

    @cached_property
    def read_factory(self) -> sessionmaker[Session]:
        # Imported here: services.db loads Alembic, and the registry is imported by every entry point.
        from services.db import read_factory

        return read_factory(self.session_factory)
