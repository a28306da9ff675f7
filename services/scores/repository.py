"""All SQL about metric scores."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import select

from services.models import MetricScore, Output
from services.repository import Repository


class ScoreRepository(Repository):
    def of_runs(self, run_ids: Iterable[int], metrics: Iterable[str] | None = None) -> Sequence[MetricScore]:
        stmt = (
            select(MetricScore)
            .join(Output, Output.id == MetricScore.output_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(MetricScore.output_id, MetricScore.metric, MetricScore.id)
        )
        if metrics is not None:
            stmt = stmt.where(MetricScore.metric.in_(list(metrics)))
        return self.session.scalars(stmt).all()

    def existing(self, output_ids: Iterable[int], metric: str, config_key: str) -> dict[int, MetricScore]:
        stmt = select(MetricScore).where(
            MetricScore.output_id.in_(list(output_ids)),
            MetricScore.metric == metric,
            MetricScore.config_key == config_key,
        )
        return {s.output_id: s for s in self.session.scalars(stmt)}
