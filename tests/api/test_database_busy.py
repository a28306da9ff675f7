"""An overloaded database answers 503 with Retry-After and says why, never 500: a connection pool timeout,
SQLite's "database is locked", PostgreSQL's too-many-connections or lock-not-available. Any other database
error stays a 500, and a unique-key race stays a 409."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.main import create_app
from app.settings import Settings


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"pg error {sqlstate}")
        self.sqlstate = sqlstate


RAISED: dict[str, BaseException] = {
    "pool": PoolTimeout("QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00"),
    "locked": OperationalError("INSERT INTO rating ...", {}, sqlite3.OperationalError("database is locked")),
    "pg_connections": OperationalError("SELECT 1", {}, _PgError("53300")),
    "pg_lock": OperationalError("SELECT 1 FOR UPDATE NOWAIT", {}, _PgError("55P03")),
    "other": OperationalError("SELECT 1", {}, sqlite3.OperationalError("no such table: nowhere")),
    "unique": IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed: rater.name")),
}


def _raiser(exc: BaseException) -> Callable[[], None]:
    def endpoint() -> None:
        raise exc

    return endpoint


@pytest.fixture
def raising(settings: Settings) -> Iterator[TestClient]:
    settings.auth.enabled = False
    app = create_app(settings)
    for name, exc in RAISED.items():
        app.add_api_route(f"/raise/{name}", _raiser(exc), methods=["PUT"])
    # Open mode answers loopback Host names only (DNS rebinding): the client names 127.0.0.1.
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("pool", "connection pool is exhausted"),
        ("locked", "database is locked"),
        ("pg_connections", "SQLSTATE 53300"),
        ("pg_lock", "SQLSTATE 55P03"),
    ],
)
def test_an_overloaded_database_answers_503_with_retry_after(
    raising: TestClient, name: str, cause: str
) -> None:
    r = raising.put(f"/raise/{name}")
    assert r.status_code == 503, r.text
    assert int(r.headers["Retry-After"]) > 0
    body = r.json()
    assert body["error"] == "DatabaseBusy"
    assert cause in body["detail"] and "nothing was written" in body["detail"]


def test_other_database_errors_stay_500_and_unique_races_409(raising: TestClient) -> None:
    r = raising.put("/raise/other")
    assert r.status_code == 500 and "Retry-After" not in r.headers
    assert r.json()["error"] == "InternalError"
    assert raising.put("/raise/unique").status_code == 409
