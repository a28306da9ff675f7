"""All SQL about runs and outputs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from services.models import Dataset, Document, Output, Passage, Question, Rating, RetrievedChunk, Run
from services.repository import Repository


class RunRepository(Repository):
    def get(self, run_id: int) -> Run | None:
        return self.session.get(Run, run_id)

    def by_name(self, dataset_id: int, name: str) -> Run | None:
        return self.session.scalar(select(Run).where(Run.dataset_id == dataset_id, Run.name == name))

    def all(self, dataset_id: int | None = None) -> Sequence[Run]:
        stmt = select(Run).order_by(Run.id)
        if dataset_id is not None:
            stmt = stmt.where(Run.dataset_id == dataset_id)
        return self.session.scalars(stmt).all()

    def counts(self, run_id: int) -> tuple[int, int]:
        outputs = self.session.scalar(select(func.count()).where(Output.run_id == run_id)) or 0
        rated = (
            self.session.scalar(
                select(func.count(func.distinct(Rating.output_id)))
                .join(Output, Output.id == Rating.output_id)
                .where(Output.run_id == run_id)
            )
            or 0
        )
        return outputs, rated

    def outputs(self, run_id: int) -> Sequence[Output]:
        stmt = (
            select(Output)
            .where(Output.run_id == run_id)
            .options(selectinload(Output.chunks))
            .order_by(Output.question_id)
        )
        return self.session.scalars(stmt).all()

    def outputs_by_question(self, run_id: int) -> dict[int, Output]:
        return {o.question_id: o for o in self.outputs(run_id)}

    def output_for(self, run_id: int, question_id: int) -> Output | None:
        stmt = (
            select(Output)
            .where(Output.run_id == run_id, Output.question_id == question_id)
            .options(selectinload(Output.chunks))
        )
        return self.session.scalar(stmt)

    def questions_of_outputs(self, run_id: int) -> dict[int, Question]:
        stmt = select(Question).join(Output, Output.question_id == Question.id).where(Output.run_id == run_id)
        return {q.id: q for q in self.session.scalars(stmt)}

    def replace_chunks(self, output: Output, chunks: list[RetrievedChunk]) -> None:
        # Delete the old rows first: the unit of work would insert the new ranks before deleting the old
        # ones and trip the (output_id, rank) unique constraint.
        output.chunks.clear()
        self.session.flush()
        output.chunks.extend(chunks)

    def outputs_with_context(self, output_ids: Sequence[int]) -> list[tuple[Output, Question, Dataset]]:
        """Outputs with their chunks, question (and passages) and dataset: what a metric sample needs."""
        stmt = (
            select(Output, Question, Dataset)
            .join(Question, Question.id == Output.question_id)
            .join(Run, Run.id == Output.run_id)
            .join(Dataset, Dataset.id == Run.dataset_id)
            .where(Output.id.in_(list(output_ids)))
            .options(
                selectinload(Output.chunks), selectinload(Question.passages).selectinload(Passage.document)
            )
        )
        return [(o, q, d) for o, q, d in self.session.execute(stmt)]

    def document_texts(self, document_ids: Iterable[int]) -> dict[int, str]:
        stmt = select(Document.id, Document.text).where(Document.id.in_(list(document_ids)))
        return {i: t for i, t in self.session.execute(stmt)}

    def outputs_and_questions(self, run_ids: Sequence[int]) -> list[tuple[Output, Question]]:
        stmt = (
            select(Output, Question)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Output.run_id, Question.id)
        )
        return [(o, q) for o, q in self.session.execute(stmt)]
