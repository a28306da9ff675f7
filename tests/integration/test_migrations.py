"""Migrations upgrade from empty and downgrade cleanly, and the app refuses a database behind them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import inspect, text

from app.main import create_app
from app.settings import Settings
from services.db import (
    MigrationRequired,
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    ours,
    upgrade,
)
from services.models import Base


def _fresh_url(tmp_path: Path) -> str:
    """An empty database of the backend under test (a separate schema-free database)."""
    pg = os.environ.get("RAGMETA_TEST_DATABASE_URL")
    if pg and pg.startswith("postgresql"):
        admin = make_engine(pg).execution_options(isolation_level="AUTOCOMMIT")
        name = "ragmeta_migration_test"
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        return pg.rsplit("/", 1)[0] + f"/{name}"
    return f"sqlite:///{tmp_path / 'mig.db'}"


def test_upgrade_from_empty_then_downgrade_to_nothing(tmp_path: Path) -> None:
    url = _fresh_url(tmp_path)
    engine = make_engine(url)
    assert current_revision(engine) is None
    upgrade(url)
    assert current_revision(engine) == head_revision()
    tables = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    downgrade(url, "base")
    engine.dispose()
    engine = make_engine(url)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(url)  # and back up again
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_models_match_migrations(database_url: str) -> None:
    """The ORM and the migrations describe the same schema (no change without a migration)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(database_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"include_name": ours}), Base.metadata)
    engine.dispose()
    assert diff == []


def test_app_refuses_unmigrated_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    app = create_app(Settings(database_url=url, jobs={"embedded_worker": False}))  # type: ignore[arg-type]
    with pytest.raises(MigrationRequired, match="make migrate"), TestClient(app):
        pass


def test_app_migrates_when_told(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'auto.db'}"
    settings = Settings(database_url=url, auto_migrate=True, jobs={"embedded_worker": False})  # type: ignore[arg-type]
    with TestClient(create_app(settings)) as client:
        health = client.get("/healthz").json()
    assert health["status"] == "ok"
    assert health["database"]["revision"] == head_revision()
