"""A metric's per-item table: question, human score, metric score and how far apart the two rank, largest
disagreements first, so that a user can see why a metric disagrees with the raters."""

from __future__ import annotations

from collections import Counter

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.errors import NotFound
from services.metrics import registry
from services.reports.data import gather
from services.reports.schemas import Corr, MetricItem, MetricItems
from services.reports.service import corr_of
from services.runs.repository import RunRepository
from services.stats.reference import rankdata

ANSWER_CHARS = 400


def _percentiles(values: list[float]) -> list[float]:
    if len(values) == 1:
        return [50.0]
    ranks = rankdata(np.asarray(values, dtype=np.float64))  # mid-ranks for ties
    return [float((r - 1) / (len(values) - 1) * 100) for r in ranks]


def metric_items(
    session: Session,
    settings: Settings,
    run_ids: list[int],
    metric: str,
    *,
    types: list[str] | None = None,
    answerable: bool | None = None,
) -> MetricItems:
    """Raises NotFound when no run has a score of this metric (name with its @k, as in the report)."""
    data = gather(session, run_ids, settings.ratings.reference, settings.ratings.min_raters)
    col = data.columns.get(metric)
    if col is None:
        raise NotFound(f"no score of metric {metric!r} in run(s) {', '.join(map(str, run_ids))}")
    spec = registry.BY_NAME.get(metric.partition("@")[0])
    hib = (
        spec.higher_is_better if spec else str(col.details.get("higher_is_better", "true")).lower() != "false"
    )
    texts = {o.id: (o, q) for o, q in RunRepository(session).outputs_and_questions(run_ids)}
    items = [
        it
        for it in data.items
        if (not types or set(types) & set(it.types)) and (answerable is None or it.answerable == answerable)
    ]
    rows: list[MetricItem] = []
    excluded: Counter[str] = Counter()
    for it in items:
        output, question = texts[it.output_id]
        value = col.values.get(it.output_id)
        missing = None
        if value is None:
            missing = col.missing.get(it.output_id, "not scored")
        elif it.human is None:
            missing = it.human_missing or "not rated"
        if missing:
            excluded[missing] += 1
        answer = output.answer
        if answer is not None and len(answer) > ANSWER_CHARS:
            answer = answer[: ANSWER_CHARS - 1] + "…"
        rows.append(
            MetricItem(
                output_id=it.output_id,
                run_id=output.run_id,
                question_id=it.question_id,
                question=question.question,
                answer=answer,
                human=it.human,
                value=value,
                missing_reason=missing,
            )
        )
    paired = [r for r in rows if r.missing_reason is None]
    pearson: Corr | None = None
    if paired:
        human_pct = _percentiles([r.human for r in paired if r.human is not None])
        oriented = [(r.value if hib else -r.value) for r in paired if r.value is not None]
        metric_pct = _percentiles(oriented)
        for r, h, m in zip(paired, human_pct, metric_pct, strict=True):
            r.human_percentile, r.metric_percentile, r.disagreement = h, m, m - h
        pearson = corr_of(
            stats.pearson(
                np.array([r.value for r in paired], dtype=np.float64),
                np.array([r.human for r in paired], dtype=np.float64),
            )
        )
    rows.sort(key=lambda r: (r.disagreement is None, -abs(r.disagreement or 0.0), r.question_id, r.output_id))
    return MetricItems(
        metric=metric,
        library=spec.library if spec else metric.split(".")[0],
        higher_is_better=hib,
        reference="human reference score",
        n=len(paired),
        excluded=dict(excluded),
        pearson=pearson,
        items=rows,
    )
