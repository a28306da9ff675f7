"""Reading a study file, whatever wrote it, into one shape: a question (with its reference answer and gold
passages) and, when it has one, the answer of the evaluated system with its retrieved contexts.

- Ragas: ``EvaluationDataset`` samples / experiment rows (``user_input``, ``response``,
  ``retrieved_contexts``, ``reference``, ``reference_contexts``, ``retrieved_context_ids``,
  ``reference_context_ids``) as the JSON list, the JSONL or the CSV Ragas writes (list cells as Python
  literals); metric columns of ``to_pandas()``.
- RAGChecker: the input or results JSON (``{"results": [{query_id, query, gt_answer, response,
  retrieved_context: [{doc_id, text}], metrics?}]}``); it has no gold passages.
- DeepEval: test cases / goldens (``input``, ``actual_output``, ``expected_output``, ``retrieval_context``,
  ``context``) as ``EvaluationDataset.save_as`` writes them (JSON lists; JSONL and CSV join lists with "|"),
  or a test run (``testCases`` with camelCase keys and ``metricsData``).
- mapped: any CSV/JSONL/JSON with one row per question; columns found by name (see ``ALIASES``) or given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from services import kinds
from services.csvread import is_missing, list_cell, normalise_header, read_csv
from services.errors import InvalidItems, ItemError, MalformedInput, WrongKind
from services.ingest import Format, Row, parse_rows
from services.scores.external import flatten
from services.studies.schemas import FIELDS, StudyFormat

LIST_KEYS = (
    "results",
    "samples",
    "test_cases",
    "testCases",
    "test_results",
    "goldens",
    "items",
    "data",
    "rows",
)

# Per format: field -> the keys it is read from (first present wins).
KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "ragas": {
        "question_id": ("question_id", "id", "qid"),
        "question": ("user_input",),
        "reference_answer": ("reference",),
        "answer": ("response",),
        "retrieved_contexts": ("retrieved_contexts",),
        "retrieved_ids": ("retrieved_context_ids",),
        "gold_passages": ("reference_contexts",),
        "gold_ids": ("reference_context_ids",),
        "types": ("types", "question_types", "synthesizer_name"),
    },
    "ragchecker": {
        "question_id": ("query_id",),
        "question": ("query",),
        "reference_answer": ("gt_answer",),
        "answer": ("response",),
        "retrieved_contexts": ("retrieved_context",),
    },
    "deepeval": {
        "question_id": (
            "question_id",
            "id",
            "additional_metadata.question_id",
            "additional_metadata.id",
            "additional_metadata.qid",
        ),
        "question": ("input",),
        "reference_answer": ("expected_output", "expectedoutput"),
        "answer": ("actual_output", "actualoutput"),
        "retrieved_contexts": ("retrieval_context", "retrievalcontext"),
        "gold_passages": ("context",),
        "types": ("tags",),
    },
}

# Plain files: accepted column names per field (normalised: lower case, underscores).
ALIASES: dict[str, tuple[str, ...]] = {
    "question_id": ("question_id", "qid", "id", "query_id", "question_ref"),
    "question": ("question", "query", "user_input", "input", "prompt", "question_text"),
    "reference_answer": (
        "reference_answer",
        "reference",
        "ground_truth",
        "expected_answer",
        "expected_output",
        "gt_answer",
        "gold_answer",
    ),
    "answer": ("answer", "response", "actual_output", "output", "generated_answer", "prediction"),
    "retrieved_contexts": (
        "retrieved_contexts",
        "contexts",
        "retrieved",
        "retrieval_context",
        "retrieved_chunks",
        "chunks",
    ),
    "retrieved_ids": ("retrieved_ids", "retrieved_context_ids", "retrieved_document_ids"),
    "gold_passages": (
        "gold_passages",
        "reference_contexts",
        "gold_contexts",
        "passages",
        "reference_passages",
        "gold",
        "evidence",
    ),
    "gold_ids": ("gold_ids", "reference_context_ids", "gold_document_ids"),
    "types": ("types", "type", "question_types", "tags", "category"),
    "answerable": ("answerable",),
}
LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "gold_passages", "gold_ids", "types")


@dataclass
class Context:
    """A passage or chunk as the file gives it: text (located later), maybe the document it comes from."""

    text: str | None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None


@dataclass
class StudyRow:
    index: int
    line: int | None
    question_id: str | None
    question: str
    reference_answer: str | None
    answer: str | None
    retrieved: list[Context]
    gold: list[Context]
    types: list[str]
    answerable: bool | None
    scores: dict[str, Any]
    source: dict[str, str] = field(default_factory=dict)  # field -> the column it was read from
    file: int = 0  # which of the import's study files


@dataclass
class Table:
    kind: Format
    rows: list[Row]
    encoding: str
    delimiter: str | None
    notes: list[str]
    columns: list[str] | None


@dataclass
class ParsedStudy:
    format: str
    table: Table
    rows: list[StudyRow]
    errors: list[ItemError]
    metric_columns: list[str]


def guess_kind(raw: bytes, name: str | None) -> Format:
    lower = (name or "").lower()
    if lower.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if lower.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lower.endswith(".json"):
        return "json"
    head = raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"[":
        return "json"
    if head == b"{":
        try:
            json.loads(raw.decode("utf-8", errors="replace"))
            return "json"
        except json.JSONDecodeError:
            return "jsonl"
    return "csv"


def read_table(raw: bytes, name: str | None, field_name: str) -> Table:
    """Rows of a JSON, JSONL or CSV file (kind from the name, else from the content)."""
    if not raw.strip():
        raise MalformedInput(f"{field_name} is empty", [ItemError(None, field_name, "no data")])
    kind = guess_kind(raw, name)
    if kind == "csv":
        t = read_csv(raw, field_name)
        rows = [Row(i, line, rec) for i, (line, rec) in enumerate(t.records)]
        return Table("csv", rows, t.encoding, t.delimiter, t.notes, t.columns)
    rows = parse_rows(raw, kind, field_name, LIST_KEYS)
    return Table(kind, rows, "utf-8", None, [], None)


def _lower_keys(data: dict[str, Any]) -> dict[str, Any]:
    return {normalise_header(str(k)): v for k, v in data.items()}


def detect_format(rows: list[Row]) -> str:
    found = kinds.detect(kinds.keys_of(r.data for r in rows))
    if found is None:
        return "mapped"
    kind, evidence = found
    if kind.name in ("ragas", "ragchecker", "deepeval"):
        return kind.name
    if kind.name == "outputs":
        return "mapped"
    message = kinds.wrong_kind_message(
        kind,
        evidence,
        "a study (Ragas, RAGChecker or DeepEval rows, or a table with question and answer columns)",
    )
    raise WrongKind(message, [ItemError(None, "file", message)])


def _text(value: Any) -> str | None:
    if is_missing(value):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"must be text, not {type(value).__name__}")


def _bool(value: Any) -> bool | None:
    if is_missing(value):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "oui", "vrai", "y"):
        return True
    if text in ("false", "0", "no", "non", "faux", "n"):
        return False
    raise ValueError("must be true or false")


def _list(value: Any, separator: str | None) -> list[Any]:
    if is_missing(value):
        return []
    value = list_cell(value, separator)
    if isinstance(value, str):
        return [value]  # one text in a list column: a list of one
    if not isinstance(value, list):
        raise ValueError(f"must be a list, not {type(value).__name__}")
    return value


def resolve_columns(
    columns: list[str], fmt: str, given: dict[str, str]
) -> tuple[dict[str, str], list[ItemError]]:
    """field -> key to read, for the format (or, for plain files, by accepted name), with the caller's
    mapping first; errors when a given column is absent or no question column is found."""
    out: dict[str, str] = {}
    errors: list[ItemError] = []
    present = set(columns)
    for name, column in given.items():
        key = normalise_header(column)
        if key not in present:
            errors.append(
                ItemError(
                    None, f"columns.{name}", f"no column {column!r}; the file has: {', '.join(columns)}"
                )
            )
        else:
            out[name] = key
    table = KEYS.get(fmt)
    for name in FIELDS:
        if name in out:
            continue
        names = table.get(name, ()) if table is not None else ALIASES[name]
        hit = next((n for n in names if n in present), None)
        if hit is not None:
            out[name] = hit
    if "question" not in out and not errors:
        names = KEYS[fmt]["question"] if fmt in KEYS else ALIASES["question"]
        errors.append(
            ItemError(
                None,
                "question",
                f"no question column: accepted names are {', '.join(names)} (ignoring case), or say which "
                f'column holds it with columns={{"question": ...}}; the file has: {", ".join(columns)}',
            )
        )
    return out, errors


def _contexts(values: list[Any], ids: list[Any], field_name: str) -> list[Context]:
    out = []
    hints = [str(i) if i is not None else None for i in ids] if len(ids) == len(values) else []
    for i, v in enumerate(values):
        hint = hints[i] if hints else None
        if isinstance(v, dict):  # RAGChecker {doc_id, text}; a native {document_id, start, end, text}
            d = _lower_keys(v)
            text = _text(d.get("text"))
            doc = d.get("doc_id", d.get("document_id"))
            start, end = d.get("start"), d.get("end")
            if start is not None or end is not None:
                if not (isinstance(start, int) and isinstance(end, int) and doc is not None):
                    raise ValueError(f"{field_name}[{i}]: offsets need document_id, start and end (integers)")
                out.append(Context(text, str(doc), start, end))
                continue
            if text is None or not text.strip():
                raise ValueError(f"{field_name}[{i}]: needs a non-empty text")
            out.append(Context(text, str(doc) if doc is not None else hint))
        elif isinstance(v, str):
            if v.strip():
                out.append(Context(v, hint))
        elif v is not None:
            raise ValueError(f"{field_name}[{i}]: must be text, not {type(v).__name__}")
    return out


def _nested(data: dict[str, Any]) -> dict[str, Any]:
    """Fields inside objects as dotted paths (``additional_metadata.question_id``), so that a format or a
    column mapping can read them; an object written as JSON text in a CSV cell counts as an object."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any, depth: int) -> None:
        if isinstance(value, str) and value.lstrip().startswith("{") and depth == 0:
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return
        if isinstance(value, dict) and depth < 4:
            for k, v in value.items():
                path = f"{prefix}.{normalise_header(str(k))}"
                out[path] = v
                walk(path, v, depth + 1)

    for key, value in data.items():
        walk(key, value, 0)
    return out


