from __future__ import annotations

from fastapi.testclient import TestClient

from services.db import head_revision


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
