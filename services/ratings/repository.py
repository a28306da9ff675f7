"""All SQL about raters, rubrics and ratings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import func, select, tuple_, update
from sqlalchemy.orm import aliased

from services.models import Output, Preference, Question, Rater, Rating, Rubric, utcnow
from services.repository import Repository
from services.runs.repository import MAX_IN


class RatingRepository(Repository):
    def raters(self) -> dict[str, Rater]:
        return {r.name: r for r in self.session.scalars(select(Rater).order_by(Rater.id))}

    def rubrics(self) -> dict[str, Rubric]:
        return {r.name: r for r in self.session.scalars(select(Rubric).order_by(Rubric.id))}

    def default_rubric(self) -> Rubric | None:
        return self.session.scalar(select(Rubric).where(Rubric.is_default.is_(True)))

    def ratings_of_runs(
        self,
        run_ids: Sequence[int],
        *,
        rater: str | None = None,
        after: tuple[int, int] | None = None,
        limit: int | None = None,
    ) -> Sequence[tuple[Rating, Output, Rater, Rubric]]:
        """In (output id, rater id) order, one rating per pair; after the pair ``after``, at most ``limit``;
        with ``rater``, only that rater's."""
        stmt = (
            select(Rating, Output, Rater, Rubric)
            .join(Output, Output.id == Rating.output_id)
            .join(Rater, Rater.id == Rating.rater_id)
            .join(Rubric, Rubric.id == Rating.rubric_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Output.id, Rater.id)
            .limit(limit)
        )
        if rater is not None:
            stmt = stmt.where(Rater.name == rater)
        if after is not None:
            stmt = stmt.where(tuple_(Output.id, Rater.id) > tuple_(*after))
        return [tuple(row) for row in self.session.execute(stmt)]  # type: ignore[misc]

    def questions_of_run(self, dataset_id: int, run_id: int) -> list[tuple[str, str, int | None]]:
        """(external id, text, the run's output id or None) of every question of the dataset, those with an
        output first in the order the outputs were imported."""
        on = (Output.question_id == Question.id) & (Output.run_id == run_id)
        stmt = (
            select(Question.external_id, Question.question, Output.id)
            .join(Output, on, isouter=True)
            .where(Question.dataset_id == dataset_id)
            .order_by(Output.id.is_(None), Output.id, Question.id)
        )
        return [(e, q, o) for e, q, o in self.session.execute(stmt)]

    def rubric_names_of_run(self, run_id: int) -> set[str]:
        stmt = (
            select(Rubric.name)
            .distinct()
            .join(Rating, Rating.rubric_id == Rubric.id)
            .join(Output, Output.id == Rating.output_id)
            .where(Output.run_id == run_id)
        )
        return set(self.session.scalars(stmt))

    def existing(
        self, run_id: int, output_ids: Iterable[int], rater_ids: Iterable[int]
    ) -> dict[tuple[int, int], tuple[int, int, str | None, int]]:
        """(output id, rater id) -> (rating id, score, comment, rubric id), for these outputs and raters."""
        outputs, raters = list(output_ids), list(rater_ids)
        stmt = select(
            Rating.output_id, Rating.rater_id, Rating.id, Rating.score, Rating.comment, Rating.rubric_id
        ).where(Rating.rater_id.in_(raters))
        if len(outputs) <= MAX_IN:
            stmt = stmt.where(Rating.output_id.in_(outputs))
        else:
            stmt = stmt.join(Output, Output.id == Rating.output_id).where(Output.run_id == run_id)
        return {(o, r): (i, s, c, b) for o, r, i, s, c, b in self.session.execute(stmt)}

    def insert_many(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            self.insert_rows(Rating, [{"created_at": now, "updated_at": now, **r} for r in rows])

    def update_many(self, rows: list[dict[str, Any]]) -> None:
        """Rows with their ``id``: a bulk UPDATE by primary key."""
        if rows:
            now = utcnow()
            self.session.execute(update(Rating), [{"updated_at": now, **r} for r in rows])

    def scores_of_runs(self, run_ids: Sequence[int]) -> list[tuple[int, str, int, int]]:
        """(output id, rater name, score, rubric id) of every rating of these runs, as plain tuples."""
        stmt = (
            select(Rating.output_id, Rater.name, Rating.score, Rating.rubric_id)
            .join(Output, Output.id == Rating.output_id)
            .join(Rater, Rater.id == Rating.rater_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Rating.output_id, Rater.id)
        )
        return [tuple(r) for r in self.session.execute(stmt)]  # type: ignore[misc]


class PreferenceRepository(Repository):
    """Preferences imported from files, stored for (run_a_id < run_b_id)."""

    def rubric_names(self, run_a: int, run_b: int) -> set[str]:
        stmt = (
            select(Rubric.name)
            .distinct()
            .join(Preference, Preference.rubric_id == Rubric.id)
            .where(Preference.run_a_id == run_a, Preference.run_b_id == run_b)
        )
        return set(self.session.scalars(stmt))

    def existing(
        self, run_a: int, run_b: int, rater_ids: Iterable[int]
    ) -> dict[tuple[int, int], tuple[int, int, str | None, int, int, int]]:
        """(question id, rater id) -> (id, score, comment, rubric id, output A version, output B version)."""
        stmt = select(
            Preference.question_id,
            Preference.rater_id,
            Preference.id,
            Preference.score,
            Preference.comment,
            Preference.rubric_id,
            Preference.output_a_version,
            Preference.output_b_version,
        ).where(
            Preference.run_a_id == run_a,
            Preference.run_b_id == run_b,
            Preference.rater_id.in_(list(rater_ids)),
        )
        return {(q, r): tuple(rest) for q, r, *rest in self.session.execute(stmt)}  # type: ignore[misc]

    def insert_many(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            self.insert_rows(Preference, [{"created_at": now, "updated_at": now, **r} for r in rows])

    def update_many(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            self.session.execute(update(Preference), [{"updated_at": now, **r} for r in rows])

    def of_pair(
        self, run_a: int, run_b: int, *, after: tuple[str, str] | None = None, limit: int | None = None
    ) -> list[tuple[Any, ...]]:
        """(question external id, rater name, score, rubric name, min, max, comment, output A version, output
        B version, current A version, current B version, created_at, updated_at) of the pair's preferences,
        in (question external id, rater name) order: after the pair ``after``, at most ``limit``."""
        out_a, out_b = aliased(Output), aliased(Output)
        stmt = (
            select(
                Question.external_id,
                Rater.name,
                Preference.score,
                Rubric.name,
                Rubric.min_score,
                Rubric.max_score,
                Preference.comment,
                Preference.output_a_version,
                Preference.output_b_version,
                out_a.version,
                out_b.version,
                Preference.created_at,
                Preference.updated_at,
            )
            .join(Question, Question.id == Preference.question_id)
            .join(Rater, Rater.id == Preference.rater_id)
            .join(Rubric, Rubric.id == Preference.rubric_id)
            .join(out_a, out_a.id == Preference.output_a_id)
            .join(out_b, out_b.id == Preference.output_b_id)
            .where(Preference.run_a_id == run_a, Preference.run_b_id == run_b)
            .order_by(Question.external_id, Rater.name)
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(tuple_(Question.external_id, Rater.name) > tuple_(*after))
        return [tuple(r) for r in self.session.execute(stmt)]

    def version(self, run_ids: Sequence[int]) -> tuple[str, ...]:
        """Changes with any insert, update or delete of the preferences between two of these runs."""
        ids = list(run_ids)
        stmt = select(func.count(), func.max(Preference.id), func.max(Preference.updated_at)).where(
            Preference.run_a_id.in_(ids), Preference.run_b_id.in_(ids)
        )
        return tuple(str(v) for v in self.session.execute(stmt).one())
