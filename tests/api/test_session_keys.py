"""A browser session lives only while the key it was signed in with is valid: revoking that key ends it at its
next request, reads and writes alike, and only the sessions of that key."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from services.models import ApiKey, User, WebSession
from tests.api.helpers import assert_envelope


def _signed_in(client: TestClient, name: str, key: str) -> TestClient:
    """A browser of its own, signed in at the login form with ``key``, sending its session's CSRF token."""
    browser = TestClient(client.app)
    page = browser.get("/login").text
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    r = browser.post("/login", data={"name": name, "key": key, "csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303, r.text
    me = browser.get("/me").json()
    assert me["via"] == "session"
    browser.headers["X-CSRF-Token"] = me["csrf_token"]
    return browser


def _key(client: TestClient, name: str, role: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **({"role": role} if role else {})}
    r = client.post("/keys", json=body)
    assert r.status_code == 201, r.text
    issued: dict[str, Any] = r.json()
    return issued


def _sessions(engine: Engine, key_id: int) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).where(WebSession.key_id == key_id)) or 0)


def _sessions_of(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(WebSession).join(User).where(User.name == name)
        return int(conn.scalar(query) or 0)


def test_revoking_a_key_ends_the_sessions_signed_in_with_it(client: TestClient, engine: Engine) -> None:
    first = _key(client, "edith", "editor")
    second = _key(client, "edith")
    revoked = _signed_in(client, "edith", first["key"])
    kept = _signed_in(client, "edith", second["key"])
    assert revoked.post("/datasets", json={"name": "before"}).status_code == 201

    assert client.delete(f"/keys/{first['id']}").status_code == 200
    bearer = TestClient(client.app, headers={"Authorization": f"Bearer {first['key']}"})
    assert_envelope(bearer.get("/me"), 401, "Unauthorized")
    assert_envelope(revoked.get("/me"), 401, "Unauthorized")
    assert_envelope(revoked.post("/datasets", json={"name": "after"}), 401, "Unauthorized")
    page = revoked.get("/rate", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    assert _sessions(engine, first["id"]) == 0
    # the account's session opened with its other key goes on
    assert kept.get("/me").json()["name"] == "edith"
    assert kept.post("/datasets", json={"name": "kept"}).status_code == 201
    names = {d["name"] for d in client.get("/datasets").json()}
    assert "after" not in names and {"before", "kept"} <= names


def test_a_session_of_a_revoked_key_that_is_still_stored_is_refused(
    client: TestClient, engine: Engine
) -> None:
    """A sign-in racing the revocation (its key read before the revocation committed) stores its session
    after the revocation deleted the key's sessions; the session is refused all the same."""
    issued = _key(client, "alice", "viewer")
    browser = _signed_in(client, "alice", issued["key"])
    with engine.begin() as conn:
        conn.execute(update(ApiKey).where(ApiKey.id == issued["id"]).values(revoked_at=datetime.now(UTC)))
    assert _sessions_of(engine, "alice") == 1
    assert_envelope(browser.get("/me"), 401, "Unauthorized")
    assert_envelope(browser.get("/datasets"), 401, "Unauthorized")


def test_deactivating_the_account_still_ends_its_sessions(client: TestClient) -> None:
    issued = _key(client, "alice", "editor")
    browser = _signed_in(client, "alice", issued["key"])
    user = next(u for u in client.get("/users").json() if u["name"] == "alice")
    assert client.patch(f"/users/{user['id']}", json={"active": False}).status_code == 200
    assert_envelope(browser.get("/me"), 401, "Unauthorized")
    assert_envelope(browser.post("/datasets", json={"name": "x"}), 401, "Unauthorized")


def test_an_admin_cannot_revoke_the_key_of_their_own_session(client: TestClient) -> None:
    """As with a Bearer key: revoking it would end the very session making the request."""
    mine = _key(client, "root2", "admin")
    other = _key(client, "root2")
    browser = _signed_in(client, "root2", mine["key"])
    body = assert_envelope(browser.delete(f"/keys/{mine['id']}"), 409, "Conflict")
    assert body["items"][0]["field"] == "key_id" and "browser session" in body["detail"]
    assert browser.get("/me").status_code == 200
    assert browser.delete(f"/keys/{other['id']}").status_code == 200
    assert browser.get("/me").status_code == 200
