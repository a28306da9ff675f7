"""Gathering a report's items: outputs of one or several runs, their reference (human) score and every
metric column, with the reason each value is missing."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from services.errors import InvalidItems, ItemError
from services.ratings.service import RatingTable, rating_table
from services.runs.repository import RunRepository
from services.runs.service import get_run
from services.scores.repository import ScoreRepository


@dataclass
class Item:
    output_id: int
    question_id: str
    types: list[str]
    answerable: bool
    human: float | None
    human_missing: str | None


@dataclass
class Column:
    name: str
    metric: str
    config_key: str
    values: dict[int, float] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    # The most judge repeats an output of this column has (its value is their mean).
    repeats: int = 1


@dataclass
class ReportData:
    dataset_id: int
    run_ids: list[int]
    items: list[Item]
    columns: dict[str, Column]
    ratings: RatingTable
    # Ratings and scores of earlier answers (kept in history, excluded from the report).
    retired_ratings: int = 0
    retired_scores: int = 0
    # metric -> (judge configurations with scores stored, the judge of the configuration reported), for the
    # metrics scored under more than one judge configuration.
    several_judges: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)


def judge_fingerprint(judge: dict[str, Any]) -> str:
    """The id of a judge configuration: (model, endpoint, language) of a score's stored ``judge`` config."""
    blob = json.dumps(
        {k: judge.get(k) for k in ("model", "endpoint", "language")}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _several_judges(
    repo: ScoreRepository, run_ids: list[int], keys: dict[str, set[str]], used: dict[str, str]
) -> dict[str, tuple[int, dict[str, Any]]]:
    multi = {m: ks for m, ks in keys.items() if len(ks) > 1}
    if not multi:
        return {}
    meta = repo.column_meta(run_ids, {(m, c) for m, ks in multi.items() for c in ks})
    out = {}
    for metric, ks in multi.items():
        judges = {
            c: judge
            for c in ks
            if isinstance(judge := (meta.get((metric, c), ({}, {}))[0] or {}).get("judge"), dict)
        }
        fingerprints = {judge_fingerprint(j) for j in judges.values()}
        if len(fingerprints) > 1 and used[metric] in judges:
            out[metric] = (len(fingerprints), judges[used[metric]])
    return out


def gather(session: Session, run_ids: list[int], reference: str, min_raters: int) -> ReportData:
    runs = [get_run(session, rid) for rid in run_ids]
    datasets = {r.dataset_id for r in runs}
    if len(datasets) > 1:
        raise InvalidItems(
            "pooled runs must belong to one dataset",
            [ItemError(None, "runs", f"datasets {sorted(datasets)}")],
        )
    table = rating_table(session, run_ids)
    refs = table.reference(reference, min_raters)
    items = []
    for output_id, external_id, types, answerable in RunRepository(session).report_items(run_ids):
        ref = refs.get(output_id)
        if ref is None:
            human, missing = None, "not rated"
        elif ref[2]:
            human, missing = None, f"rated by fewer than {min_raters} raters"
        else:
            human, missing = ref[0], None
        items.append(Item(output_id, external_id, list(types or []), answerable, human, missing))
    columns: dict[str, Column] = {}
    repo = ScoreRepository(session)
    # With several configurations of one metric, the latest one is reported (the others stay stored). Plain
    # tuples of the columns a report uses, of that configuration only; each one's JSON is read once.
    configs, keys = repo.reported_configs(run_ids)
    meta = repo.column_meta(run_ids, set(configs.items()))
    # A metric scored with judge repeats has one row per repeat: its value is the mean of those with a value.
    repeated: dict[tuple[str, int], list[float]] = {}
    for oid, metric, value, error, reason in repo.report_values(run_ids, configs):
        col = columns.get(metric)
        if col is None:
            ckey = configs[metric]
            config, details = meta.get((metric, ckey), ({}, {}))
            col = columns[metric] = Column(metric, metric, ckey, details=dict(config or {}))
            if details and "higher_is_better" in details:
                col.details["higher_is_better"] = details["higher_is_better"]
        if value is not None:
            got = repeated.setdefault((metric, oid), [])
            got.append(value)
            col.values[oid] = sum(got) / len(got)
            col.missing.pop(oid, None)
            col.repeats = max(col.repeats, len(got))
        elif oid in col.values:
            continue
        elif error:
            col.missing[oid] = f"error: {error.split(':', 1)[0]}"
        else:
            col.missing[oid] = f"undefined: {reason or 'no value'}"
    retired_ratings, retired_scores = RunRepository(session).retired_counts(run_ids)
    several = _several_judges(repo, run_ids, keys, configs)
    return ReportData(
        datasets.pop(), run_ids, items, columns, table, retired_ratings, retired_scores, several
    )
