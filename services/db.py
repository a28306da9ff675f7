"""Engine, sessions and migration state.

SQLite is the embedded default (WAL, foreign keys on, a busy timeout so the worker and the API can share
the file); PostgreSQL is selected by the URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

ALEMBIC_DIR = Path(__file__).resolve().parent.parent / "alembic"


class MigrationRequired(RuntimeError):
    """The database is behind the code's migrations (or empty)."""


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


_shared: dict[str, sessionmaker[Session]] = {}


def shared_session_factory(url: str) -> sessionmaker[Session]:
    """One engine per URL per process, for components built from settings alone (the judge cache)."""
    if url not in _shared:
        _shared[url] = make_session_factory(make_engine(url))
    return _shared[url]


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


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
