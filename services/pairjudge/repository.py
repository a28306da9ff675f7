"""SQL of the pairwise judge: the answers to judge, and the verdicts stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import or_, select, update

from services.models import Output, PairVerdict, Question, utcnow
from services.repository import Repository


class Answer(NamedTuple):
    output_id: int
    version: int
    answer: str | None


class PairVerdictRepository(Repository):
    def answers(self, run_id: int, question_ids: Sequence[int] | None = None) -> dict[int, Answer]:
        """Question id -> the run's output on it (id, version, answer)."""
        query = select(Output.question_id, Output.id, Output.version, Output.answer).where(
            Output.run_id == run_id
        )
        if question_ids is not None:
            query = query.where(Output.question_id.in_(list(question_ids)))
        return {q: Answer(o, v, a) for q, o, v, a in self.session.execute(query)}

    def questions(self, question_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """Question id -> (external id, text)."""
        rows = self.session.execute(
            select(Question.id, Question.external_id, Question.question).where(
                Question.id.in_(list(question_ids))
            )
        )
        return {i: (e, t) for i, e, t in rows}

    def verdicts(self, run_a: int, run_b: int, config_key: str | None = None) -> list[PairVerdict]:
        query = select(PairVerdict).where(PairVerdict.run_a_id == run_a, PairVerdict.run_b_id == run_b)
        if config_key is not None:
            query = query.where(PairVerdict.config_key == config_key)
        return list(self.session.scalars(query.order_by(PairVerdict.question_id)))

    def pairs_of_run(self, run_id: int) -> list[tuple[int, int, str]]:
        """(run a, run b, config key) of every judged pair of runs that includes ``run_id``."""
        rows = self.session.execute(
            select(PairVerdict.run_a_id, PairVerdict.run_b_id, PairVerdict.config_key)
            .where(or_(PairVerdict.run_a_id == run_id, PairVerdict.run_b_id == run_id))
            .distinct()
            .order_by(PairVerdict.run_a_id, PairVerdict.run_b_id, PairVerdict.config_key)
        )
        return [(a, b, c) for a, b, c in rows]

    def ids_of(self, run_a: int, run_b: int, config_key: str, question_ids: Sequence[int]) -> dict[int, int]:
        """Question id -> id of the stored verdict row."""
        rows = self.session.execute(
            select(PairVerdict.question_id, PairVerdict.id).where(
                PairVerdict.run_a_id == run_a,
                PairVerdict.run_b_id == run_b,
                PairVerdict.config_key == config_key,
                PairVerdict.question_id.in_(list(question_ids)),
            )
        )
        return {q: i for q, i in rows}

    def insert_many(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            self.insert_rows(PairVerdict, [{"created_at": now, "updated_at": now, **r} for r in rows])

    def update_many(self, rows: list[dict[str, Any]]) -> None:
        """Bulk UPDATE by primary key (rows carry ``id``)."""
        if rows:
            now = utcnow()
            self.session.execute(update(PairVerdict), [{"updated_at": now, **r} for r in rows])
