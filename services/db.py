"""Engine, sessions and migration state.

SQLite is the embedded default (WAL, foreign keys on, a busy timeout so the worker and the API can share
the file); PostgreSQL is selected by the URL.

Transactions are short and never span slow work (a judge call, a report computation, an await). A
session from a write factory (the default) starts its transaction with ``BEGIN IMMEDIATE`` on SQLite: a
deferred transaction that reads and then writes fails at once with "database is locked" when another
writer committed in between (SQLite does not wait on its busy timeout for a stale read snapshot), while an
immediate one waits its turn.
Read sessions (GET requests, the reads of job handlers) read each statement on a fresh snapshot, as
PostgreSQL's READ COMMITTED does. On PostgreSQL both kinds are the same. ``run_transaction`` retries a
transaction on a deadlock, a serialization failure or a unique-key race with a concurrent writer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import QueuePool

from services.errors import ItemError
from services.nul import NUL, REASON, nul_refusal

log = logging.getLogger("ragmeta")
T = TypeVar("T")

ALEMBIC_DIR = Path(__file__).resolve().parent.parent / "alembic"


class MigrationRequired(RuntimeError):
    """The database is behind the code's migrations (or empty)."""


def make_engine(url: str, wait_s: float = 30.0, connections: int | None = None) -> Engine:
    """The engine of ``url``. ``wait_s``: how long a transaction waits for a pooled connection, and on SQLite
    for the write lock, before failing (the API answers such an overload 503, app.errors). ``connections``:
    at most this many connections (the pool's default otherwise)."""
    sized: dict[str, Any] = {} if connections is None else {"pool_size": connections, "max_overflow": 0}
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # A file has a queue of connections (an in-memory database one connection per thread, no queue).
        in_memory = make_url(url).database in (None, "", ":memory:")
        pooled = {} if in_memory else {"pool_timeout": wait_s, **sized}
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": wait_s}, **pooled)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            # The driver's own implicit BEGIN is turned off so that ours (below) decides the lock mode.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:
            # Write sessions take the write lock up front; read sessions run each statement on its own
            # fresh snapshot (as PostgreSQL's READ COMMITTED does), so a long-lived reader never sees stale
            # data and never blocks a checkpoint.
            if conn.get_execution_options().get("ragmeta_write", False):
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        return _refusing_nul(engine)
    return _refusing_nul(create_engine(url, pool_pre_ping=True, pool_timeout=wait_s, **sized))


def is_in_memory(url: str) -> bool:
    """An in-memory SQLite database: each engine (each connection) has its own."""
    return url.startswith("sqlite") and make_url(url).database in (None, "", ":memory:")


_SUFFIX = re.compile(r"(_+\d+)+$")
ROW = (dict, list, tuple)


def _refusing_nul(engine: Engine) -> Engine:
    """``engine``, refusing any statement whose text parameters hold NUL, on both databases alike (see
    services.nul): the last guard, for text decoded past the checks at input. The field is named by the
    column the parameter binds, as far as the statement says."""

    @event.listens_for(engine, "before_cursor_execute")
    def _no_nul(
        _conn: Connection, _cursor: Any, _sql: str, parameters: Any, context: Any, executemany: bool
    ) -> None:
        # One row (a dict or a sequence), or several; a batch of "insertmanyvalues" is one flat sequence.
        several = isinstance(parameters, list | tuple) and parameters and isinstance(parameters[0], ROW)
        for row in parameters if several else (parameters,):
            pairs = row.items() if isinstance(row, dict) else enumerate(row if isinstance(row, ROW) else ())
            for key, value in pairs:
                if isinstance(value, str) and NUL in value:
                    raise nul_refusal([ItemError(None, _param_name(context, key), REASON)], "the input")

    return engine


