"""Scores computed by other tools, in the wide shape their exports have: one row per sample, one column per
metric (Ragas ``result.to_pandas()``, DeepEval test results, Opik experiment exports, RAGChecker results).

Each metric column becomes ``external.<library>.<metric>``. Its direction (higher is better) and kind
(retrieval / overall / generation) come from the catalogue when the column is one of the metrics the service
knows (``faithfulness`` of Ragas is ``ragas.faithfulness``), else from a short list of other well-known
metrics, else the caller must say it (``higher_is_better`` / ``lower_is_better``): a metric whose direction
is guessed would turn a good metric into a bad one in every report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from services.csvread import is_missing, to_float
from services.datasets.repository import DatasetRepository
from services.datasets.schemas import ImportReport
from services.errors import InvalidItems, ItemError
from services.ingest import Row, notes_of
from services.metrics import registry
from services.models import MetricScore, Question
from services.runs.repository import RunRepository
from services.runs.service import lock_run
from services.scores.repository import ScoreRepository
from services.validation import invalid_rows

EXTERNAL_CONFIG = "external"
LIBRARIES = ("ragas", "deepeval", "opik", "ragchecker")
_LIBRARY_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")

# Exported column name (normalised) -> catalogue metric of the same library.
_CATALOGUE_NAMES: dict[str, dict[str, str]] = {
    "ragas": {
        "faithfulness": "faithfulness",
        "answer_relevancy": "answer_relevancy",
        "response_relevancy": "answer_relevancy",
        "factual_correctness": "factual_correctness:f1",
        "factual_correctness:f1": "factual_correctness:f1",
        "factual_correctness:recall": "factual_correctness:recall",
        "factual_correctness:precision": "factual_correctness:precision",
        "context_precision": "context_precision",
        "llm_context_precision_with_reference": "context_precision",
        "context_precision_with_reference": "context_precision",
        "context_recall": "context_recall",
        "llm_context_recall": "context_recall",
    },
    "deepeval": {
        n: n
        for n in (
            "hallucination",
            "answer_relevancy",
            "faithfulness",
            "contextual_precision",
            "contextual_recall",
            "contextual_relevancy",
        )
    },
    "opik": {
        "hallucination_metric": "hallucination",
        "moderation_metric": "moderation",
        "answer_relevance_metric": "answer_relevance",
        "usefulness_metric": "usefulness",
        "context_precision_metric": "context_precision",
        "context_recall_metric": "context_recall",
        **{
            n: n
            for n in (
                "hallucination",
                "moderation",
                "answer_relevance",
                "usefulness",
                "context_precision",
                "context_recall",
            )
        },
    },
    "ragchecker": {
        n: n
        for n in (
            "precision",
            "recall",
            "f1",
            "claim_recall",
            "context_precision",
            "context_utilization",
            "noise_sensitivity_in_relevant",
            "noise_sensitivity_in_irrelevant",
            "hallucination",
            "self_knowledge",
            "faithfulness",
        )
    },
}

# Other metrics of these libraries whose direction is documented: name -> (higher is better, kind).
_OTHER_KNOWN: dict[str, dict[str, tuple[bool, str]]] = {
    "ragas": {
        "non_llm_context_recall": (True, "retrieval"),
        "id_based_context_recall": (True, "retrieval"),
        "id_based_context_precision": (True, "retrieval"),
        "non_llm_context_precision_with_reference": (True, "retrieval"),
        "llm_context_precision_without_reference": (True, "retrieval"),
        "context_entity_recall": (True, "retrieval"),
        "noise_sensitivity": (False, "generation"),
        "noise_sensitivity:relevant": (False, "generation"),
        "noise_sensitivity:irrelevant": (False, "generation"),
        "answer_correctness": (True, "overall"),
        "semantic_similarity": (True, "overall"),
        "answer_similarity": (True, "overall"),
        "bleu_score": (True, "overall"),
        "rouge_score": (True, "overall"),
        "rouge_score:fmeasure": (True, "overall"),
        "chrf_score": (True, "overall"),
    },
    "deepeval": {"bias": (False, "overall"), "toxicity": (False, "overall")},
}

# Columns of the exports that are not metrics.
NOT_METRICS = frozenset(
    {
        "question_id",
        "id",
        "qid",
        "query_id",
        "user_input",
        "input",
        "question",
        "query",
        "response",
        "answer",
        "actual_output",
        "output",
        "reference",
        "expected_output",
        "gt_answer",
        "retrieved_contexts",
        "reference_contexts",
        "retrieval_context",
        "context",
        "retrieved_context",
        "retrieved_context_ids",
        "reference_context_ids",
        "rubrics",
        "multi_responses",
        "name",
        "success",
        "index",
        "dataset_item_id",
        "trace_id",
        "experiment_id",
        "latency",
        "latency_ms",
        "cost",
        "token_cost",
        "input_token_count",
        "output_token_count",
        "completion_time",
        "run_duration",
        "evaluation_cost",
        # DeepEval test runs (camelCase keys, lower-cased)
        "order",
        "flaky",
        "runduration",
        "evaluationcost",
        "tokencost",
        "inputtokencount",
        "outputtokencount",
        "completiontime",
    }
)

QUESTION_ID_KEYS = ("question_id", "qid", "query_id", "id", "dataset.question_id", "dataset.id")
QUESTION_TEXT_KEYS = (
    "user_input",
    "question",
    "query",
    "input",
    "dataset.user_input",
    "dataset.question",
    "dataset.input",
)


@dataclass(frozen=True)
class ExternalMetric:
    column: str
    name: str  # external.<library>.<metric>
    higher_is_better: bool | None
    kind: str
    catalogue: str | None  # the service's own metric of the same definition, when there is one


def metric_part(column: str) -> str:
    """A column name as the metric part of ``external.<library>.<metric>``.

    "Answer Relevancy" -> answer_relevancy; "factual_correctness(mode=f1)" -> factual_correctness:f1;
    "feedback_scores.hallucination_metric" -> hallucination_metric."""
    name = column.strip()
    for prefix in ("feedback_scores.", "feedback_score.", "scores.", "metrics."):
        if name.lower().startswith(prefix):
            name = name[len(prefix) :]
    m = re.fullmatch(r"\s*([^()]+?)\s*\((.*)\)\s*", name)
    variant = ""
    if m:
        name = m.group(1)
        values = [part.split("=", 1)[-1].strip() for part in m.group(2).split(",") if part.strip()]
        variant = ":" + "-".join(values) if values else ""
    out = re.sub(r"[^a-z0-9_.:@-]+", "_", (name + variant).strip().lower()).strip("_")
    return out or "unnamed"


def resolve(library: str, column: str) -> ExternalMetric:
    part = metric_part(column)
    catalogue = _CATALOGUE_NAMES.get(library, {}).get(part)
    if catalogue is not None:
        spec = registry.BY_NAME[f"{library}.{catalogue}"]
        return ExternalMetric(
            column, f"external.{library}.{catalogue}", spec.higher_is_better, spec.kind, spec.name
        )
    other = _OTHER_KNOWN.get(library, {}).get(part)
    if other is not None:
        return ExternalMetric(column, f"external.{library}.{part}", other[0], other[1], None)
    return ExternalMetric(column, f"external.{library}.{part}", None, "overall", None)


def library_kind(metric: str) -> tuple[str, str] | None:
    """Library label and kind of an imported ``external.<library>.<metric>`` the service knows."""
    parts = metric.split(".", 2)
    if len(parts) != 3 or parts[0] != "external":
        return None
    known = resolve(parts[1], parts[2])
    if known.higher_is_better is None:
        return None
    return f"external.{parts[1]}", known.kind


def detect_library(keys: set[str]) -> str | None:
    """Which tool wrote a table with these (normalised) column names, if it can be told."""
    if keys & {"user_input", "retrieved_contexts", "reference_contexts"}:
        return "ragas"
    if keys & {"actual_output", "retrieval_context", "metrics_data", "metricsdata", "actualoutput"}:
        return "deepeval"
    if any(k.startswith(("dataset.", "feedback_scores.")) for k in keys) or any(
        k.endswith("_metric") for k in keys
    ):
        return "opik"
    if keys & {"query_id", "gt_answer", "retrieved_context"}:
        return "ragchecker"
    return None


def flatten(data: dict[str, Any]) -> dict[str, Any]:
    """One row of an export as flat columns: DeepEval's ``metrics_data`` list and RAGChecker's ``metrics``
    dict become one column per metric; keys are lower-cased."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        k = str(key).strip()
        lk = k.lower()
        if lk in ("metrics_data", "metricsdata") and isinstance(value, list):
            for md in value:
                if isinstance(md, dict) and md.get("name") is not None:
                    out[str(md["name"])] = md.get("score")
        elif lk == "metrics" and isinstance(value, dict):
            for name, v in value.items():
                if not isinstance(v, dict):
                    out[str(name)] = v
        else:
            out[lk] = value
    return out


