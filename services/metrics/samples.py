"""Building metric samples from stored outputs (one query per batch, top k chunks by rank)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from services.metrics.base import RetrievedSpan, Sample, Span
from services.models import Dataset, Document, Output, Passage, Question, Run


def build_samples(session: Session, output_ids: Sequence[int], k: int) -> dict[int, Sample]:
    stmt = (
        select(Output, Question, Dataset)
        .join(Question, Question.id == Output.question_id)
        .join(Run, Run.id == Output.run_id)
        .join(Dataset, Dataset.id == Run.dataset_id)
        .where(Output.id.in_(list(output_ids)))
        .options(selectinload(Output.chunks), selectinload(Question.passages).selectinload(Passage.document))
    )
    rows = [(o, q, d) for o, q, d in session.execute(stmt)]
    doc_ids = {c.document_id for o, _, _ in rows for c in o.chunks if c.document_id is not None}
    doc_ids |= {p.document_id for _, q, _ in rows for p in q.passages}
    texts = {d.id: d.text for d in session.scalars(select(Document).where(Document.id.in_(doc_ids)))}
    samples = {}
    for output, question, dataset in rows:
        top = [c for c in sorted(output.chunks, key=lambda c: c.rank) if c.rank <= k]
        samples[output.id] = Sample(
            output_id=output.id,
            question=question.question,
            answer=output.answer,
            contexts=tuple(c.text for c in top),
            reference_answer=question.reference_answer,
            answerable=question.answerable,
            language=dataset.language,
            passages=tuple(Span(p.document_id, p.start, p.end) for p in question.passages),
            retrieved=tuple(RetrievedSpan(c.document_id, c.start, c.end, c.location) for c in top),
            documents=texts,
            k=k,
        )
    return samples
