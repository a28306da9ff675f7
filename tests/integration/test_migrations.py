"""Migrations upgrade from empty and downgrade cleanly, and the app refuses a database behind them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import MetaData, Table, insert, inspect, make_url, text

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


def _fresh_url(database_url: str, tmp_path: Path) -> str:
    """An empty database of the backend under test (a separate schema-free database, named after the test
    database so that test runs on other databases of the same server do not drop it under each other)."""
    pg = database_url
    if pg.startswith("postgresql"):
        admin = make_engine(pg).execution_options(isolation_level="AUTOCOMMIT")
        name = f"{make_url(pg).database}_migration_test"
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        return pg.rsplit("/", 1)[0] + f"/{name}"
    return f"sqlite:///{tmp_path / 'mig.db'}"


def test_upgrade_from_empty_then_downgrade_to_nothing(database_url: str, tmp_path: Path) -> None:
    url = _fresh_url(database_url, tmp_path)
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


def test_app_refuses_unmigrated_database(database_url: str, tmp_path: Path) -> None:
    url = _fresh_url(database_url, tmp_path)
    app = create_app(Settings(database_url=url, jobs={"embedded_worker": False}))  # type: ignore[arg-type]
    with pytest.raises(MigrationRequired, match="make migrate"), TestClient(app):
        pass


def test_app_migrates_when_told(database_url: str, tmp_path: Path) -> None:
    url = _fresh_url(database_url, tmp_path)
    settings = Settings(database_url=url, auto_migrate=True, jobs={"embedded_worker": False})  # type: ignore[arg-type]
    with TestClient(create_app(settings)) as client:
        health = client.get("/healthz").json()
    assert health["status"] == "ok"
    assert health["database"]["revision"] == head_revision()


def test_preference_versions_are_filled_in_only_where_certain(database_url: str, tmp_path: Path) -> None:
    """0007 records the output versions of side-by-side preferences given before it: where the output never
    changed, or changed before the preference was given; otherwise null (the report leaves it out)."""
    url = _fresh_url(database_url, tmp_path)
    upgrade(url, "0006")
    engine = make_engine(url)
    t = Base.metadata.tables
    early, mid, late = (datetime(2026, 11, 1, h, tzinfo=UTC) for h in (8, 10, 12))
    stamps = {"created_at": early, "updated_at": early}
    with engine.begin() as conn:
        conn.execute(insert(t["dataset"]).values(id=1, name="d", language="fr", chunking={}, **stamps))
        for qid in (1, 2, 3):
            conn.execute(
                insert(t["question"]).values(
                    id=qid,
                    dataset_id=1,
                    external_id=f"q{qid}",
                    question="?",
                    answerable=True,
                    types=[],
                    metadata={},
                    **stamps,
                )
            )
        for rid in (1, 2):
            conn.execute(
                insert(t["run"]).values(
                    id=rid, dataset_id=1, name=f"r{rid}", system={}, metadata={}, **stamps
                )
            )
        # Run 2's answers: q1 never changed; q2 changed (early) before the preference (mid); q3 after (late).
        outputs = [(1, 1, 1, 1, early), (2, 1, 2, 1, early), (3, 1, 3, 1, early)]
        outputs += [(4, 2, 1, 1, early), (5, 2, 2, 2, early), (6, 2, 3, 2, late)]
        for oid, rid, qid, version, updated in outputs:
            conn.execute(
                insert(t["output"]).values(
                    id=oid,
                    run_id=rid,
                    question_id=qid,
                    answer="a",
                    generator={},
                    version=version,
                    created_at=early,
                    updated_at=updated,
                )
            )
        conn.execute(insert(t["app_user"]).values(id=1, name="u", role="rater", active=True, **stamps))
        conn.execute(
            insert(t["rubric"]).values(
                id=1, name="p", min_score=1, max_score=5, levels={}, is_default=False, **stamps
            )
        )
        conn.execute(
            # The table as it is at 0006 (the model has columns added since, with defaults of their own).
            insert(Table("rating_task", MetaData(), autoload_with=conn)).values(
                id=1,
                name="t",
                mode="pairwise",
                run_id=1,
                run_b_id=2,
                rubric_id=1,
                show_reference=False,
                show_contexts=True,
                seed=0,
                **stamps,
            )
        )
        for pos, (qid, pref) in enumerate([(1, 4), (2, 2), (3, 5)], start=1):
            conn.execute(
                insert(t["task_item"]).values(
                    id=pos,
                    task_id=1,
                    user_id=1,
                    position=pos,
                    question_id=qid,
                    output_id=qid,
                    output_b_id=qid + 3,
                    b_on_left=False,
                    status="rated",
                    preference=pref,
                    updated_at=mid,
                )
            )
    upgrade(url, "0007")
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, output_version, output_b_version FROM task_item ORDER BY id")
        ).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(1, 1, 1), (2, 1, 2), (3, 1, None)]


def test_sessions_record_their_key_and_older_ones_end(database_url: str, tmp_path: Path) -> None:
    """0008 ties each browser session to the key it was signed in with. Sessions stored before it cannot say
    which key that was (it may be revoked since), so they end; the ones opened after it go with their key."""
    url = _fresh_url(database_url, tmp_path)
    upgrade(url, "0007")
    engine = make_engine(url)
    now = datetime(2026, 12, 1, 8, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO app_user (id, name, role, active, created_at, updated_at) "
                "VALUES (1, 'u', 'editor', :t, :n, :n)"
            ),
            {"t": True, "n": now},
        )
        conn.execute(
            text("INSERT INTO api_key (id, user_id, prefix, hash, created_at) VALUES (1, 1, 'p', 'h', :n)"),
            {"n": now},
        )
        conn.execute(
            text(
                "INSERT INTO web_session (id, token_hash, user_id, created_at, expires_at) "
                "VALUES (1, 'old', 1, :n, :n)"
            ),
            {"n": now},
        )
    upgrade(url, "0008")
    columns = {c["name"]: c for c in inspect(engine).get_columns("web_session")}
    keys = inspect(engine).get_foreign_keys("web_session")
    with engine.begin() as conn:
        left = conn.execute(text("SELECT count(*) FROM web_session")).scalar_one()
        conn.execute(
            text(
                "INSERT INTO web_session (id, token_hash, user_id, key_id, created_at, expires_at) "
                "VALUES (2, 'new', 1, 1, :n, :n)"
            ),
            {"n": now},
        )
        conn.execute(text("DELETE FROM api_key WHERE id = 1"))
        after_key_deleted = conn.execute(text("SELECT count(*) FROM web_session")).scalar_one()
    assert left == 0
    assert columns["key_id"]["nullable"] is False
    assert any(k["referred_table"] == "api_key" and k["constrained_columns"] == ["key_id"] for k in keys)
    assert after_key_deleted == 0
    downgrade(url, "0007")
    assert "key_id" not in {c["name"] for c in inspect(engine).get_columns("web_session")}
    upgrade(url)
    assert current_revision(engine) == head_revision()
    engine.dispose()
