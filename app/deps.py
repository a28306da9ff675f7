"""Request dependencies: settings, a database session per request, and the one rule for database work.

The rule: the event loop never touches the database and never waits on CPU-heavy work.
- An endpoint that uses the database is a plain ``def`` taking ``SessionDep``, on a router whose routes are
  ``CommittingRoute``: FastAPI runs it in the threadpool, and its session's transaction is committed (or
  rolled back on error) in that same thread call, before the endpoint's result goes back to the loop; the
  transaction begins with the endpoint's first statement and ends with it, and spans no ``await``. The
  request waits on the loop for a database slot first (``DbSlots``), so that a transaction holding a
  connection never waits for a thread behind requests waiting for that connection. A pool or SQLite lock
  timeout left after that (a genuine overload) answers 503 with Retry-After (app.errors), nothing written.
  Sessions of unsafe methods (POST, PUT, PATCH, DELETE) are write sessions (SQLite ``BEGIN IMMEDIATE``),
  those of GET requests read sessions; a POST that only reads (retrieval) takes ``ReadSessionDep``.
- An endpoint that must read the raw body (batch uploads) is ``async def``: it awaits the body and nothing
  else, then hands parsing and every database call to a thread with ``run_in_session``, which runs them in one
  short transaction (retried on a deadlock or a concurrent unique-key race).
- Report renders are CPU-heavy: they wait for a slot of the app's report limiter on the loop (costing no
  thread while they wait) and run in a thread with ``run_in_session(..., limiter=...)``, so that small
  requests and ``/healthz`` keep their threads and stay fast under report load.
No transaction is ever held across an ``await``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable
from functools import partial, wraps
from typing import Annotated, Any, TypeVar, get_origin, get_type_hints

import anyio
from fastapi import Depends, Path, Query, Request, params
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session

from app.db_slots import DbSlots
from app.resources import get_resources
from app.settings import Settings
from services.db import run_transaction
from services.types import MAX_ID, MAX_INT

T = TypeVar("T")
log = logging.getLogger("ragmeta.db")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_settings_dep(request: Request) -> Settings:
    return get_resources(request).settings


def _factory(request: Request, read: bool = False) -> Any:
    res = get_resources(request)
    return res.read_session_factory if read or request.method in SAFE_METHODS else res.session_factory


def db_slots(request: Request) -> DbSlots:
    return get_resources(request).db_slots


async def get_db(request: Request) -> AsyncIterator[Session]:
    """The request's session (a write session for POST, PUT, PATCH, DELETE), in a slot of
    ``DbSlots.sessions`` until it is closed. The endpoint's thread call commits it (``CommittingRoute``); a
    transaction still open here was begun after the endpoint returned (a lazy load while the response was
    validated, say): it is finished, and logged as a defect."""
    async for session in _request_session(request, read=False):
        yield session


async def get_read_db(request: Request) -> AsyncIterator[Session]:
    """A read session whatever the method: for POST endpoints that only read (retrieval), which need not
    take SQLite's write lock."""
    async for session in _request_session(request, read=True):
        yield session


async def _request_session(request: Request, read: bool) -> AsyncIterator[Session]:
    slots = db_slots(request).sessions
    borrower = object()
    await slots.acquire_on_behalf_of(borrower)
    try:
        session = _factory(request, read)()
        try:
            yield session
            if session.in_transaction():
                log.error("a transaction outlived the endpoint of %s %s", request.method, request.url.path)
                await anyio.to_thread.run_sync(session.commit)
        except BaseException:
            if session.in_transaction():
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(session.rollback)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.close)
    finally:
        slots.release_on_behalf_of(borrower)


async def run_in_session(
    request: Request,
    fn: Callable[..., T],
    *args: Any,
    limiter: anyio.CapacityLimiter | None = None,
    read: bool = False,
) -> T:
    """Run ``fn(session, *args)`` in a worker thread, in one transaction of its own (see the module rule);
    with ``limiter``, first wait for one of its slots (then for a database slot); with ``read``, on a read
    session whatever the method."""
    work = partial(run_transaction, _factory(request, read), fn, *args)
    if limiter is None:
        async with db_slots(request).sessions:
            return await anyio.to_thread.run_sync(work)
    async with limiter, db_slots(request).sessions:
        return await anyio.to_thread.run_sync(work)


# scope="function": closed before the response is sent (committed before that, by the endpoint's thread call).
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
ReadSessionDep = Annotated[Session, Depends(get_read_db, scope="function")]


def _session_parameter(endpoint: Callable[..., Any]) -> str | None:
    for name, hint in get_type_hints(endpoint, include_extras=True).items():
        metadata = getattr(hint, "__metadata__", ()) if get_origin(hint) is Annotated else ()
        if any(isinstance(m, params.Depends) and m.dependency in (get_db, get_read_db) for m in metadata):
            return name
    return None


def commit_in_thread(endpoint: Callable[..., T]) -> Callable[..., T]:
    """``endpoint``, committing its ``SessionDep`` session when it returns and rolling it back when it
    raises, in the thread FastAPI runs it in. Endpoints without a session are returned as they are; an
    ``async def`` endpoint taking one is refused (its awaits would sit inside the transaction)."""
    if getattr(endpoint, "commits_in_thread", False):
        return endpoint
    name = _session_parameter(endpoint)
    if name is None:
        return endpoint
    if inspect.iscoroutinefunction(endpoint):
        raise TypeError(f"{endpoint.__qualname__} is async and takes SessionDep: use run_in_session")

    @wraps(endpoint)
    def committed(*args: Any, **kwargs: Any) -> T:
        session: Session = kwargs[name]
        try:
            result = endpoint(*args, **kwargs)
        except BaseException:
            session.rollback()
            raise
        session.commit()
        return result

    committed.commits_in_thread = True  # type: ignore[attr-defined]
    return committed


class CommittingRoute(APIRoute):
    """The route class of every router: see ``commit_in_thread``."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, commit_in_thread(endpoint), **kwargs)


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def id_path(what: str) -> Any:
    return Path(ge=1, le=MAX_ID, description=f"the service's id of the {what}")


DatasetId = Annotated[int, id_path("dataset")]
RunId = Annotated[int, id_path("run")]
JobId = Annotated[int, id_path("job")]
TaskId = Annotated[int, id_path("rating task")]
UserId = Annotated[int, id_path("account")]
KeyId = Annotated[int, id_path("key")]
# An item's place in a rater's queue of a rating task.
Position = Annotated[int, Path(ge=1, le=MAX_INT, description="1-based, in the caller's own order")]

# numpy's generators take seeds in [0, 2**32); recorded with every bootstrap.
SeedQuery = Annotated[int, Query(ge=0, le=2**32 - 1, description="bootstrap seed, recorded in the report")]
