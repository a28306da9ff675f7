"""The reads of a trace import beyond the study import's (services.studies.repository)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from services.models import Document, Question
from services.studies.repository import StudyRepository

_IN_BATCH = 500


class TraceRepository(StudyRepository):
    def document_stamp(self, dataset_id: int) -> tuple[Any, ...]:
        """Changes whenever a document of the dataset is added, edited or removed."""
        count, latest = self.session.execute(
            select(func.count(Document.id), func.max(Document.updated_at)).where(
                Document.dataset_id == dataset_id
            )
        ).one()
        return count, latest.isoformat() if isinstance(latest, datetime) else latest

    def questions_by_text(self, dataset_id: int, texts: Sequence[str]) -> dict[str, list[Question]]:
        found: dict[str, list[Question]] = {}
        for i in range(0, len(texts), _IN_BATCH):
            stmt = select(Question).where(
                Question.dataset_id == dataset_id, Question.question.in_(texts[i : i + _IN_BATCH])
            )
            for q in self.session.scalars(stmt):
                found.setdefault(q.question, []).append(q)
        return found

    def taken_external_ids(self, dataset_id: int, ids: Sequence[str]) -> set[str]:
        taken: set[str] = set()
        for i in range(0, len(ids), _IN_BATCH):
            stmt = select(Question.external_id).where(
                Question.dataset_id == dataset_id, Question.external_id.in_(ids[i : i + _IN_BATCH])
            )
            taken.update(self.session.scalars(stmt))
        return taken

    def question(self, question_id: int) -> Question | None:
        return self.session.get(Question, question_id)
