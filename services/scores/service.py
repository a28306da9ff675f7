"""Scores imported from tools outside the service, and the per-output score table (JSON or CSV).

Imported metrics are named ``external.<name>``; they sit beside the service's own scores and enter reports.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session

from services.datasets.repository import DatasetRepository
from services.datasets.schemas import ImportReport
from services.errors import InvalidItems, ItemError
from services.ingest import Row
from services.models import MetricScore
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.scores.repository import ScoreRepository
from services.validation import duplicate_errors, validate_rows

EXTERNAL_CONFIG = "external"
_EXTERNAL_NAME = re.compile(r"^external\.[a-z0-9_][a-z0-9_.:@-]*$")


class ExternalScoreIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str = Field(min_length=1)
    metric: str = Field(
        description="external.<name>: lower-case letters, digits, _ . : @ -",
        json_schema_extra={"pattern": _EXTERNAL_NAME.pattern},
    )
    value: float | None = Field(description="null when the tool could not score the item")
    higher_is_better: bool | None = None

    @field_validator("metric")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _EXTERNAL_NAME.match(value):
            raise ValueError("must look like external.<name> (lower-case letters, digits, _ . : @ -)")
        return value

    @field_validator("value", mode="before")
    @classmethod
    def _csv_blank(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number or null")
        return value


def import_external_scores(session: Session, run_id: int, rows: list[Row]) -> ImportReport:
    """Upsert precomputed scores (one value per question and metric).

    Fails (InvalidItems) on bad names or values, unknown questions, questions without an output in the run,
    and repeated (question, metric) pairs in the batch.
    """
    run = lock_run(session, run_id)
    questions = DatasetRepository(session).questions_by_external_id(run.dataset_id)
    outputs = RunRepository(session).outputs_by_question(run_id)
    good, errors = validate_rows(rows, ExternalScoreIn)
    errors += duplicate_errors([(r, f"{x.question_id} {x.metric}") for r, x in good], "metric")
    resolved: list[tuple[ExternalScoreIn, int]] = []
    for row, item in good:
        q = questions.get(item.question_id)
        if q is None:
            errors.append(
                ItemError(row.index, "question_id", f"unknown question {item.question_id!r}", row.line)
            )
        elif q.id not in outputs:
            errors.append(
                ItemError(
                    row.index, "question_id", f"run {run_id} has no output for {item.question_id!r}", row.line
                )
            )
        else:
            resolved.append((item, outputs[q.id].id))
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise InvalidItems(f"{len(errors)} invalid score row(s); nothing was imported", errors)

    repo = ScoreRepository(session)
    created = updated = unchanged = 0
    by_metric: dict[str, list[tuple[ExternalScoreIn, int]]] = {}
    for item, oid in resolved:
        by_metric.setdefault(item.metric, []).append((item, oid))
    for metric, items in by_metric.items():
        existing = repo.existing([oid for _, oid in items], metric, EXTERNAL_CONFIG)
        for item, oid in items:
            details = {"source": "imported"}
            if item.higher_is_better is not None:
                details["higher_is_better"] = str(item.higher_is_better).lower()
            score = existing.get(oid)
            reason = None if item.value is not None else "no value given by the external tool"
            if score is None:
                repo.add(
                    MetricScore(
                        output_id=oid,
                        metric=metric,
                        config_key=EXTERNAL_CONFIG,
                        config={},
                        value=item.value,
                        reason=reason,
                        details=details,
                    )
                )
                created += 1
            elif (score.value, score.details) == (item.value, details):
                unchanged += 1
            else:
                score.value, score.reason, score.details, score.error = item.value, reason, details, None
                updated += 1
    repo.flush()
    return ImportReport(
        kind="scores", received=len(rows), created=created, updated=updated, unchanged=unchanged
    )


def _column(score: MetricScore, multi: bool) -> str:
    return f"{score.metric}[{score.config_key[:8]}]" if multi else score.metric


def score_table(session: Session, run_id: int) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per output, one column per metric (and per configuration when a metric has several),
    plus an ``<column>.error`` column holding the reason or error of null values."""
    run = get_run(session, run_id)
    questions = {q.id: q.external_id for q in DatasetRepository(session).questions(run.dataset_id)}
    outputs = RunRepository(session).outputs(run_id)
    scores = ScoreRepository(session).of_runs([run_id])
    configs: dict[str, set[str]] = {}
    for s in scores:
        configs.setdefault(s.metric, set()).add(s.config_key)
    columns: list[str] = []
    rows: dict[int, dict[str, Any]] = {
        o.id: {"output_id": o.id, "question_id": questions[o.question_id]} for o in outputs
    }
    for s in scores:
        col = _column(s, len(configs[s.metric]) > 1)
        if col not in columns:
            columns.append(col)
        rows[s.output_id][col] = s.value
        if s.value is None:
            rows[s.output_id][f"{col}.error"] = s.error or s.reason
    columns.sort()
    header = ["output_id", "question_id"]
    for col in columns:
        header += [col, f"{col}.error"]
    return header, [{h: r.get(h) for h in header} for r in rows.values()]


_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell safe to open in a spreadsheet: text that a spreadsheet would run as a formula (leading ``=``,
    ``+``, ``-``, ``@``, tab or CR) gets a leading apostrophe (OWASP's advice); numbers are left as they are,
    negative ones included."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_LEAD):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def table_csv(header: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\r\n")
    writer.writerow({h: csv_cell(h) for h in header})
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buf.getvalue()