def parse_study(
    raw: bytes, name: str | None, fmt: StudyFormat, given: dict[str, str], separator: str | None
) -> ParsedStudy:
    """Read a study file into StudyRows; bad rows are listed in ``errors`` (never raised one by one)."""
    table = read_table(raw, name, "file")
    rows = [
        Row(r.index, r.line, flatten(_lower_keys(r.data)) if isinstance(r.data, dict) else r.data)
        for r in table.rows
    ]
    if not rows:
        raise InvalidItems("the file has no rows", [ItemError(None, "file", "no rows")])
    chosen = detect_format(rows) if fmt == "auto" else fmt
    nested: set[str] = set()
    for r in rows:
        if isinstance(r.data, dict):
            inner = _nested(r.data)
            nested |= set(inner)
            r.data.update({k: v for k, v in inner.items() if k not in r.data})
    if chosen == "deepeval" and table.kind in ("csv", "jsonl") and separator is None:
        separator = "|"  # what EvaluationDataset.save_as writes for lists in CSV and JSONL
    columns: list[str] = []
    for r in rows:
        if isinstance(r.data, dict):
            columns += [k for k in r.data if k not in columns]
    mapping, errors = resolve_columns(columns, chosen, given)
    if errors:
        raise InvalidItems(f"cannot read this file as {chosen} rows", errors)
    used = set(mapping.values())
    out: list[StudyRow] = []
    for r in rows:
        if not isinstance(r.data, dict):
            errors.append(ItemError(r.index, "(row)", "must be an object", r.line))
            continue
        d = r.data
        try:
            values = {f: d.get(k) for f, k in mapping.items()}
            lists = {f: _list(values.get(f), separator) for f in LIST_FIELDS}
            question = _text(values.get("question"))
            if question is None or not question.strip():
                raise ValueError(f"{mapping['question']}: the question is empty")
            qid = _text(values.get("question_id"))
            row = StudyRow(
                index=r.index,
                line=r.line,
                question_id=qid.strip() if qid and qid.strip() else None,
                question=question,
                reference_answer=_text(values.get("reference_answer")),
                answer=_text(values.get("answer")),
                retrieved=_contexts(
                    lists["retrieved_contexts"],
                    lists["retrieved_ids"],
                    mapping.get("retrieved_contexts", ""),
                ),
                gold=_contexts(lists["gold_passages"], lists["gold_ids"], mapping.get("gold_passages", "")),
                types=[str(t) for t in lists["types"] if str(t).strip()],
                answerable=_bool(values.get("answerable")),
                scores={k: v for k, v in d.items() if k not in used and k not in nested},
                source=mapping,
            )
        except ValueError as exc:
            errors.append(ItemError(r.index, "(row)", str(exc), r.line))
            continue
        if row.reference_answer is not None and not row.reference_answer.strip():
            row.reference_answer = None
        out.append(row)
    return ParsedStudy(chosen, table, out, errors, [])
