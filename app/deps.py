"""Request dependencies: settings, a database session per request, and the one rule for database work.

The rule: the event loop never touches the database and never waits on CPU-heavy work.
- An endpoint that uses the database is a plain ``def`` taking ``SessionDep``: FastAPI runs it in the
  threadpool, the session's transaction is committed before the response is sent (and rolled back on error).
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

from collections.abc import Callable, Iterator
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Path, Query, Request
from sqlalchemy.orm import Session

from app.settings import Settings
from services.db import run_transaction, session_scope

T = TypeVar("T")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The largest id the store can hold (a signed 64-bit integer on both databases).
MAX_ID = 2**63 - 1


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _factory(request: Request) -> Any:
    state = request.app.state
    return state.read_session_factory if request.method in SAFE_METHODS else state.session_factory


def get_db(request: Request) -> Iterator[Session]:
    with session_scope(_factory(request)) as session:
        yield session


async def run_in_session(
    request: Request, fn: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """Run ``fn(session, *args)`` in a worker thread, in one transaction of its own (see the module rule)."""
    work = partial(run_transaction, _factory(request), fn, *args)
    return await anyio.to_thread.run_sync(work, limiter=limiter)


# scope="function": commit before the response is sent, so a client that has the answer sees the data.
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def id_path(what: str) -> Any:
    return Path(ge=1, le=MAX_ID, description=f"the service's id of the {what}")


DatasetId = Annotated[int, id_path("dataset")]
RunId = Annotated[int, id_path("run")]
JobId = Annotated[int, id_path("job")]

# numpy's generators take seeds in [0, 2**32); recorded with every bootstrap.
SeedQuery = Annotated[int, Query(ge=0, le=2**32 - 1, description="bootstrap seed, recorded in the report")]
