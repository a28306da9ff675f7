"""A session per test inside a transaction that is rolled back afterwards, on the migrated test database.

Service code flushes, and may commit: the session joins the outer transaction through savepoints
(``join_transaction_mode="create_savepoint"``), so a commit releases a savepoint and the rollback at the
end still undoes everything. The connection is a write connection (``ragmeta_write``): on SQLite that is
what makes it open a real transaction (``BEGIN IMMEDIATE``; the driver's own implicit BEGIN is off), without
which the savepoints would commit on release.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session


@pytest.fixture
def db(engine: Engine) -> Iterator[Session]:
    conn = engine.execution_options(ragmeta_write=True).connect()
    outer = conn.begin()
    session = Session(bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        conn.close()
