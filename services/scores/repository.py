"""All SQL about metric scores."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import func, select, tuple_, update

from services.models import MetricScore, Output, Question, utcnow
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

    def existing(
        self, output_ids: Iterable[int], metric: str, config_key: str, repeat: int = 0
    ) -> dict[int, MetricScore]:
        stmt = select(MetricScore).where(
            MetricScore.output_id.in_(list(output_ids)),
            MetricScore.metric == metric,
            MetricScore.config_key == config_key,
            MetricScore.repeat == repeat,
        )
        return {s.output_id: s for s in self.session.scalars(stmt)}

    def values_of_run(
        self, run_id: int, metric: str, config_key: str
    ) -> dict[int, tuple[int, float | None, dict[str, Any]]]:
        """output id -> (score id, value, details) of one metric and configuration on a run."""
        stmt = (
            select(MetricScore.output_id, MetricScore.id, MetricScore.value, MetricScore.details)
            .join(Output, Output.id == MetricScore.output_id)
            .where(
                Output.run_id == run_id, MetricScore.metric == metric, MetricScore.config_key == config_key
            )
        )
        return {o: (i, v, d or {}) for o, i, v, d in self.session.execute(stmt)}

    def insert_many(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            self.insert_rows(MetricScore, [{"created_at": now, "updated_at": now, **r} for r in rows])

    def update_many(self, rows: list[dict[str, Any]]) -> None:
        """Bulk UPDATE by primary key (rows carry ``id``)."""
        if rows:
            now = utcnow()
            self.session.execute(update(MetricScore), [{"updated_at": now, **r} for r in rows])

    def table_keys(self, run_id: int) -> list[tuple[str, str, int]]:
        """The distinct (metric, config key) of the run's scores with the number of judge repeats stored
        (1 + the highest repeat index): the columns of its score table."""
        stmt = (
            select(MetricScore.metric, MetricScore.config_key, func.max(MetricScore.repeat))
            .join(Output, Output.id == MetricScore.output_id)
            .where(Output.run_id == run_id)
            .group_by(MetricScore.metric, MetricScore.config_key)
        )
        return sorted((m, k, int(r or 0) + 1) for m, k, r in self.session.execute(stmt))

    def table_outputs(self, run_id: int, after: int | None, limit: int | None) -> list[tuple[int, int, str]]:
        """(question id, output id, question external id) of the run's outputs in question id order, after
        the question id ``after``, at most ``limit``: the rows of its score table."""
        stmt = (
            select(Output.question_id, Output.id, Question.external_id)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id == run_id)
            .order_by(Output.question_id)
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(Output.question_id > after)
        return [(q, o, e) for q, o, e in self.session.execute(stmt)]

    def table_cells(
        self, run_id: int, output_ids: Sequence[int] | None = None
    ) -> list[tuple[int, str, str, float | None, str | None, str | None, int]]:
        """(output id, metric, config key, value, error, reason, repeat) of every score of a run (of these
        of its outputs when given): the columns a score table shows, without loading whole rows."""
        stmt = (
            select(
                MetricScore.output_id,
                MetricScore.metric,
                MetricScore.config_key,
                MetricScore.value,
                MetricScore.error,
                MetricScore.reason,
                MetricScore.repeat,
            )
            .join(Output, Output.id == MetricScore.output_id)
            .where(Output.run_id == run_id)
            .order_by(MetricScore.output_id, MetricScore.metric, MetricScore.repeat, MetricScore.id)
        )
        if output_ids is not None:
            stmt = stmt.where(MetricScore.output_id.in_(list(output_ids)))
        return [tuple(r) for r in self.session.execute(stmt)]  # type: ignore[misc]

    def report_cells(self, run_ids: Iterable[int]) -> list[tuple[Any, ...]]:
        """(output id, metric, config key, updated at, value, error, reason) of every score of the runs."""
        stmt = (
            select(
                MetricScore.output_id,
                MetricScore.metric,
                MetricScore.config_key,
                MetricScore.updated_at,
                MetricScore.value,
                MetricScore.error,
                MetricScore.reason,
            )
            .join(Output, Output.id == MetricScore.output_id)
            .where(Output.run_id.in_(list(run_ids)))
            .order_by(MetricScore.output_id, MetricScore.metric, MetricScore.id)
        )
        return [tuple(r) for r in self.session.execute(stmt)]

    def reported_configs(self, run_ids: Iterable[int]) -> tuple[dict[str, str], dict[str, set[str]]]:
        """(metric -> the configuration a report uses, metric -> every configuration stored) on the runs.

        The configuration used is the one scored last: the latest ``updated_at`` of its scores, and among
        configurations whose latest updates are equal, the one of the first such score by output and id.
        One aggregate row per configuration is read, not the scores' timestamps."""
        ids = list(run_ids)
        on_runs = (Output.id == MetricScore.output_id, Output.run_id.in_(ids))
        stmt = (
            select(MetricScore.metric, MetricScore.config_key, func.max(MetricScore.updated_at))
            .join(Output, on_runs[0])
            .where(on_runs[1])
            .group_by(MetricScore.metric, MetricScore.config_key)
        )
        latest: dict[str, dict[str, Any]] = {}
        for metric, ckey, at in self.session.execute(stmt):
            latest.setdefault(metric, {})[ckey] = at
        chosen: dict[str, str] = {}
        for metric, configs in latest.items():
            newest = max(configs.values())
            tied = [c for c, at in configs.items() if at == newest]
            if len(tied) == 1:
                chosen[metric] = tied[0]
                continue
            last = (
                select(func.max(MetricScore.updated_at))
                .join(Output, on_runs[0])
                .where(on_runs[1], MetricScore.metric == metric)
                .scalar_subquery()
            )
            first = (
                select(MetricScore.config_key)
                .join(Output, on_runs[0])
                .where(on_runs[1], MetricScore.metric == metric, MetricScore.updated_at == last)
                .order_by(MetricScore.output_id, MetricScore.id)
                .limit(1)
            )
            chosen[metric] = self.session.scalars(first).one()
        return chosen, {metric: set(configs) for metric, configs in latest.items()}

    def report_values(
        self, run_ids: Iterable[int], configs: dict[str, str]
    ) -> list[tuple[int, str, float | None, str | None, str | None]]:
        """(output id, metric, value, error, reason) of the scores of the given configuration of each metric,
        as plain tuples."""
        if not configs:
            return []
        stmt = (
            select(
                MetricScore.output_id,
                MetricScore.metric,
                MetricScore.value,
                MetricScore.error,
                MetricScore.reason,
            )
            .join(Output, Output.id == MetricScore.output_id)
            .where(
                Output.run_id.in_(list(run_ids)),
                tuple_(MetricScore.metric, MetricScore.config_key).in_(list(configs.items())),
            )
            .order_by(MetricScore.output_id, MetricScore.metric, MetricScore.id)
        )
        return [tuple(r) for r in self.session.execute(stmt)]  # type: ignore[misc]

    def repeat_values(
        self, run_ids: Iterable[int], configs: dict[str, str]
    ) -> list[tuple[int, str, int, float | None]]:
        """(output id, metric, repeat, value) of every repeat of the given configuration of each metric."""
        if not configs:
            return []
        stmt = (
            select(MetricScore.output_id, MetricScore.metric, MetricScore.repeat, MetricScore.value)
            .join(Output, Output.id == MetricScore.output_id)
            .where(
                Output.run_id.in_(list(run_ids)),
                tuple_(MetricScore.metric, MetricScore.config_key).in_(list(configs.items())),
            )
            .order_by(MetricScore.output_id, MetricScore.metric, MetricScore.repeat)
        )
        return [tuple(r) for r in self.session.execute(stmt)]  # type: ignore[misc]

    def column_meta(
        self, run_ids: Iterable[int], keys: set[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
        """(metric, config key) -> (config, details) of the latest score of each configuration."""
        latest = (
            select(func.max(MetricScore.id))
            .join(Output, Output.id == MetricScore.output_id)
            .where(Output.run_id.in_(list(run_ids)))
            .group_by(MetricScore.metric, MetricScore.config_key)
        )
        stmt = select(
            MetricScore.metric, MetricScore.config_key, MetricScore.config, MetricScore.details
        ).where(MetricScore.id.in_(latest))
        return {
            (m, c): (cfg or {}, det or {}) for m, c, cfg, det in self.session.execute(stmt) if (m, c) in keys
        }

    def ids_of(
        self, output_ids: Iterable[int], metrics: Iterable[str]
    ) -> dict[tuple[int, str, str, int], int]:
        """The ids of the stored scores of these outputs and metrics, by (output, metric, config key,
        repeat)."""
        stmt = select(
            MetricScore.output_id,
            MetricScore.metric,
            MetricScore.config_key,
            MetricScore.repeat,
            MetricScore.id,
        ).where(MetricScore.output_id.in_(list(output_ids)), MetricScore.metric.in_(list(metrics)))
        return {(o, m, c, r): i for o, m, c, r, i in self.session.execute(stmt)}
