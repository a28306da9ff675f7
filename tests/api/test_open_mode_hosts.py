"""The open demo (authentication off, on loopback) answers only requests addressed to a loopback name: a page
whose own name is made to resolve to 127.0.0.1 (DNS rebinding) sends its name as Host, and is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.main import create_app
from app.settings import Settings
from tests.api.helpers import assert_envelope
from tests.conftest import open_mode

REBIND = "rebind.evil.example:8000"


@pytest.fixture
def demo(settings: Settings, engine: Engine) -> Iterator[TestClient]:
    with TestClient(create_app(open_mode(settings)), base_url="http://127.0.0.1:8000") as c:
        yield c


def _names(client: TestClient) -> list[str]:
    return [d["name"] for d in client.get("/datasets").json()]


def test_a_rebound_host_cannot_write_or_read(demo: TestClient) -> None:
    assert demo.post("/datasets", json={"name": "mine"}).status_code == 201
    rebound = {"Host": REBIND, "Origin": f"http://{REBIND}"}
    body = assert_envelope(demo.post("/datasets", json={"name": "evil"}, headers=rebound), 421)
    assert body["error"] == "MisdirectedRequest"
    assert body["items"][0]["field"] == "Host" and REBIND in body["detail"]
    for path in ("/datasets", "/me", "/", "/healthz"):
        assert_envelope(demo.get(path, headers=rebound), 421)
    assert _names(demo) == ["mine"]


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8000", "LocalHost:8000", "127.0.0.1", "127.0.0.1:8000", "[::1]", "[::1]:8000"],
)
def test_loopback_hosts_are_answered(demo: TestClient, host: str) -> None:
    r = demo.post("/datasets", json={"name": host}, headers={"Host": host, "Origin": f"http://{host}"})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize(
    "host", ["127.0.0.1.evil.example", "localhost.evil.example:8000", "0.0.0.0:8000", "testserver"]
)
def test_names_that_only_look_local_are_refused(demo: TestClient, host: str) -> None:
    assert_envelope(demo.get("/datasets", headers={"Host": host}), 421, "MisdirectedRequest")


def test_hosts_allowed_by_the_setting(settings: Settings, engine: Engine) -> None:
    s = open_mode(settings)
    s.auth.open_hosts = ["ragmeta.test", "other.test:9000"]
    with TestClient(create_app(s), base_url="http://127.0.0.1:8000") as c:
        for host in ("ragmeta.test:8000", "ragmeta.test", "other.test:9000"):
            assert c.get("/datasets", headers={"Host": host}).status_code == 200, host
        assert_envelope(c.get("/datasets", headers={"Host": "other.test:9001"}), 421)


def test_with_authentication_on_the_host_is_not_the_guard(client: TestClient) -> None:
    # Credentials are: a browser on a rebound name has none for this service (cookies belong to their host).
    assert client.post("/datasets", json={"name": "x"}, headers={"Host": REBIND}).status_code == 201


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETA_AUTH__OPEN_HOSTS", '["ragmeta.test"]')
    assert Settings().auth.open_hosts == ["ragmeta.test"]
