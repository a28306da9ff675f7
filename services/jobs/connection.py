"""Which job machinery a database gets, and the libpq address of a PostgreSQL one.

Kept apart from the queue so that what only needs to know "is this PostgreSQL, and how do I reach it" (the
judge's shared bound, the queue itself) imports nothing of the worker or the queue.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url


def uses_queue(database_url: str) -> bool:
    """Whether jobs of this database go through procrastinate (PostgreSQL) or the lease loop (SQLite)."""
    return make_url(database_url).get_backend_name() == "postgresql"


def conninfo(database_url: str) -> str:
    """The libpq URI of a SQLAlchemy ``postgresql+psycopg://`` URL."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