def _param_name(context: Any, key: Any) -> str:
    if isinstance(key, int):
        # A batch repeats the one-row statement's parameters, row after row.
        names = getattr(getattr(context, "compiled", None), "positiontup", None) or ()
        key = names[key % len(names)] if names else "(text)"
    return _SUFFIX.sub("", str(key))


def pool_capacity(engine: Engine) -> int:
    """How many connections the engine's pool can lend at once (pool size plus overflow)."""
    pool = engine.pool
    if isinstance(pool, QueuePool):
        return pool.size() + max(pool._max_overflow, 0)
    return 16


def make_session_factory(engine: Engine, write: bool = True) -> sessionmaker[Session]:
    """Sessions on ``engine``. On SQLite, a write session's transaction takes the write lock when it begins
    (``BEGIN IMMEDIATE``), so reading then writing never fails on a stale snapshot; a read session
    (``write=False``) takes no lock and must not write. Either kind must not be held across slow work."""
    bind = engine.execution_options(ragmeta_write=True) if write else engine
    return sessionmaker(bind=bind, expire_on_commit=False)


def read_factory(factory: sessionmaker[Session]) -> sessionmaker[Session]:
    """The read-only counterpart of a session factory (same engine and pool; no SQLite write lock)."""
    bind = factory.kw["bind"].execution_options(ragmeta_write=False)
    return sessionmaker(bind=bind, expire_on_commit=False)


# PostgreSQL SQLSTATEs worth a second attempt: another transaction won a race the next attempt will see.
_RETRY_SQLSTATES = frozenset({"40001", "40P01", "23505"})


def is_transient(exc: BaseException) -> bool:
    """A deadlock, serialization failure, unique-key race or SQLite lock timeout: retrying may succeed."""
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _RETRY_SQLSTATES:
        return True
    text = str(orig)
    if isinstance(exc, IntegrityError):
        return "UNIQUE constraint failed" in text
    return isinstance(exc, OperationalError) and "database is locked" in text


def run_transaction(factory: sessionmaker[Session], fn: Callable[..., T], *args: Any, attempts: int = 4) -> T:
    """Run ``fn(session, *args)`` in one short transaction, committed on success.

    Retried (with a short back-off) when a concurrent writer made it fail transiently; ``fn`` must therefore
    read what it needs inside the transaction. Any other exception rolls back and propagates.
    """
    for attempt in range(1, attempts + 1):
        try:
            with session_scope(factory) as session:
                return fn(session, *args)
        except DBAPIError as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            log.info("transaction retried after a concurrent write (%s)", type(exc.orig).__name__)
            time.sleep(0.01 * 2**attempt)
    raise AssertionError("unreachable")


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def ours(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's ``include_name``: procrastinate's tables (``procrastinate_*``, installed by revision 0005 on
    PostgreSQL) belong to procrastinate's schema, not to the models."""
    return not (type_ == "table" and (name or "").startswith("procrastinate_"))


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    assert head is not None, "alembic has no revisions"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def database_state(engine: Engine) -> tuple[str | None, str | None]:
    """``(revision, None)`` when the database answers (``revision`` None when it has none), else ``(None,
    the error's class name)``: one connection, one statement. Never raises."""
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision(), None
    except Exception as exc:  # a probe answers, whatever the failure
        return None, type(exc).__name__


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def ensure_migrated(engine: Engine, url: str, auto_migrate: bool) -> str:
    """Return the head revision, migrating first when ``auto_migrate``.

    Raises MigrationRequired with the command to run when the database is behind and auto-migration is off.
    """
    head = head_revision()
    current = current_revision(engine)
    if current == head:
        return head
    if auto_migrate:
        upgrade(url)
        return head
    raise MigrationRequired(
        f"database is at revision {current or 'none (empty)'} but this version of ragmeta needs {head}. "
        "Run `make migrate` (or `ragmeta migrate`, or `alembic upgrade head` with RAGMETA_DATABASE_URL set), "
        "or start with RAGMETA_AUTO_MIGRATE=true."
    )
