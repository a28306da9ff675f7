"""Building metric samples from stored outputs (one query per batch, top k chunks by rank)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from services.metrics.base import RetrievedSpan, Sample, Span
from services.runs.repository import RunRepository


def build_samples(session: Session, output_ids: Sequence[int], k: int) -> dict[int, Sample]:
    repo = RunRepository(session)
    rows = repo.outputs_with_context(output_ids)
    doc_ids = {c.document_id for o, _, _ in rows for c in o.chunks if c.document_id is not None}
    doc_ids |= {p.document_id for _, q, _ in rows for p in q.passages}
    texts = repo.document_texts(doc_ids)
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
