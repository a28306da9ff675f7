"""A request's transaction begins and ends inside its endpoint's thread call: it spans no await."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from app.deps import CommittingRoute, DbSlots, SessionDep, _session_parameter, commit_in_thread
from app.main import create_app
from app.settings import Settings
from services.db import make_session_factory, pool_capacity
from services.models import Rater


def _routes(routes: list[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
        if included is not None:
            yield from _routes(included.routes)


def test_every_endpoint_with_a_session_commits_in_its_own_thread_call(settings: Settings) -> None:
    app = create_app(settings)
    with_session = [r for r in _routes(app.routes) if _session_parameter(inspect.unwrap(r.endpoint))]
    assert len(with_session) > 30
    late = [route.path for route in with_session if not getattr(route.endpoint, "commits_in_thread", False)]
    assert late == []


def test_an_async_endpoint_cannot_take_a_request_session() -> None:
    async def bad(session: SessionDep) -> None:
        pass

    with pytest.raises(TypeError, match="use run_in_session"):
        commit_in_thread(bad)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def mark(self, what: str) -> None:
        self.events.append((what, threading.get_ident()))


@pytest.fixture
def probe(engine: Engine) -> Iterator[tuple[TestClient, Recorder]]:
    """A small app on the test database with the service's session dependency, committing route, and a
    route class that does not commit (plain APIRoute) to show what the guard reports."""
    recorder = Recorder()
    app = FastAPI()
    # What app.deps reads of the app's resources (app.resources.AppResources), nothing more.
    app.state.resources = SimpleNamespace(
        session_factory=make_session_factory(engine),
        read_session_factory=make_session_factory(engine, write=False),
        db_slots=DbSlots(pool_capacity(engine)),
    )
    committing = APIRouter(route_class=CommittingRoute)
    plain = APIRouter()

    def write(session: Session, fail: bool, name: str = "probe") -> dict[str, Any]:
        recorder.mark("endpoint")
        session.add(Rater(name=name))
        session.flush()
        if fail:
            raise RuntimeError("after the write")
        return {"ok": True}

    @committing.post("/committing")
    def committing_write(session: SessionDep, fail: bool = False, name: str = "probe") -> dict[str, Any]:
        return write(session, fail, name)

    @plain.post("/plain")
    def plain_write(session: SessionDep) -> dict[str, Any]:
        return write(session, False)

    app.include_router(committing)
    app.include_router(plain)

    def on(what: str) -> Any:
        return lambda *args: recorder.mark(what)

    factory = app.state.resources.session_factory
    event.listen(factory, "after_commit", on("commit"))
    event.listen(factory, "after_rollback", on("rollback"))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, recorder


def _raters(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT name FROM rater")).scalars())


def test_the_commit_runs_in_the_endpoints_thread_call(
    probe: tuple[TestClient, Recorder], engine: Engine
) -> None:
    client, recorder = probe
    assert client.post("/committing").status_code == 200
    (endpoint, endpoint_thread), (after, after_thread) = recorder.events
    assert (endpoint, after) == ("endpoint", "commit")
    assert after_thread == endpoint_thread
    assert _raters(engine) == ["probe"]


def test_an_endpoint_that_raises_is_rolled_back_in_its_thread_call(
    probe: tuple[TestClient, Recorder], engine: Engine
) -> None:
    client, recorder = probe
    assert client.post("/committing?fail=true").status_code == 500
    assert [what for what, _ in recorder.events] == ["endpoint", "rollback"]
    assert len({thread for _, thread in recorder.events}) == 1
    assert _raters(engine) == []


def test_a_transaction_left_open_after_the_endpoint_is_reported(
    probe: tuple[TestClient, Recorder], engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the committing route, the transaction outlives the endpoint; get_db finishes it and reports
    it (the test suite fails on such a report, see conftest)."""
    client, recorder = probe
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    monkeypatch.setattr(logging.getLogger("ragmeta.db"), "handlers", [Collect()])
    assert client.post("/plain").status_code == 200
    assert seen == ["a transaction outlived the endpoint of POST /plain"]
    assert [what for what, _ in recorder.events] == ["endpoint", "commit"]
    assert _raters(engine) == ["probe"]
    assert client.post("/committing?name=other").status_code == 200
    assert len(seen) == 1
