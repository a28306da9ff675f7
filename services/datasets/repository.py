"""All SQL about datasets, documents and questions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import load_only, selectinload

from services.models import Dataset, Document, Passage, Question
from services.repository import Repository


class DatasetRepository(Repository):
    def get(self, dataset_id: int) -> Dataset | None:
        return self.session.get(Dataset, dataset_id)

    def by_name(self, name: str) -> Dataset | None:
        return self.session.scalar(select(Dataset).where(Dataset.name == name))

    def list(self, after: int | None = None, limit: int | None = None) -> Sequence[Dataset]:
        stmt = select(Dataset).order_by(Dataset.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Dataset.id > after)
        return self.session.scalars(stmt).all()

    def counts(self, dataset_id: int) -> tuple[int, int, int]:
        docs = self.session.scalar(select(func.count()).where(Document.dataset_id == dataset_id)) or 0
        qs = self.session.scalar(select(func.count()).where(Question.dataset_id == dataset_id)) or 0
        unans = (
            self.session.scalar(
                select(func.count()).where(Question.dataset_id == dataset_id, Question.answerable.is_(False))
            )
            or 0
        )
        return docs, qs, unans

    def documents_by_external_id(
        self, dataset_id: int, ids: Iterable[str] | None = None
    ) -> dict[str, Document]:
        stmt = select(Document).where(Document.dataset_id == dataset_id)
        if ids is not None:
            stmt = stmt.where(Document.external_id.in_(list(ids)))
        return {d.external_id: d for d in self.session.scalars(stmt)}

    def documents(
        self, dataset_id: int, after: int | None = None, limit: int | None = None
    ) -> Sequence[Document]:
        stmt = select(Document).where(Document.dataset_id == dataset_id).order_by(Document.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Document.id > after)
        return self.session.scalars(stmt).all()

    def external_ids(self, model: type[Question] | type[Document], ids: Iterable[int]) -> dict[int, str]:
        """Service id -> external id of these questions or documents (one page's worth)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        stmt = select(model.id, model.external_id).where(model.id.in_(wanted))
        return {i: e for i, e in self.session.execute(stmt)}

    def questions_by_external_id(
        self, dataset_id: int, ids: Iterable[str] | None = None
    ) -> dict[str, Question]:
        stmt = (
            select(Question)
            .where(Question.dataset_id == dataset_id)
            .options(selectinload(Question.passages).selectinload(Passage.document))
        )
        if ids is not None:
            stmt = stmt.where(Question.external_id.in_(list(ids)))
        return {q.external_id: q for q in self.session.scalars(stmt)}

    def questions(
        self, dataset_id: int, with_passages: bool = True, after: int | None = None, limit: int | None = None
    ) -> Sequence[Question]:
        """The dataset's questions in id order (from after the id ``after``, at most ``limit`` of them);
        ``with_passages`` loads their passages and documents too."""
        stmt = select(Question).where(Question.dataset_id == dataset_id).order_by(Question.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Question.id > after)
        if with_passages:
            stmt = stmt.options(selectinload(Question.passages).selectinload(Passage.document))
        return self.session.scalars(stmt).all()

    def questions_to_match(self, dataset_id: int) -> Sequence[Question]:
        """The dataset's questions with only what an import matches rows on loaded (id, external id, text):
        the other columns (JSON among them) are decoded only if read."""
        stmt = (
            select(Question)
            .where(Question.dataset_id == dataset_id)
            .options(load_only(Question.id, Question.external_id, Question.question))
            .order_by(Question.id)
        )
        return self.session.scalars(stmt).all()

    def passages_of_documents(self, document_ids: Iterable[int]) -> Sequence[Passage]:
        stmt = (
            select(Passage)
            .where(Passage.document_id.in_(list(document_ids)))
            .options(selectinload(Passage.question))
        )
        return self.session.scalars(stmt).all()
