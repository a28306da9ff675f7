"""Reports under many writers: every form of a report states the time of the data it was computed from; while
a newer report is computed, readers get the last one at once, said to be stale; a reader asking with
Cache-Control: no-cache waits for a current one; an up-to-date report's JSON is what it was, plus
``freshness``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.settings import Settings
from services.db import make_session_factory, session_scope
from services.reports import render
from services.reports.schemas import ReportQuery
from tests.integration.test_reports import study


def test_a_report_states_its_data_time_and_is_otherwise_unchanged(
    client: TestClient, settings: Settings, engine: Engine
) -> None:
    _, run = study(client)
    r = client.get(f"/runs/{run}/report")
    assert r.status_code == 200, r.text
    fresh = r.json()["freshness"]
    assert fresh["stale"] is False and r.headers["X-Report-Stale"] == "false"
    data_time = datetime.fromisoformat(r.headers["X-Report-Data-Time"])
    assert data_time == datetime.fromisoformat(fresh["data_time"]) and data_time.utcoffset() is not None
    assert data_time <= datetime.fromisoformat(r.headers["X-Report-Computed-At"])
    # Byte for byte the report computed directly, with the new field last.
    with session_scope(make_session_factory(engine, write=False)) as session:
        direct = render.report(session, settings, [run], ReportQuery())
    body = direct.model_dump(mode="json", exclude={"freshness"})
    assert r.content == JSONResponse({**body, "freshness": fresh}).body
    assert list(r.json()) == [*body, "freshness"]
    for path in (f"/runs/{run}/report.svg", f"/runs/{run}/report?format=csv", f"/report.html?runs={run}"):
        got = client.get(path)
        assert got.status_code == 200 and got.headers["X-Report-Data-Time"] == r.headers["X-Report-Data-Time"]
    page = client.get(f"/runs/{run}/report.html")
    assert "id='data-time'>Data as of" in page.text and "newer report" not in page.text


class Gate:
    """``render.report`` held until ``open``: a report computation under way for as long as a test needs."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original = original
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        self.entered.set()
        assert self.opened.wait(60), "the gate was never opened"
        return self.original(*args)


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_while_a_report_is_recomputed_readers_get_the_last_one_said_stale(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = study(client)
    path = f"/runs/{run}/report"
    first = client.get(path).json()
    gate = Gate(render.report)
    monkeypatch.setattr(render, "report", gate)
    client.post("/raters", json=[{"name": "rater3"}])
    rating = [{"question_id": "q0", "rater": "rater3", "score": 5}]
    assert client.post(f"/runs/{run}/ratings", json=rating).status_code == 200

    # The first reader after the write computes (and waits: it sees its write) ...
    computing, computed = _in_thread(lambda: client.get(path))
    assert gate.entered.wait(60)
    # ... while the others get the last report at once, said stale, with the time of its data.
    r = client.get(path)
    stale = r.json()
    assert stale["freshness"]["stale"] is True and r.headers["X-Report-Stale"] == "true"
    assert stale["freshness"]["data_time"] == first["freshness"]["data_time"]
    assert {**stale, "freshness": None} == {**first, "freshness": None}
    page = client.get(f"{path}.html")
    assert page.status_code == 200 and "a newer report was being computed" in page.text
    # Another write; a reader who asks for the current report then waits for one begun after they asked,
    # which starts when the one under way ends.
    rating = [{"question_id": "q1", "rater": "rater3", "score": 1}]
    assert client.post(f"/runs/{run}/ratings", json=rating).status_code == 200
    waiting, waited = _in_thread(lambda: client.get(path, headers={"Cache-Control": "no-cache"}))
    waiting.join(0.5)
    assert waiting.is_alive() and gate.calls == 1

    gate.opened.set()
    computing.join(60)
    waiting.join(60)
    current = computed[0].json()
    assert current["freshness"]["stale"] is False
    assert current["freshness"]["data_time"] > first["freshness"]["data_time"]
    assert {**current, "freshness": None} != {**first, "freshness": None}  # the third rater is in it
    asked_fresh = waited[0].json()["freshness"]
    assert asked_fresh["stale"] is False and asked_fresh["data_time"] > current["freshness"]["data_time"]
    assert gate.calls == 2
    # Nothing changed since: from the cache, current.
    again = client.get(path).json()
    assert again["freshness"]["stale"] is False and gate.calls == 2


def test_a_run_deleted_while_its_report_is_recomputed_is_not_served(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stale reports are of data that changed, never of data deleted: once a run is deleted, its report is a
    404 for every reader, even while a computation begun before the deletion is under way."""
    _, run = study(client)
    path = f"/runs/{run}/report"
    assert client.get(path).status_code == 200
    gate = Gate(render.report)
    monkeypatch.setattr(render, "report", gate)
    client.post("/raters", json=[{"name": "rater3"}])
    rating = [{"question_id": "q0", "rater": "rater3", "score": 5}]
    assert client.post(f"/runs/{run}/ratings", json=rating).status_code == 200
    computing, _ = _in_thread(lambda: client.get(path))
    assert gate.entered.wait(60)
    assert client.get(path).json()["freshness"]["stale"] is True  # under way: the last one, said stale
    assert client.delete(f"/runs/{run}", params={"cascade": "true"}).status_code == 200
    for form in (path, f"{path}?format=csv", f"{path}.html", f"{path}.svg"):
        assert client.get(form).status_code == 404, form
    gate.opened.set()
    computing.join(60)
    assert client.get(path).status_code == 404
