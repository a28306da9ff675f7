"""SQL for the judge-call cache."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.models import JudgeCall, ScoreMemo, utcnow
from services.repository import Repository


@dataclass(frozen=True)
class CachedCall:
    """One judge answer to store: the request key, what was asked and answered, its cost."""

    key: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any]
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float


class JudgeCallRepository(Repository):
    def get(self, key: str) -> JudgeCall | None:
        return self.session.scalar(select(JudgeCall).where(JudgeCall.key == key))

    def responses(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for part in _chunks(keys):
            rows = self.session.execute(
                select(JudgeCall.key, JudgeCall.response).where(JudgeCall.key.in_(part))
            )
            found.update((key, dict(response)) for key, response in rows)
        return found

    def put_many(self, calls: Sequence[CachedCall]) -> None:
        """Insert the answers, or replace a stored one (a refreshed answer supersedes it), in one statement;
        the caller commits. Later entries of ``calls`` win over earlier ones with the same key."""
        if not calls:
            return
        latest = {c.key: c for c in calls}
        rows = [
            {
                "key": c.key,
                "model": c.model,
                "request": c.request,
                "response": c.response,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "latency_ms": c.latency_ms,
                "created_at": utcnow(),
            }
            for c in latest.values()
        ]
        self.session.execute(
            _upsert(
                self.session,
                JudgeCall.__table__,
                ("response", "prompt_tokens", "completion_tokens", "latency_ms"),
            ),
            rows,
        )


def _upsert(session: Session, table: Any, replaced: Sequence[str]) -> Any:
    """INSERT one row, or replace ``replaced`` of the row with the same key: executed with a list of rows
    it is one executemany of a statement compiled once (SQLAlchemy caches it), where a multi-row VALUES
    statement is compiled anew for every call (its shape depends on the row count)."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    stmt = insert(table)
    return stmt.on_conflict_do_update(
        index_elements=[table.c.key], set_={name: stmt.excluded[name] for name in replaced}
    )


def _chunks(keys: Sequence[str], size: int = 900) -> list[Sequence[str]]:
    return [keys[i : i + size] for i in range(0, len(keys), size)]


class ScoreMemoRepository(Repository):
    """SQL for the score memo (services/metrics/memo.py)."""

    def get_many(self, keys: Sequence[str]) -> dict[str, ScoreMemo]:
        found: dict[str, ScoreMemo] = {}
        for part in _chunks(list(dict.fromkeys(keys))):
            found.update(
                (m.key, m) for m in self.session.scalars(select(ScoreMemo).where(ScoreMemo.key.in_(part)))
            )
        return found

    def put_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert the entries or replace those with the same key (the caller commits)."""
        if not rows:
            return
        latest = list({r["key"]: {"created_at": utcnow(), **r} for r in rows}.values())
        replaced = ("metric", "value", "reason", "details", "answers", "job_id", "created_at")
        self.session.execute(_upsert(self.session, ScoreMemo.__table__, replaced), latest)
