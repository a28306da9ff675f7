"""Shared fixtures: a migrated database (SQLite file, or PostgreSQL when RAGMETA_TEST_DATABASE_URL is set),
emptied after every test, and the app served to a TestClient with its lifespan (migration check) running."""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import Pool

from app.main import create_app
from app.settings import Settings
from services.accounts import service as accounts
from services.accounts.schemas import KeyCreate, Role
from services.db import downgrade, make_engine, make_session_factory, session_scope, upgrade
from services.models import Base
from services.offline import apply_offline_env
from tests.live import Served

apply_offline_env()
FIXTURES = Path(__file__).parent / "fixtures"

# deepeval, opik and langsmith ship pytest plugins, so pytest rewrites the asserts of their modules as
# they are imported, parsing each with ``ast.parse``. The scoring loop imports them in its own thread while
# other threads parse too, and CPython 3.11's AST constructor is not thread-safe (python/cpython#106905: "AST
# constructor recursion depth mismatch" raised in whichever thread loses). Their asserts are not ours to
# rewrite: they are imported as they are, like outside the tests.
_LIBRARIES_NOT_REWRITTEN = {"deepeval", "opik", "_opik", "langsmith"}


def pytest_configure(config: pytest.Config) -> None:
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked -= _LIBRARIES_NOT_REWRITTEN


# A test touches the database exactly when it asks for the test database (``database_url``, which ``engine``,
# ``settings``, ``client`` and ``live_server`` depend on): it is marked ``database``, so that a second run
# against another database (`-m database`) runs every test that can tell the two apart and no other.
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "database_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.database)


# The marker is checked, not trusted: a test without it that connects to any database in this process fails,
# so a test cannot drop out of the PostgreSQL run by reaching a store some other way.
_unmarked_connections: list[str] = []
_current_unmarked: list[str] = []


@event.listens_for(Pool, "connect")
def _record_connection(dbapi_connection: object, record: object) -> None:
    if _current_unmarked:
        _unmarked_connections.append(f"{_current_unmarked[-1]}: {type(dbapi_connection).__module__}")


@pytest.fixture(autouse=True)
def _database_tests_are_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("database") is not None:
        yield
        return
    start = len(_unmarked_connections)
    _current_unmarked.append(request.node.nodeid)
    try:
        yield
    finally:
        _current_unmarked.pop()
    opened = _unmarked_connections[start:]
    assert not opened, (
        f"a database connection was opened by a test that does not use the database_url fixture "
        f"(it would not run on PostgreSQL): {opened[:3]}"
    )


# Network guard: every test fails if anything in this process tries to reach a host other than loopback
# (telemetry, model hubs, cost maps...). Audit hooks cannot be removed, so one hook records for the session.
_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "", None}
_outbound: list[str] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        address = args[1]
        host = address[0] if isinstance(address, tuple) else None
        if isinstance(address, str | bytes):  # a Unix socket (PostgreSQL may use one)
            return
        if host not in _LOOPBACK and not str(host).startswith("127."):
            _outbound.append(f"connect {address!r}")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if isinstance(host, bytes):
            host = host.decode()
        if host not in _LOOPBACK and not str(host).startswith("127."):
            _outbound.append(f"getaddrinfo {host!r}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _no_outbound_network() -> Iterator[None]:
    start = len(_outbound)
    yield
    attempts = _outbound[start:]
    assert not attempts, f"non-loopback network access attempted: {attempts[:5]}"


class _LateTransactions(logging.Handler):
    """Collects app.deps' report of a request transaction that outlived its endpoint's thread call."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


_late = _LateTransactions()
logging.getLogger("ragmeta.db").addHandler(_late)


@pytest.fixture(autouse=True)
def _no_transaction_outlives_its_endpoint() -> Iterator[None]:
    start = len(_late.seen)
    yield
    late = _late.seen[start:]
    assert not late, f"request transactions held past their endpoint: {late[:5]}"


QUEUE_TABLES = (
    "procrastinate_events",
    "procrastinate_periodic_defers",
    "procrastinate_jobs",
    "procrastinate_workers",
)


def _revision(name: str) -> ModuleType:
    """An Alembic revision file as a module (its SQL is reused to reset the test database)."""
    path = Path(__file__).resolve().parents[1] / "alembic" / "versions" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"revision_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _database_of_this_worker(url: str) -> str:
    """Under pytest-xdist each worker process gets a PostgreSQL database of its own (``<name>_gw0``, ...),
    created beside the given one, since every test empties the tables it used."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    base = make_url(url)
    name = f"{base.database}_{worker}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
            if exists is None:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("RAGMETA_TEST_DATABASE_URL")
    if not url:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    else:
        url = _database_of_this_worker(url)
    # Start from nothing whatever the previous run left behind, then apply every migration.
    engine = make_engine(url)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
        if conn.dialect.name == "postgresql":
            conn.connection.driver_connection.execute(_revision("0005_procrastinate_queue").DROP)  # type: ignore[union-attr]
    engine.dispose()
    upgrade(url)
    yield url


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url)
    yield eng
    eng.dispose()


