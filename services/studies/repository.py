"""All SQL of a study import: a light read of a dataset, then set-based writes (multi-row INSERTs, updates by
primary key), never a flush per row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update

from services.models import Dataset, Document, Passage, Question, Run
from services.repository import Repository


@dataclass(frozen=True)
class StoredDocument:
    id: int
    external_id: str
    title: str | None
    text: str
    meta: dict[str, Any]


@dataclass(frozen=True)
class StoredQuestion:
    id: int
    external_id: str
    question: str
    reference_answer: str | None
    answerable: bool
    types: list[str]
    meta: dict[str, Any]


@dataclass(frozen=True)
class StoredPassage:
    question_id: int
    document_id: int
    position: int
    start: int
    end: int
    location: str
    match_score: float | None


class StudyRepository(Repository):
    def dataset(self, dataset_id: int) -> Dataset | None:
        return self.session.get(Dataset, dataset_id)

    def lock_dataset(self, dataset_id: int) -> Dataset | None:
        """The dataset, row-locked until the transaction ends (PostgreSQL; SQLite serialises writers), so two
        imports into one dataset write one after the other and the second sees the first."""
        return self.session.scalar(
            select(Dataset)
            .where(Dataset.id == dataset_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )

    def dataset_by_name(self, name: str) -> Dataset | None:
        return self.session.scalar(select(Dataset).where(Dataset.name == name))

    def run_by_name(self, dataset_id: int, name: str) -> Run | None:
        return self.session.scalar(select(Run).where(Run.dataset_id == dataset_id, Run.name == name))

    def documents(self, dataset_id: int) -> list[StoredDocument]:
        stmt = (
            select(Document.id, Document.external_id, Document.title, Document.text, Document.meta)
            .where(Document.dataset_id == dataset_id)
            .order_by(Document.id)
        )
        return [StoredDocument(i, e, t, x, m or {}) for i, e, t, x, m in self.session.execute(stmt)]

    def questions(self, dataset_id: int) -> list[StoredQuestion]:
        stmt = (
            select(
                Question.id,
                Question.external_id,
                Question.question,
                Question.reference_answer,
                Question.answerable,
                Question.types,
                Question.meta,
            )
            .where(Question.dataset_id == dataset_id)
            .order_by(Question.id)
        )
        return [
            StoredQuestion(i, e, q, r, bool(a), list(t or []), m or {})
            for i, e, q, r, a, t, m in self.session.execute(stmt)
        ]

    def passages(self, dataset_id: int) -> list[StoredPassage]:
        stmt = (
            select(
                Passage.question_id,
                Passage.document_id,
                Passage.position,
                Passage.start,
                Passage.end,
                Passage.location,
                Passage.match_score,
            )
            .join(Question, Question.id == Passage.question_id)
            .where(Question.dataset_id == dataset_id)
            .order_by(Passage.question_id, Passage.position)
        )
        return [StoredPassage(*row) for row in self.session.execute(stmt)]

    def stamp(self, dataset_id: int) -> tuple[Any, ...]:
        """Changes whenever a document, question or passage of the dataset is added, edited or removed."""
        docs = self.session.execute(
            select(func.count(Document.id), func.max(Document.updated_at)).where(
                Document.dataset_id == dataset_id
            )
        ).one()
        qs = self.session.execute(
            select(func.count(Question.id), func.max(Question.updated_at)).where(
                Question.dataset_id == dataset_id
            )
        ).one()
        ps = self.session.execute(
            select(func.count(Passage.id), func.max(Passage.id))
            .join(Question, Question.id == Passage.question_id)
            .where(Question.dataset_id == dataset_id)
        ).one()

        def norm(v: Any) -> Any:
            return v.isoformat() if isinstance(v, datetime) else v

        return tuple(norm(v) for v in (*docs, *qs, *ps))

    def update_documents(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.session.execute(update(Document), list(rows))

    def update_questions(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.session.execute(update(Question), list(rows))

    def delete_passages(self, question_ids: Iterable[int]) -> None:
        ids = list(question_ids)
        for i in range(0, len(ids), 1000):
            self.session.execute(delete(Passage).where(Passage.question_id.in_(ids[i : i + 1000])))
