"""SQL for the RAG system: corpus version, index state."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from services.models import Document, IndexState
from services.repository import Repository


class IndexRepository(Repository):
    def corpus_version(self, dataset_id: int) -> tuple[int, str]:
        """(number of documents, latest change): changes whenever a document is added or edited."""
        n, latest = self.session.execute(
            select(func.count(Document.id), func.max(Document.updated_at)).where(
                Document.dataset_id == dataset_id
            )
        ).one()
        stamp = latest.isoformat() if isinstance(latest, datetime) else str(latest)
        return int(n or 0), stamp

    def states(self, dataset_id: int) -> dict[str, IndexState]:
        stmt = select(IndexState).where(IndexState.dataset_id == dataset_id)
        return {s.kind: s for s in self.session.scalars(stmt)}

    def upsert(
        self, dataset_id: int, kind: str, fingerprint: str, path: str, details: dict[str, object]
    ) -> None:
        state = self.states(dataset_id).get(kind)
        if state is None:
            state = IndexState(dataset_id=dataset_id, kind=kind)
            self.session.add(state)
        state.fingerprint, state.path, state.details = fingerprint, path, dict(details)

    def documents(self, dataset_id: int) -> list[Document]:
        stmt = select(Document).where(Document.dataset_id == dataset_id).order_by(Document.id)
        return list(self.session.scalars(stmt))
