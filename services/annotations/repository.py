"""The reads of an annotation import: a run's outputs with the trace (and span) ids they came in with."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from services.models import Output, Question
from services.repository import Repository


@dataclass(frozen=True)
class TracedOutput:
    output_id: int
    question_id: str  # the question's external id
    question: str
    trace_id: str | None
    span_ids: tuple[str, ...]


class AnnotationRepository(Repository):
    def outputs(self, run_id: int) -> list[TracedOutput]:
        """Every answered output of the run, with the trace and span ids its generator remembers."""
        stmt = (
            select(Output.id, Output.generator, Question.external_id, Question.question)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id == run_id, Output.answer.is_not(None))
            .order_by(Output.id)
        )
        out = []
        for oid, gen, ext, text in self.session.execute(stmt):
            gen = gen if isinstance(gen, dict) else {}
            trace = gen.get("trace_id")
            spans = gen.get("span_ids")
            out.append(
                TracedOutput(
                    oid,
                    ext,
                    text,
                    str(trace) if trace else None,
                    tuple(str(s) for s in spans) if isinstance(spans, list) else (),
                )
            )
        return out