def metric_columns(
    rows: Sequence[dict[str, Any]], exclude: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """Columns whose present values are numbers (decimal comma and NaN accepted) at least half of the time
    (a stray text in a metric column is then an error, not a reason to drop the column), and the other
    columns that are not known non-metric columns (said in the answer, never silently dropped)."""
    excluded = set(NOT_METRICS) | {e.lower() for e in exclude}
    columns: list[str] = []
    for r in rows:
        for k in r:
            if k not in columns:
                columns.append(k)
    numeric, other = [], []
    for col in columns:
        if col.lower() in excluded or col.lower().startswith("dataset."):
            continue
        values = [r.get(col) for r in rows]
        present = [v for v in values if not is_missing(v)]
        good = 0
        for v in present:
            try:
                to_float(v)
                good += 1
            except (TypeError, ValueError):
                pass
        if present and good * 2 >= len(present):
            numeric.append(col)
        else:
            other.append(col)
    return numeric, other


def _question_matcher(questions: Sequence[Question]) -> tuple[dict[str, Question], dict[str, list[Question]]]:
    by_id = {q.external_id: q for q in questions}
    by_text: dict[str, list[Question]] = {}
    for q in questions:
        by_text.setdefault(q.question, []).append(q)
    return by_id, by_text


def match_question(
    data: dict[str, Any], by_id: dict[str, Question], by_text: dict[str, list[Question]]
) -> Question | str:
    """The question a row is about, by question id, else by exact question text; or why not."""
    for key in QUESTION_ID_KEYS:
        value = data.get(key)
        if not is_missing(value):
            q = by_id.get(str(value).strip())
            if q is not None:
                return q
            if key in ("question_id", "qid", "query_id", "dataset.question_id"):
                return f"unknown question id {str(value)!r}"
    for key in QUESTION_TEXT_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            hits = by_text.get(value, []) or by_text.get(value.strip(), [])
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                ids = ", ".join(repr(h.external_id) for h in hits[:5])
                return f"ambiguous: {len(hits)} questions have this text ({ids}); add a question_id column"
            return f"no question of the dataset has exactly the text of column {key!r}"
    return (
        "no question id or question text: give a column "
        f"{' / '.join(QUESTION_ID_KEYS[:3])} or {' / '.join(QUESTION_TEXT_KEYS[:4])}"
    )


def directions(
    metrics: list[ExternalMetric], higher: Iterable[str], lower: Iterable[str]
) -> tuple[list[ExternalMetric], list[ItemError]]:
    """Apply the caller's directions (by column or metric name); list the metrics still without one."""
    up = {h.strip().lower() for h in higher if h.strip()}
    down = {h.strip().lower() for h in lower if h.strip()}
    out, errors = [], []
    for m in metrics:
        names = {m.column.lower(), metric_part(m.column), m.name, m.name.rsplit(".", 1)[-1]}
        if names & up and names & down:
            errors.append(ItemError(None, m.column, "named both in higher_is_better and lower_is_better"))
            continue
        hib = True if names & up else False if names & down else m.higher_is_better
        if hib is None:
            errors.append(
                ItemError(
                    None,
                    m.column,
                    f"{m.name}: the direction of this metric is unknown; say it with "
                    f"higher_is_better={m.column} or lower_is_better={m.column}",
                )
            )
            continue
        out.append(ExternalMetric(m.column, m.name, hib, m.kind, m.catalogue))
    return out, errors


def score_row(metric: ExternalMetric, library: str, output_id: int, value: float | None) -> dict[str, Any]:
    """The metric_score row of one imported value."""
    details: dict[str, Any] = {
        "source": "imported",
        "library": library,
        "kind": metric.kind,
        "column": metric.column,
        "higher_is_better": str(bool(metric.higher_is_better)).lower(),
    }
    if metric.catalogue:
        details["same_definition_as"] = metric.catalogue
    return {
        "output_id": output_id,
        "metric": metric.name,
        "config_key": EXTERNAL_CONFIG,
        "config": {},
        "value": value,
        "reason": None if value is not None else "no value given by the external tool",
        "details": details,
    }


def import_wide_scores(
    session: Session,
    run_id: int,
    rows: list[Row],
    library: str | None = None,
    higher_is_better: Sequence[str] = (),
    lower_is_better: Sequence[str] = (),
    only: Sequence[str] | None = None,
) -> ImportReport:
    """Upsert the metric columns of an export (one row per sample) as ``external.<library>.<metric>``.

    Fails (InvalidItems) when the library cannot be told and is not given, a metric's direction is unknown,
    a row matches no question (by id or exact text) or a question without an output in the run, two rows
    are about one question, or a metric cell is not a number."""
    run = lock_run(session, run_id)
    flat = [flatten(r.data) if isinstance(r.data, dict) else {} for r in rows]
    errors: list[ItemError] = [
        ItemError(r.index, "(row)", "must be an object", r.line) for r in rows if not isinstance(r.data, dict)
    ]
    keys = {k for f in flat for k in f}
    lib = (library or "").strip().lower() or detect_library(keys)
    if lib is None:
        raise InvalidItems(
            "cannot tell which tool wrote this table: say it with library=ragas, deepeval, opik, "
            "ragchecker or another name",
            [ItemError(None, "library", "missing")],
        )
    if not _LIBRARY_NAME.match(lib):
        raise InvalidItems(
            f"library {lib!r} is not a name (lower-case letters, digits, _)",
            [ItemError(None, "library", "bad name")],
        )
    numeric, other = metric_columns(flat)
    if only:
        wanted = {o.strip().lower() for o in only if o.strip()}
        unknown = wanted - {c.lower() for c in numeric} - {metric_part(c) for c in numeric}
        for name in sorted(unknown):
            errors.append(
                ItemError(None, "metrics", f"no numeric column {name!r}; numeric columns: {numeric}")
            )
        numeric = [c for c in numeric if c.lower() in wanted or metric_part(c) in wanted]
    if not numeric:
        raise InvalidItems(
            "the table has no metric column (a column whose values are all numbers)",
            [ItemError(None, "(file)", f"columns: {', '.join(sorted(keys)) or 'none'}")],
        )
    metrics, direction_errors = directions(
        [resolve(lib, c) for c in numeric], higher_is_better, lower_is_better
    )
    errors += direction_errors
    names: dict[str, str] = {}
    for m in metrics:
        if m.name in names:
            errors.append(ItemError(None, m.column, f"{m.name} is also the name of column {names[m.name]!r}"))
        names[m.name] = m.column
    questions = DatasetRepository(session).questions(run.dataset_id)
    by_id, by_text = _question_matcher(questions)
    outputs = RunRepository(session).outputs_by_question(run_id)
    values: list[tuple[int, ExternalMetric, float | None]] = []
    seen: dict[int, Row] = {}
    for row, data in zip(rows, flat, strict=True):
        if not isinstance(row.data, dict):
            continue
        q = match_question(data, by_id, by_text)
        if isinstance(q, str):
            errors.append(ItemError(row.index, "question", q, row.line))
            continue
        if q.id not in outputs:
            errors.append(
                ItemError(
                    row.index, "question", f"run {run_id} has no output for {q.external_id!r}", row.line
                )
            )
            continue
        if q.id in seen:
            prev = seen[q.id]
            where = f"line {prev.line}" if prev.line is not None else f"index {prev.index}"
            errors.append(
                ItemError(
                    row.index, "question", f"second row for {q.external_id!r} (first at {where})", row.line
                )
            )
            continue
        seen[q.id] = row
        for m in metrics:
            try:
                values.append((outputs[q.id].id, m, to_float(data.get(m.column))))
            except (TypeError, ValueError) as exc:
                errors.append(ItemError(row.index, m.column, f"not a number: {exc}", row.line))
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows("scores", rows, errors)
    created, updated, unchanged = upsert_scores(session, lib, values)
    notes = [*notes_of(rows), f"imported {', '.join(m.name for m in metrics)}"]
    if other:
        notes.append(f"columns not imported (not numbers): {', '.join(other)}")
    return ImportReport(
        kind="scores", received=len(rows), created=created, updated=updated, unchanged=unchanged, notes=notes
    )


def upsert_scores(
    session: Session, library: str, values: Sequence[tuple[int, ExternalMetric, float | None]]
) -> tuple[int, int, int]:
    """Insert or update imported values (one per output and metric); counts created, updated, unchanged."""
    repo = ScoreRepository(session)
    by_metric: dict[str, list[tuple[int, ExternalMetric, float | None]]] = {}
    for item in values:
        by_metric.setdefault(item[1].name, []).append(item)
    created = updated = unchanged = 0
    new_rows: list[dict[str, Any]] = []
    for name, items in by_metric.items():
        existing = repo.existing([oid for oid, _, _ in items], name, EXTERNAL_CONFIG)
        for oid, metric, value in items:
            row = score_row(metric, library, oid, value)
            score = existing.get(oid)
            if score is None:
                new_rows.append(row)
                created += 1
            elif (score.value, score.details) == (value, row["details"]):
                unchanged += 1
            else:
                score.value, score.reason, score.details = value, row["reason"], row["details"]
                score.error = None
                updated += 1
    repo.insert_rows(MetricScore, new_rows)
    repo.flush()
    return created, updated, unchanged
