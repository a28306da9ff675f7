"""How stable each judge metric of a run is (``GET /runs/{id}/stability``): test-retest over the judge
repeats a scoring job stored (``repeats = k``), and the metric-human correlation corrected for the noise of
both sides (services.stats.stability).

Per judge metric (a metric whose stored configuration names a judge), on the configuration a report uses:
the outputs x repeats matrix of its values, grouped by question for the intervals; the human side is the
raters x outputs matrix of the run's ratings. Outputs missing a repeat, or (for the corrected agreement) a
rating of one of the raters, are left out and counted. Failure modes: an unknown run is ``NotFound``; a
metric scored once per output has no figures, with the reason (score it with ``repeats >= 2``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.config import Settings
from services.ratings.service import rating_table
from services.runs.repository import RunRepository
from services.runs.service import get_run
from services.scores.repository import ScoreRepository
from services.stats import Interval
from services.stats.stability import DISATTENUATION_RULE, corrected_agreement, retest

N_RESAMPLES = 2000
SEED = 0


class Figure(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = Field(description="percentile: a bootstrap by question")
    undefined_reason: str | None = None
    n_resamples_undefined: int = 0


class CorrectedCorrelation(BaseModel):
    n_outputs: int = Field(description="outputs with every repeat and a rating from every rater")
    n_questions: int
    raw_r: Figure = Field(description="Pearson r of the repeat mean with the mean rating")
    rel_human: float | None = Field(description="ICC(A,k) of the raters: the reliability of the mean rating")
    rel_metric: float | None = Field(description="Spearman-Brown reliability of the metric's repeat mean")
    corrected_r: Figure = Field(description="raw r disattenuated for both reliabilities, capped at 1")
    capped: bool = Field(description="the correction exceeded 1 and is shown as 1")
    uncapped: float | None
    rule: str
    undefined_reason: str | None = None


class MetricStability(BaseModel):
    metric: str
    repeats: int = Field(description="judge askings per output (the most any output has)")
    n_outputs: int = Field(description="outputs with every repeat scored")
    n_questions: int
    n_incomplete: int = Field(description="outputs left out: a repeat without a value")
    icc_a1: Figure = Field(description="ICC(A,1) across repeats: one asking's agreement with another")
    within_sd: Figure = Field(description="sqrt of the mean within-output variance of the repeats")
    reliability_of_mean: Figure = Field(description="Spearman-Brown: k r / (1 + (k - 1) r), r = ICC(A,1)")
    judge: dict[str, str | float | None] = Field(
        default_factory=dict, description="what the repeats were asked with (model, temperature, seed)"
    )
    corrected: CorrectedCorrelation
    undefined_reason: str | None = None


class StabilityReport(BaseModel):
    run_id: int
    n_raters: int
    n_resamples: int
    seed: int
    metrics: list[MetricStability]
    rule: str = DISATTENUATION_RULE
    notes: list[str]


def _figure(interval: Interval) -> Figure:
    return Figure(
        estimate=interval.estimate,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        ci_method=interval.ci_method,
        undefined_reason=interval.undefined_reason,
        n_resamples_undefined=interval.n_resamples_undefined,
    )


def _judge_settings(details: dict[str, Any]) -> dict[str, str | float | None]:
    stated = details.get("judge_settings")
    if not isinstance(stated, dict):
        return {}
    return {str(k): v for k, v in stated.items() if v is None or isinstance(v, str | float | int)}


def build_stability(
    session: Session, settings: Settings, run_id: int, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> StabilityReport:
    """The stability figures of every judge metric of a run. Raises NotFound for an unknown run."""
    get_run(session, run_id)
    repo = ScoreRepository(session)
    configs, _ = repo.reported_configs([run_id])
    meta = repo.column_meta([run_id], set(configs.items()))
    judged = {
        m: c for m, c in configs.items() if isinstance(meta.get((m, c), ({}, {}))[0].get("judge"), dict)
    }
    values: dict[str, dict[int, dict[int, float | None]]] = {}
    for oid, metric, repeat, value in repo.repeat_values([run_id], judged):
        values.setdefault(metric, {}).setdefault(oid, {})[repeat] = value
    question = {oid: qid for oid, qid, _, _ in RunRepository(session).report_items([run_id])}
    table = rating_table(session, [run_id])
    raters = list(table.raters)
    out: list[MetricStability] = []
    for metric in sorted(values):
        by_output = values[metric]
        oids = sorted(by_output)
        k = max(len(r) for r in by_output.values())
        x = np.full((len(oids), k), np.nan)
        for i, oid in enumerate(oids):
            for repeat, value in by_output[oid].items():
                if value is not None and repeat < k and math.isfinite(value):
                    x[i, repeat] = value
        groups: list[object] = [question.get(o, f"output {o}") for o in oids]
        h = np.full((len(raters), len(oids)), np.nan)
        for j, oid in enumerate(oids):
            for i, rater in enumerate(raters):
                score = table.scores.get(oid, {}).get(rater)
                if score is not None:
                    h[i, j] = score
        rt = retest(x, groups, n_resamples, seed)
        ca = corrected_agreement(x, h, groups, n_resamples, seed)
        corrected = CorrectedCorrelation(
            n_outputs=ca.n_outputs,
            n_questions=ca.n_questions,
            raw_r=_figure(ca.raw_r),
            rel_human=ca.rel_human,
            rel_metric=ca.rel_metric,
            corrected_r=_figure(ca.corrected_r),
            capped=ca.capped,
            uncapped=ca.uncapped,
            rule=ca.rule,
            undefined_reason=ca.undefined_reason,
        )
        out.append(
            MetricStability(
                metric=metric,
                repeats=k,
                n_outputs=rt.n_outputs,
                n_questions=rt.n_questions,
                n_incomplete=rt.n_incomplete,
                icc_a1=_figure(rt.icc_a1),
                within_sd=_figure(rt.within_sd),
                reliability_of_mean=_figure(rt.reliability_of_mean),
                judge=_judge_settings(meta.get((metric, judged[metric]), ({}, {}))[1]),
                corrected=corrected,
                undefined_reason=rt.undefined_reason,
            )
        )
    notes = [
        "intervals: percentile bootstrap by question (questions drawn with replacement, all their outputs "
        f"kept), {n_resamples} resamples, seed {seed}",
        "reports use the mean of a metric's repeats; metrics without a judge are deterministic and have no "
        "repeats",
    ]
    if any(m.corrected.capped for m in out):
        notes.append(
            "a corrected r above 1 is shown as 1 (flagged `capped`): the reliabilities are estimates"
        )
    return StabilityReport(
        run_id=run_id, n_raters=len(raters), n_resamples=n_resamples, seed=seed, metrics=out, notes=notes
    )


def stability(session: Session, settings: Settings, run_id: int) -> StabilityReport:
    """Entry point of the report workers (same shape as the other report functions)."""
    return build_stability(session, settings, run_id)