@pytest.fixture(autouse=True)
def _clean_tables(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "engine" not in request.fixturenames:
        return
    eng: Engine = request.getfixturevalue("engine")
    with eng.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            conn.execute(table.delete())
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"TRUNCATE {', '.join(QUEUE_TABLES)}")


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    # Read-only (no SQLite write lock): a test may hold it open while the app writes.
    s = make_session_factory(engine, write=False)()
    yield s
    s.close()


# Authentication is on in tests as in a real deployment; Argon2 runs at its cheapest cost so that tests that
# issue many keys stay fast (the cost is a setting; the code path is the same).
FAST_HASH = {"hash_time_cost": 1, "hash_memory_kib": 1024, "hash_parallelism": 1}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        max_upload_bytes=256 * 1024,
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        # Reports in the API's threads (a process pool per test app would cost seconds each); the process
        # path has its own tests.
        report_processes=0,
        auth={"enabled": True, **FAST_HASH},  # type: ignore[arg-type]
    )


def open_mode(settings: Settings) -> Settings:
    """The settings of the open demo mode, for servers on loopback whose clients (other processes, a browser,
    plain HTTP clients) send no credential; authentication itself is tested in tests/api/test_auth.py."""
    s = settings.model_copy(deep=True)
    s.auth.enabled = False
    return s


def issue_key(app: FastAPI, name: str, role: Role | str = Role.admin) -> str:
    """A new API key for the account (created with ``role`` if missing), written straight to the store."""
    with session_scope(app.state.resources.session_factory) as s:
        data = KeyCreate(name=name, role=Role(role))
        return accounts.issue_key(s, app.state.resources.auth.hasher, data).key


@contextmanager
def admin_client(app: FastAPI) -> Iterator[TestClient]:
    """A test client that sends an admin's API key with every request."""
    with TestClient(app) as c:
        c.headers["Authorization"] = f"Bearer {issue_key(app, 'admin')}"
        yield c


@pytest.fixture
def client(settings: Settings, engine: Engine) -> Iterator[TestClient]:
    with admin_client(create_app(settings)) as c:
        yield c


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Live:
    """A served app: its base URL and the headers of an admin's API key (authentication is on)."""

    url: str
    headers: dict[str, str]


@pytest.fixture
def live_server(settings: Settings, engine: Engine) -> Iterator[Live]:
    """The app served by uvicorn on a loopback port in a background thread (real concurrency, real
    threadpool and event loop), with authentication on; yields its URL and an admin's credential."""
    app = create_app(settings)
    headers = {"Authorization": f"Bearer {issue_key(app, 'live-admin')}"}
    served = Served(app).start()
    try:
        yield Live(served.url, headers)
    finally:
        served.stop()


__all__ = ["FIXTURES", "Live", "admin_client", "downgrade", "free_port", "issue_key", "open_mode"]
