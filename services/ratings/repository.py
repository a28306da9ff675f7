"""All SQL about raters, rubrics and ratings."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from services.models import Output, Rater, Rating, Rubric
from services.repository import Repository


class RatingRepository(Repository):
    def raters(self) -> dict[str, Rater]:
        return {r.name: r for r in self.session.scalars(select(Rater).order_by(Rater.id))}

    def rubrics(self) -> dict[str, Rubric]:
        return {r.name: r for r in self.session.scalars(select(Rubric).order_by(Rubric.id))}

    def default_rubric(self) -> Rubric | None:
        return self.session.scalar(select(Rubric).where(Rubric.is_default.is_(True)))

    def ratings_of_runs(self, run_ids: Sequence[int]) -> Sequence[tuple[Rating, Output, Rater, Rubric]]:
        stmt = (
            select(Rating, Output, Rater, Rubric)
            .join(Output, Output.id == Rating.output_id)
            .join(Rater, Rater.id == Rating.rater_id)
            .join(Rubric, Rubric.id == Rating.rubric_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(Output.id, Rater.id)
        )
        return [tuple(row) for row in self.session.execute(stmt)]  # type: ignore[misc]
