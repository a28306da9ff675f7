"""Scores imported from tools outside the service, and the per-output score table (JSON or CSV).

Imported metrics are named ``external.<name>``; they sit beside the service's own scores and enter reports.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session

from services import kinds
from services.datasets.schemas import ImportReport
from services.errors import ItemError, WrongKind
from services.ingest import Row, notes_of
from services.pagination import Page, PageRequest, take
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.scores.external import EXTERNAL_CONFIG, import_wide_scores
from services.scores.repository import ScoreRepository
from services.types import Number
from services.validation import duplicate_errors, invalid_rows, validate_rows

_EXTERNAL_NAME = re.compile(r"^external\.[a-z0-9_][a-z0-9_.:@-]*$")


class ExternalScoreIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    question_id: str = Field(min_length=1)
    metric: str = Field(
        description="external.<name>: lower-case letters, digits, _ . : @ -",
        json_schema_extra={"pattern": _EXTERNAL_NAME.pattern},
    )
    value: Number | None = Field(description="null when the tool could not score the item")
    higher_is_better: bool | None = Field(default=None, strict=True)

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
    good, errors = validate_rows(rows, ExternalScoreIn)
    errors += duplicate_errors([(r, f"{x.question_id} {x.metric}") for r, x in good], "metric")
    targets = RunRepository(session).output_ids_by_question(
        run.dataset_id, run_id, {item.question_id for _, item in good}
    )
    resolved: list[tuple[ExternalScoreIn, int]] = []
    for row, item in good:
        target = targets.get(item.question_id)
        if target is None:
            errors.append(
                ItemError(row.index, "question_id", f"unknown question {item.question_id!r}", row.line)
            )
        elif target[1] is None:
            errors.append(
                ItemError(
                    row.index, "question_id", f"run {run_id} has no output for {item.question_id!r}", row.line
                )
            )
        else:
            resolved.append((item, target[1]))
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows("scores", rows, errors)

    repo = ScoreRepository(session)
    unchanged = 0
    new: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    by_metric: dict[str, list[tuple[ExternalScoreIn, int]]] = {}
    for item, oid in resolved:
        by_metric.setdefault(item.metric, []).append((item, oid))
    for metric, items in by_metric.items():
        existing = repo.values_of_run(run_id, metric, EXTERNAL_CONFIG)
        for item, oid in items:
            details = {"source": "imported"}
            if item.higher_is_better is not None:
                details["higher_is_better"] = str(item.higher_is_better).lower()
            stored = existing.get(oid)
            reason = None if item.value is not None else "no value given by the external tool"
            if stored is None:
                new.append(
                    {
                        "output_id": oid,
                        "metric": metric,
                        "config_key": EXTERNAL_CONFIG,
                        "config": {},
                        "value": item.value,
                        "reason": reason,
                        "details": details,
                    }
                )
            elif (stored[1], stored[2]) == (item.value, details):
                unchanged += 1
            else:
                changed.append(
                    {
                        "id": stored[0],
                        "value": item.value,
                        "reason": reason,
                        "details": details,
                        "error": None,
                    }
                )
    repo.insert_many(new)
    repo.update_many(changed)
    created, updated = len(new), len(changed)
    return ImportReport(
        kind="scores",
        received=len(rows),
        created=created,
        updated=updated,
        unchanged=unchanged,
        notes=notes_of(rows),
    )


def _column(metric: str, config_key: str, multi: bool) -> str:
    return f"{metric}[{config_key[:8]}]" if multi else metric


@dataclass(frozen=True)
class ScoreColumns:
    """The header of a run's score table, the column of each (metric, config key) and the number of judge
    repeats a column holds."""

    header: list[str]
    column_of: dict[tuple[str, str], str]
    repeats: dict[str, int]


def score_columns(session: Session, run_id: int) -> ScoreColumns:
    """Raises NotFound for an unknown run."""
    get_run(session, run_id)
    keys = ScoreRepository(session).table_keys(run_id)
    per_metric: dict[str, int] = {}
    for metric, _, _ in keys:
        per_metric[metric] = per_metric.get(metric, 0) + 1
    column_of = {(m, k): _column(m, k, per_metric[m] > 1) for m, k, _ in keys}
    repeats: dict[str, int] = {}
    for m, k, n in keys:
        repeats[column_of[(m, k)]] = max(repeats.get(column_of[(m, k)], 1), n)
    header = ["output_id", "question_id"]
    for col in sorted(repeats):
        header += [col, f"{col}.error"]
        for i in range(repeats[col] if repeats[col] > 1 else 0):
            header += [f"{col}.repeat{i}", f"{col}.repeat{i}.error"]
    return ScoreColumns(header, column_of, repeats)


def score_rows(
    session: Session, run_id: int, columns: ScoreColumns, page: PageRequest | None = None
) -> Page[dict[str, Any]]:
    """The rows of the score table in question order (one page of them with ``page``): one query for the
    outputs and one for their scores, so that a streamed export reads a batch at a time. A column scored
    with judge repeats (``repeats = k``) holds the mean of the repeats with a value, as reports do, and
    ``<column>.repeat<i>`` (with ``<column>.repeat<i>.error``) each repeat's own value, i from 0."""
    repo = ScoreRepository(session)
    after = int(page.after[0]) if page and page.after else None
    outputs = repo.table_outputs(run_id, after, page.limit + 1 if page else None)
    found = take(outputs, page.limit, lambda o: (o[0],)) if page else Page(outputs, None)
    rows: dict[int, dict[str, Any]] = {
        oid: {"output_id": oid, "question_id": ext} for _, oid, ext in found.items
    }
    wanted = list(rows) if page else None
    got: dict[tuple[int, str], list[float]] = {}
    for oid, metric, ckey, value, error, reason, repeat in repo.table_cells(run_id, wanted) if rows else []:
        col = columns.column_of[(metric, ckey)]
        row = rows[oid]
        if columns.repeats[col] > 1:
            row[f"{col}.repeat{repeat}"] = value
            if value is None:
                row[f"{col}.repeat{repeat}.error"] = error or reason
        if value is not None:
            values = got.setdefault((oid, col), [])
            values.append(value)
            row[col] = sum(values) / len(values)
            row.pop(f"{col}.error", None)
        elif row.get(col) is None:
            row[col] = None
            row[f"{col}.error"] = error or reason
    return Page([{h: r.get(h) for h in columns.header} for r in rows.values()], found.next_key)


