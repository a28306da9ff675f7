from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from app.main import create_app
from app.settings import Settings
from services.db import head_revision, pool_capacity
from tests.api.helpers import assert_envelope
from tests.conftest import admin_client


def test_healthz_reports_database_and_components(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["database"]["reachable"] is True
    assert body["database"]["revision"] == head_revision() == body["database"]["head"]
    assert body["components"]["judge"]["configured"] is False
    assert body["components"]["generator"]["kind"] == "extractive"


def test_unknown_route_uses_envelope(client: TestClient) -> None:
    r = client.get("/nope")
    assert r.status_code == 404
    assert r.json()["error"] == "NotFound"


def test_liveness_and_readiness(client: TestClient, engine: Engine) -> None:
    assert client.get("/livez").json() == {"status": "alive"}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["ready"] is True and set(ready.json()["checks"]) == {"database", "migrations"}
    # The schema behind the code: not ready, and the item says why; alive all the same.
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'older'"))
    try:
        body = assert_envelope(client.get("/readyz"), 503, "NotReady")
        assert [i["field"] for i in body["items"]] == ["migrations"] and "older" in body["items"][0]["reason"]
        assert client.get("/livez").status_code == 200
    finally:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :h"), {"h": head_revision()})
    assert client.get("/readyz").status_code == 200


def test_readiness_needs_the_configured_workers_alive(settings: Settings, engine: Engine) -> None:
    settings.jobs.embedded_worker = True
    settings.jobs.worker_processes = 0  # the worker thread: the same check as processes, cheaper to start
    with admin_client(create_app(settings)) as c:
        body = c.get("/readyz").json()
        assert body["ready"] is True and body["checks"]["workers"]["ok"] is True
        c.app.state.resources.worker.stop()  # type: ignore[attr-defined]
        failed = assert_envelope(c.get("/readyz"), 503, "NotReady")
        assert [i["field"] for i in failed["items"]] == ["workers"]


def test_probes_answer_while_requests_hold_every_pooled_connection(settings: Settings) -> None:
    """The probes have a connection of their own: with every connection of the requests' pool held (a
    saturated API), /healthz and /readyz still find the database, rather than wait for the pool and call it
    unreachable."""
    settings.database_wait_s = 2.0
    with admin_client(create_app(settings)) as c:
        engine = c.app.state.resources.engine  # type: ignore[attr-defined]
        held = [engine.connect() for _ in range(pool_capacity(engine))]
        try:
            health = c.get("/healthz").json()
            assert health["database"]["reachable"] is True and health["status"] == "ok", health
            assert c.get("/readyz").status_code == 200
        finally:
            for conn in held:
                conn.close()


def test_workers_waiting_for_the_report_warm_up_are_starting_not_dead(client: TestClient) -> None:
    """Worker processes start once the report process has warmed up (at most a minute after start-up); until
    then readiness says they are starting, rather than failing on "0 of 0 worker processes alive"."""
    from services.jobs.processes import WorkerProcesses
    from services.workers import worker_runtime

    resources = client.app.state.resources  # type: ignore[attr-defined]
    resources.settings.jobs.embedded_worker = True
    resources.worker_processes = WorkerProcesses(resources.settings, None, 2, worker_runtime)
    r = client.get("/readyz")
    assert r.status_code == 200, r.text
    workers = r.json()["checks"]["workers"]
    assert workers["ok"] is True and workers["detail"].startswith("2 worker processes starting")
