"""Request dependencies: settings, a database session per request, and the one rule for database work.

The rule: the event loop never touches the database and never waits on CPU-heavy work.
- An endpoint that uses the database is a plain ``def`` taking ``SessionDep``: FastAPI runs it in the
  threadpool, the session's transaction is committed before the response is sent (and rolled back on error),
  and the request waits on the loop for a database slot first (``DbSlots``), so that a transaction holding
  a connection never waits for a thread behind requests waiting for that connection. A pool or SQLite lock
  timeout left after that (a genuine overload) answers 503 with Retry-After (app.errors), nothing written.
  Sessions of unsafe methods (POST, PUT, PATCH, DELETE) are write sessions (SQLite ``BEGIN IMMEDIATE``),
  those of GET requests read sessions.
- An endpoint that must read the raw body (batch uploads) is ``async def``: it awaits the body and nothing
  else, then hands parsing and every database call to a thread with ``run_in_session``, which runs them in one
  short transaction (retried on a deadlock or a concurrent unique-key race).
- Report renders are CPU-heavy: they wait for a slot of the app's report limiter on the loop (costing no
  thread while they wait) and run in a thread with ``run_in_session(..., limiter=...)``, so that small
  requests and ``/healthz`` keep their threads and stay fast under report load.
No transaction is ever held across an ``await``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Path, Query, Request
from sqlalchemy.orm import Session

from app.settings import Settings
from services.db import run_transaction
from services.types import MAX_ID

T = TypeVar("T")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _factory(request: Request) -> Any:
    state = request.app.state
    return state.read_session_factory if request.method in SAFE_METHODS else state.session_factory


class DbSlots:
    """How many requests may use the database at once, waited for on the event loop (costing no thread).

    A request's session (``SessionDep``) keeps its connection, and on SQLite the write lock, from its first
    statement to its commit, across several hops between the loop and the threadpool (dependencies, the
    endpoint, response validation, the commit). Were every thread of the pool taken by requests waiting for a
    connection or for the lock, the request holding them could not get the thread it needs to commit: 80
    submits at once deadlocked that way until the pool's 30 s timeout (bench/burst_submit.py). So requests
    wait for a slot before they touch the database: ``sessions`` slots for request sessions and
    ``run_in_session``, ``lookups`` for credential look-ups (``app.auth``, which run while a request already
    holds a session slot). Together they never exceed the connections the pool can lend, and the threadpool
    is larger than that (``app.main``), so holders never wait for a connection or a thread.
    """

    def __init__(self, pool_capacity: int) -> None:
        self.lookups = anyio.CapacityLimiter(max(1, pool_capacity // 4))
        self.sessions = anyio.CapacityLimiter(max(1, pool_capacity - int(self.lookups.total_tokens)))

    @property
    def total(self) -> int:
        return int(self.sessions.total_tokens + self.lookups.total_tokens)


def db_slots(request: Request) -> DbSlots:
    slots: DbSlots = request.app.state.db_slots
    return slots


async def get_db(request: Request) -> AsyncIterator[Session]:
    """The request's session, in a slot of ``DbSlots.sessions`` from before its first statement until it is
    committed (or rolled back on error) and closed."""
    slots = db_slots(request).sessions
    borrower = object()
    await slots.acquire_on_behalf_of(borrower)
    try:
        session = _factory(request)()
        try:
            yield session
            await anyio.to_thread.run_sync(session.commit)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.rollback)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.close)
    finally:
        slots.release_on_behalf_of(borrower)


async def run_in_session(
    request: Request, fn: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """Run ``fn(session, *args)`` in a worker thread, in one transaction of its own (see the module rule);
    with ``limiter``, first wait for one of its slots (then for a database slot)."""
    work = partial(run_transaction, _factory(request), fn, *args)
    if limiter is None:
        async with db_slots(request).sessions:
            return await anyio.to_thread.run_sync(work)
    async with limiter, db_slots(request).sessions:
        return await anyio.to_thread.run_sync(work)


# scope="function": commit before the response is sent, so a client that has the answer sees the data.
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def id_path(what: str) -> Any:
    return Path(ge=1, le=MAX_ID, description=f"the service's id of the {what}")


DatasetId = Annotated[int, id_path("dataset")]
RunId = Annotated[int, id_path("run")]
JobId = Annotated[int, id_path("job")]
TaskId = Annotated[int, id_path("rating task")]
UserId = Annotated[int, id_path("account")]
KeyId = Annotated[int, id_path("key")]

# numpy's generators take seeds in [0, 2**32); recorded with every bootstrap.
SeedQuery = Annotated[int, Query(ge=0, le=2**32 - 1, description="bootstrap seed, recorded in the report")]