def score_table(session: Session, run_id: int) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per output, one column per metric (and per configuration when a metric has several),
    plus an ``<column>.error`` column holding the reason or error of null values; repeats as in
    ``score_rows``."""
    columns = score_columns(session, run_id)
    return columns.header, score_rows(session, run_id, columns).items


def score_configs(session: Session, run_id: int) -> dict[str, dict[str, Any]]:
    """The recorded configuration (library version, k, word rule, judge...) of each column of the score
    table, from its latest score: what tells two configurations of one metric apart."""
    get_run(session, run_id)
    repo = ScoreRepository(session)
    keys = {(metric, ckey) for metric, ckey, _ in repo.table_keys(run_id)}
    per_metric: dict[str, int] = {}
    for metric, _ in keys:
        per_metric[metric] = per_metric.get(metric, 0) + 1
    meta = repo.column_meta([run_id], keys)
    return {
        _column(metric, ckey, per_metric[metric] > 1): config
        for (metric, ckey), (config, _) in sorted(meta.items())
    }


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


def table_csv(header: Sequence[str], rows: Sequence[dict[str, Any]], with_header: bool = True) -> str:
    """CSV lines of ``rows`` (the header line first unless ``with_header`` is False: a streamed export
    writes it once, then its batches)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\r\n")
    if with_header:
        writer.writerow({h: csv_cell(h) for h in header})
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buf.getvalue()


def import_scores(
    session: Session,
    run_id: int,
    rows: list[Row],
    shape: str = "auto",
    library: str | None = None,
    higher_is_better: Sequence[str] = (),
    lower_is_better: Sequence[str] = (),
    metrics: Sequence[str] | None = None,
) -> ImportReport:
    """Precomputed scores in either shape: long rows ``{question_id, metric, value}`` or a wide export with
    one column per metric (services.scores.external). ``auto`` tells them apart by a ``metric`` column."""
    keys = kinds.keys_of(r.data for r in rows)
    found = kinds.detect(keys)
    if found is not None and found[0].name in ("ratings", "documents", "questions", "raters"):
        message = kinds.wrong_kind_message(found[0], found[1], "scores")
        raise WrongKind(message, [ItemError(None, "(file)", message)])
    if shape == "auto":
        shape = "long" if keys & {"metric", "metric_name"} else "wide"
    if shape == "long":
        return import_external_scores(session, run_id, rows)
    return import_wide_scores(session, run_id, rows, library, higher_is_better, lower_is_better, metrics)
