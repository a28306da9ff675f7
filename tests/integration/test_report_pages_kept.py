"""Report pages kept across a restart (services.reports.page_store): served at once while the data they were
computed from is unchanged, byte for byte the page a computation gives; a write since makes the kept page
unused; a deletion removes every kept page, and a page of data since deleted is never served even if its
file were left."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.main import create_app
from app.settings import Settings
from services.db import make_session_factory, session_scope
from services.reports import render
from services.reports.schemas import ReportFreshness, ReportQuery
from tests.conftest import admin_client
from tests.integration.test_reports import study


class Counted:
    """``render.page`` counted: how many pages were computed."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original = original
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.original(*args)


def _pages(settings: Settings) -> list[Path]:
    return sorted((settings.data_dir / "report-pages").glob("*.json"))


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    counted = Counted(getattr(render.page, "original", render.page))
    monkeypatch.setattr(render, "page", counted)
    return counted


def _restarted(settings: Settings) -> AbstractContextManager[TestClient]:
    """A new app over the same database and data directory: a restart."""
    return admin_client(create_app(settings))


def _clip_ids(page: bytes) -> bytes:
    """``page`` with the figure's clip-path and marker ids (random per drawing) numbered in order."""
    ids: dict[bytes, bytes] = {}
    return re.sub(
        rb'(?<=id=")[a-z][0-9a-f]{10}\b|(?<=#)[a-z][0-9a-f]{10}\b',
        lambda m: ids.setdefault(m[0], b"clip%d" % len(ids)),
        page,
    )


def _direct_page(settings: Settings, engine: Engine, run: int, headers: Any) -> bytes:
    """The page computed directly now, stating the freshness given in ``headers``."""
    freshness = ReportFreshness(
        data_time=datetime.fromisoformat(headers["X-Report-Data-Time"]),
        computed_at=datetime.fromisoformat(headers["X-Report-Computed-At"]),
        stale=False,
    )
    with session_scope(make_session_factory(engine, write=False)) as s:
        rep = render.report(s, settings, [run], ReportQuery())
        extra = render.sections(s, settings, rep, [run])
        rep = rep.model_copy(update={"freshness": freshness})
        return render.page(s, settings, rep, [run], extra)


def test_after_a_restart_the_kept_page_is_served_and_is_the_computed_page(
    client: TestClient, settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = study(client)
    before = client.get(f"/runs/{run}/report.html")
    assert before.status_code == 200 and before.headers["X-Report-Stale"] == "false"
    assert len(_pages(settings)) == 1
    counted = _counted(monkeypatch)
    with _restarted(settings) as again:
        after = again.get(f"/runs/{run}/report.html")
        assert after.status_code == 200, after.text
        assert counted.calls == 0  # served from the kept page, nothing computed
        assert after.content == before.content
        assert after.headers["X-Report-Stale"] == "false"
        assert after.headers["X-Report-Data-Time"] == before.headers["X-Report-Data-Time"]
        assert after.headers["Content-Security-Policy"] == before.headers["Content-Security-Policy"]
        # What a computation of the data as it is now gives, with the same freshness.
        monkeypatch.setattr(render, "page", counted.original)
        direct = _direct_page(settings, engine, run, after.headers)
        a, b = _clip_ids(after.content), _clip_ids(direct)
        i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), 0)
        assert a == b, (a[i - 200 : i + 60], b[i - 200 : i + 60])
        # Another report (other parameters) is not kept: computed.
        monkeypatch.setattr(render, "page", counted)
        assert again.get(f"/runs/{run}/report.html?seed=7").status_code == 200
        assert counted.calls == 1


def test_a_write_after_the_restart_makes_the_kept_page_unused(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = study(client)
    before = client.get(f"/runs/{run}/report.html")
    counted = _counted(monkeypatch)
    with _restarted(settings) as again:
        r = again.post(f"/runs/{run}/ratings", json=[{"question_id": "q0", "rater": "rater1", "score": 5}])
        assert r.status_code == 200, r.text
        after = again.get(f"/runs/{run}/report.html")
        assert after.status_code == 200 and counted.calls == 1
        assert after.content != before.content
        # The page now kept is the new one: the next restart serves it.
        counted3 = _counted(monkeypatch)
        with _restarted(settings) as third:
            assert third.get(f"/runs/{run}/report.html").content == after.content
            assert counted3.calls == 0


@pytest.mark.parametrize("deletion", ["ratings", "run"])
def test_a_deletion_removes_the_kept_pages_and_deleted_data_is_never_served(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, deletion: str
) -> None:
    _, run = study(client)
    before = client.get(f"/runs/{run}/report.html")
    assert before.status_code == 200
    (kept,) = _pages(settings)
    copy = tmp_path / "kept-copy.json"
    shutil.copy(kept, copy)
    path = f"/runs/{run}/ratings?rater=rater2" if deletion == "ratings" else f"/runs/{run}?cascade=true"
    r = client.delete(path)
    assert r.status_code == 200, r.text
    assert _pages(settings) == []
    # Even were the page's file left behind, it is not served: its data is gone.
    shutil.copy(copy, kept)
    counted = _counted(monkeypatch)
    with _restarted(settings) as again:
        after = again.get(f"/runs/{run}/report.html")
        if deletion == "run":
            assert after.status_code == 404
        else:
            assert after.status_code == 200 and counted.calls == 1
            assert after.content != before.content
