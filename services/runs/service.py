"""Runs and outputs: create runs, upsert outputs of any RAG system (native, Ragas or RAGChecker rows).

Output imports follow the dataset rules: the whole batch is validated before anything is written
(InvalidItems lists every bad row) and re-importing the same outputs changes nothing.

An output's version (and with it its ratings and scores) moves on only when its *content* changes: what a
rater or a metric sees, i.e. the answer and the retrieved chunks (document, offsets, text) in rank order.
Everything else is metadata (chunk retriever scores and how each chunk was located, latency, generator):
a value the import gives replaces the stored one without touching the version; a value it leaves out
(absent or null, as the Ragas and RAGChecker shapes always do) keeps the stored one while the content is
unchanged. When the content changes, the output takes only what the import gives: stored metadata described
the answer and retrieval that were replaced.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from sqlalchemy.orm import Session

from services.datasets.repository import DatasetRepository
from services.datasets.schemas import ImportReport
from services.datasets.service import get_dataset
from services.errors import Conflict, ItemError, NotFound
from services.ingest import Batch, Row, notes_of
from services.locate import NormalizedText, locate
from services.models import Document, Output, Question, Run
from services.pagination import Page, PageRequest, map_page, take
from services.runs.repository import (
    CHUNK_FIELDS,
    VALUE_FIELDS,
    Fingerprint,
    RunRepository,
    StoredOutput,
)
from services.runs.schemas import (
    ChunkIn,
    ChunkRead,
    NativeOutput,
    OutputFormat,
    OutputRead,
    RagasOutput,
    RagCheckerOutput,
    RunCreate,
    RunRead,
)
from services.validation import invalid_rows, validate_rows


def get_run(session: Session, run_id: int) -> Run:
    run = RunRepository(session).get(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    return run


def lock_run(session: Session, run_id: int) -> Run:
    """The run, locked for writing its outputs, ratings or scores (see RunRepository.get_for_update)."""
    run = RunRepository(session).get_for_update(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    return run


def create_run(session: Session, dataset_id: int, data: RunCreate) -> RunRead:
    get_dataset(session, dataset_id)
    repo = RunRepository(session)
    existing = repo.by_name(dataset_id, data.name)
    if existing is not None:
        raise Conflict(
            f"dataset {dataset_id} already has a run named {data.name!r} (id {existing.id})",
            [ItemError(None, "name", f"already taken by run {existing.id}")],
        )
    run = Run(
        dataset_id=dataset_id,
        name=data.name,
        system=data.system.model_dump(exclude_none=True),
        meta=data.metadata,
    )
    repo.add(run)
    repo.flush()
    return run_read(session, run)


def run_read(session: Session, run: Run) -> RunRead:
    outputs, rated = RunRepository(session).counts(run.id)
    return RunRead(
        id=run.id,
        dataset_id=run.dataset_id,
        name=run.name,
        system=run.system or {},
        metadata=run.meta or {},
        outputs=outputs,
        rated_outputs=rated,
    )


def list_runs(session: Session, dataset_id: int, page: PageRequest) -> Page[RunRead]:
    get_dataset(session, dataset_id)
    after = page.after[0] if page.after else None
    runs = take(RunRepository(session).all(dataset_id, after, page.limit + 1), page.limit, lambda r: (r.id,))
    return map_page(runs, lambda r: run_read(session, r))


@dataclass
class _Parsed:
    row: Row
    question: Question | None
    answer: str
    chunks: list[ChunkIn]
    # None when the row does not say; ``default_generator`` then describes a new output.
    generator: dict[str, Any] | None
    default_generator: dict[str, Any]
    latency_ms: float | None
    errors: list[ItemError] = field(default_factory=list)


class _Questions:
    def __init__(self, questions: list[Question]) -> None:
        self.by_id = {q.external_id: q for q in questions}
        self.by_text: dict[str, list[Question]] = defaultdict(list)
        for q in questions:
            self.by_text[q.question].append(q)

    def match(self, row: Row, ext_id: str | None, text: str | None, id_field: str, text_field: str) -> Any:
        if ext_id is not None:
            q = self.by_id.get(ext_id)
            if q is None:
                return ItemError(row.index, id_field, f"unknown question {ext_id!r}", row.line)
            return q
        hits = self.by_text.get(text or "", [])
        if not hits:
            return ItemError(
                row.index, text_field, "no question of the dataset has exactly this text", row.line
            )
        if len(hits) > 1:
            ids = ", ".join(repr(h.external_id) for h in hits[:5])
            return ItemError(
                row.index,
                text_field,
                f"ambiguous: {len(hits)} questions have this text ({ids}); give question_id",
                row.line,
            )
        return hits[0]


def detect_format(rows: list[Row]) -> OutputFormat:
    first = next((r.data for r in rows if isinstance(r.data, dict)), {})
    if "user_input" in first:
        return "ragas"
    if "query_id" in first or "retrieved_context" in first:
        return "ragchecker"
    return "native"


def _normalise(
    rows: list[Row], fmt: OutputFormat, questions: _Questions
) -> tuple[list[_Parsed], list[ItemError]]:
    models: dict[str, type[BaseModel]] = {
        "native": NativeOutput,
        "ragas": RagasOutput,
        "ragchecker": RagCheckerOutput,
    }
    model = models["native" if fmt == "auto" else fmt]
    good, errors = validate_rows(rows, model)
    parsed: list[_Parsed] = []
    for row, item in good:
        if isinstance(item, NativeOutput):
            q = questions.match(row, item.question_id, None, "question_id", "question_id")
            p = _Parsed(
                row,
                None,
                item.answer,
                item.retrieved,
                item.generator or None,
                {"kind": "external"},
                item.latency_ms,
            )
        elif isinstance(item, RagasOutput):
            q = questions.match(row, item.question_id, item.user_input, "question_id", "user_input")
            chunks = [ChunkIn(text=t) for t in item.retrieved_contexts if t.strip()]
            p = _Parsed(row, None, item.response, chunks, None, {"kind": "external", "format": "ragas"}, None)
        else:
            assert isinstance(item, RagCheckerOutput)
            q = questions.match(row, item.query_id, None, "query_id", "query")
            chunks = [
                ChunkIn(document_id=c.doc_id, text=c.text) for c in item.retrieved_context if c.text.strip()
            ]
            p = _Parsed(
                row, None, item.response, chunks, None, {"kind": "external", "format": "ragchecker"}, None
            )
        if isinstance(q, ItemError):
            errors.append(q)
        else:
            p.question = q
            parsed.append(p)
    return parsed, errors


class _Locator:
    """Resolves chunks against the dataset's documents, normalising each document at most once."""

    def __init__(self, documents: dict[str, Document]) -> None:
        self.docs = documents
        self._norm: dict[str, NormalizedText] = {}

    def _normalized(self, ext: str) -> NormalizedText:
        if ext not in self._norm:
            self._norm[ext] = NormalizedText(self.docs[ext].text)
        return self._norm[ext]

    def resolve(self, chunk: ChunkIn, row: Row, field: str) -> tuple[dict[str, Any] | None, ItemError | None]:
        if chunk.start is not None and chunk.end is not None and chunk.document_id is not None:
            doc = self.docs.get(chunk.document_id)
            if doc is None:
                return None, ItemError(
                    row.index, f"{field}.document_id", f"unknown document {chunk.document_id!r}", row.line
                )
            if chunk.start >= chunk.end:
                return None, ItemError(
                    row.index,
                    f"{field}.end",
                    f"end {chunk.end} must be greater than start {chunk.start}",
                    row.line,
                )
            if chunk.end > len(doc.text):
                return None, ItemError(
                    row.index, f"{field}.end", f"beyond document length {len(doc.text)}", row.line
                )
            span = doc.text[chunk.start : chunk.end]
            if chunk.text is not None and chunk.text != span:
                return None, ItemError(
                    row.index, f"{field}.text", "does not match the document span", row.line
                )
            return {
                "document": doc,
                "start": chunk.start,
                "end": chunk.end,
                "text": span,
                "location": "given",
            }, None
        text = chunk.text or ""
        candidates = [chunk.document_id] if chunk.document_id in self.docs else []
        candidates += [ext for ext in self.docs if ext not in candidates]
        for how in ("exact", "normalized"):
            for ext in candidates:
                doc = self.docs[ext]
                if how == "exact":
                    i = doc.text.find(text)
                    if i >= 0:
                        return {
                            "document": doc,
                            "start": i,
                            "end": i + len(text),
                            "text": text,
                            "location": how,
                        }, None
                else:
                    hit = locate(text, doc.text, self._normalized(ext))
                    if hit.how == "normalized":
                        return {
                            "document": doc,
                            "start": hit.start,
                            "end": hit.end,
                            "text": text,
                            "location": how,
                        }, None
        known = self.docs.get(chunk.document_id or "")
        return {"document": known, "start": None, "end": None, "text": text, "location": "unlocated"}, None


def _content(answer: str | None, chunks: list[dict[str, Any]]) -> Any:
    """What raters and metrics see of an output: the answer and the chunks' spans and texts, in rank order."""
    return answer, [(c["document_id"], c["start"], c["end"], c["text"]) for c in chunks]


_chunk_key = operator.itemgetter(*CHUNK_FIELDS)
_values_key = operator.itemgetter(*VALUE_FIELDS)


def fingerprint(values: dict[str, Any], chunks: list[dict[str, Any]]) -> Fingerprint:
    """Everything an import writes for one output, as one comparable value: its ``VALUE_FIELDS`` and its
    chunk rows' ``CHUNK_FIELDS`` in rank order (``StoredOutput.fingerprint`` is the same of the stored
    rows). Equal fingerprints: the import leaves the output's rows as they are."""
    return _values_key(values), tuple(map(_chunk_key, chunks))


@dataclass
class ResolvedOutput:
    """An output ready to write: its question, answer and chunks already resolved against the documents
    (each chunk: ``document`` (a Document or None), ``start``, ``end``, ``text``, ``score``, ``location`` and
    optionally ``match_score``)."""

    question: Question
    answer: str
    chunks: list[dict[str, Any]]
    # None when the source does not say; ``default_generator`` then describes a new output.
    generator: dict[str, Any] | None
    default_generator: dict[str, Any]
    latency_ms: float | None


@dataclass(frozen=True)
class WrittenOutputs:
    created: int
    updated: int
    unchanged: int
    invalidated_ratings: int
    invalidated_scores: int


def _merge(
    p: ResolvedOutput, chunks: list[dict[str, Any]], out: StoredOutput | None
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """The output and chunk rows to store, and what the import does: "create", "unchanged", "metadata" (the
    version stays) or "content" (the version moves on)."""
    values: dict[str, Any] = {
        "answer": p.answer,
        "generator": p.generator or p.default_generator,
        "latency_ms": p.latency_ms,
        "error": None,
    }
    rows = [
        {
            "document_id": c["document"].id if c["document"] is not None else None,
            "start": c["start"],
            "end": c["end"],
            "text": c["text"],
            "score": c["score"],
            "location": c["location"],
            "match_score": c.get("match_score"),
        }
        for c in chunks
    ]
    if out is None:
        return values, rows, "create"
    (old_answer, old_generator, old_latency, _), old_rows = out.fingerprint
    # Positions of CHUNK_FIELDS: 0-3 the content (document_id, start, end, text), 4 score, 5 location,
    # 6 match_score.
    if _content(p.answer, rows) != (old_answer, [old[:4] for old in old_rows]):
        return values, rows, "content"
    # Same content: what the row leaves out is kept, so a shape without scores or a generator erases nothing.
    if p.generator is None:
        values["generator"] = old_generator
    if p.latency_ms is None:
        values["latency_ms"] = old_latency
    for row, old in zip(rows, old_rows, strict=True):
        if row["score"] is None:
            row["score"] = old[4]
        if row["location"] == old[5] and row["match_score"] is None:
            row["match_score"] = old[6]
    return values, rows, "unchanged" if fingerprint(values, rows) == out.fingerprint else "metadata"


_NATIVE_KEYS = frozenset(NativeOutput.model_fields)
_SPAN_KEYS = frozenset(("document_id", "start", "end", "score"))
_NUMBER = (int, float)


def _unchanged_natives(
    rows: list[Row],
    fmt: OutputFormat,
    questions: _Questions,
    stored: dict[int, StoredOutput],
    documents: dict[str, Document],
) -> set[int]:
    """Positions of the rows that would leave their stored output as it is, read from the rows as sent.

    A re-import of unchanged outputs spends most of its time validating rows and locating chunks only to
    find that nothing changes; a native JSON row whose fields have the exact types the model accepts and
    whose values equal the stored output's fingerprint (chunks given by document and offsets, the same
    span of the document's current text) is known to be unchanged without either. Anything else (another
    format, a CSV file, text chunks, a value to coerce, a question sent twice) goes the whole way.
    """
    if fmt != "native" or (isinstance(rows, Batch) and rows.columns is not None):
        return set()
    by_id = {d.id: d for d in documents.values()}
    same: set[int] = set()
    sent: set[object] = set()
    for i, row in enumerate(rows):
        data = row.data
        ext = data.get("question_id") if isinstance(data, dict) else None
        if not isinstance(ext, str):
            continue
        if ext in sent:
            return set()  # the whole batch is validated, and the duplicate named, the whole way
        sent.add(ext)
        q = questions.by_id.get(ext)
        out = stored.get(q.id) if q is not None else None
        if out is not None and _same_native(data, out, by_id):
            same.add(i)
    return same


def _same_native(data: dict[str, Any], out: StoredOutput, documents: dict[int, Document]) -> bool:
    (answer, generator, latency, error), chunks = out.fingerprint
    if error is not None or not data.keys() <= _NATIVE_KEYS or type(data.get("answer")) is not str:
        return False
    if data["answer"] != answer:
        return False
    # Left out (or empty): the stored generator and latency stay, as the merge keeps them.
    gen = data.get("generator")
    if gen is not None and (type(gen) is not dict or (gen and gen != generator)):
        return False
    lat = data.get("latency_ms")
    if lat is not None and (type(lat) not in _NUMBER or lat != latency):
        return False
    sent = data.get("retrieved", [])
    if type(sent) is not list or len(sent) != len(chunks):
        return False
    for c, (doc_id, start, end, text, score, location, _) in zip(sent, chunks, strict=True):
        if type(c) is not dict or not c.keys() <= _SPAN_KEYS or location != "given":
            return False
        if type(c.get("start")) is not int or type(c.get("end")) is not int:
            return False
        if c["start"] != start or c["end"] != end:
            return False
        doc = documents.get(doc_id) if doc_id is not None else None
        if doc is None or c.get("document_id") != doc.external_id or doc.text[start:end] != text:
            return False
        s = c.get("score")
        if s is not None and (type(s) not in _NUMBER or s != score):
            return False
    return True


def import_outputs(
    session: Session, run_id: int, rows: list[Row], fmt: OutputFormat = "auto"
) -> ImportReport:
    """Upsert outputs of a run, one per question.

    Fails (InvalidItems) on invalid rows, unknown or ambiguous questions, two rows for one question, chunks
    pointing outside their document. Text-only chunks that cannot be found are kept, marked unlocated.
    """
    run = lock_run(session, run_id)
    drepo = DatasetRepository(session)
    questions = _Questions(list(drepo.questions_to_match(run.dataset_id)))
    fmt = detect_format(rows) if fmt == "auto" else fmt
    repo = RunRepository(session)
    # Compared as plain stored rows: an unchanged output is decided from its fingerprint, nothing written.
    existing = repo.stored_outputs(run_id)
    documents = drepo.documents_by_external_id(run.dataset_id)
    same = _unchanged_natives(rows, fmt, questions, existing, documents)
    parsed, errors = _normalise(
        [r for i, r in enumerate(rows) if i not in same] if same else rows, fmt, questions
    )
    seen: dict[int, Row] = {}
    for p in parsed:
        assert p.question is not None
        if p.question.id in seen:
            prev = seen[p.question.id]
            where = f"line {prev.line}" if prev.line is not None else f"index {prev.index}"
            errors.append(
                ItemError(
                    p.row.index,
                    "question_id",
                    f"second output for {p.question.external_id!r} (first at {where})",
                    p.row.line,
                )
            )
        seen[p.question.id] = p.row
    locator = _Locator(documents)
    resolved: list[tuple[_Parsed, list[dict[str, Any]]]] = []
    for p in parsed:
        chunks = []
        for i, chunk in enumerate(p.chunks):
            res, err = locator.resolve(chunk, p.row, f"retrieved[{i}]")
            if err is not None:
                errors.append(err)
            elif res is not None:
                res["score"] = chunk.score
                chunks.append(res)
        resolved.append((p, chunks))
    if errors:
        errors.sort(key=lambda e: (e.index if e.index is not None else -1, e.field))
        raise invalid_rows("outputs", rows, errors)

    written = write_outputs(
        session,
        run_id,
        [
            ResolvedOutput(p.question, p.answer, chunks, p.generator, p.default_generator, p.latency_ms)
            for p, chunks in resolved
            if p.question is not None
        ],
        existing,
    )
    return ImportReport(
        kind="outputs",
        received=len(rows),
        created=written.created,
        updated=written.updated,
        unchanged=written.unchanged + len(same),
        invalidated_ratings=written.invalidated_ratings,
        invalidated_scores=written.invalidated_scores,
        notes=notes_of(rows),
    )


def write_outputs(
    session: Session,
    run_id: int,
    outputs: list[ResolvedOutput],
    existing: dict[int, StoredOutput] | None = None,
) -> WrittenOutputs:
    """Upsert resolved outputs of a run (one per question; the run locked by the caller): set-based
    writes, the version moved on (and ratings and scores retired) only where the content changed.
    ``existing``: the run's stored outputs by question id when the caller has read them already."""
    repo = RunRepository(session)
    if existing is None:
        existing = repo.stored_outputs(run_id)
    unchanged = 0
    changed: list[int] = []
    new_outputs: list[dict[str, Any]] = []
    updated_outputs: list[dict[str, Any]] = []
    new_chunks: dict[int, list[dict[str, Any]]] = {}
    updated_chunks: dict[int, list[dict[str, Any]]] = {}
    for p in outputs:
        out = existing.get(p.question.id)
        values, chunk_rows, action = _merge(p, p.chunks, out)
        if action == "unchanged":
            unchanged += 1
            continue
        ranked = [{"rank": rank, **c} for rank, c in enumerate(chunk_rows, start=1)]
        if out is None:
            new_outputs.append({"run_id": run_id, "question_id": p.question.id, **values})
            new_chunks[p.question.id] = ranked
        else:
            if action == "content":
                changed.append(out.id)
            updated_outputs.append({"id": out.id, **values})
            updated_chunks[out.id] = ranked
    # Set-based writes: one statement per kind of row, whatever the batch size.
    created_ids = repo.insert_outputs(new_outputs)
    repo.update_outputs(updated_outputs)
    repo.replace_chunk_rows(
        {**updated_chunks, **{created_ids[qid]: rows_ for qid, rows_ in new_chunks.items()}},
        replace=list(updated_chunks),
    )
    # A new answer (or new chunks) makes the old answer's ratings and scores stale.
    ratings, scores = repo.retire_dependants(changed)
    return WrittenOutputs(len(new_outputs), len(updated_outputs), unchanged, ratings, scores)


def output_read(o: Output, question_external_id: str) -> OutputRead:
    return OutputRead(
        id=o.id,
        question_id=question_external_id,
        answer=o.answer,
        error=o.error,
        generator=o.generator or {},
        latency_ms=o.latency_ms,
        retrieved=[
            ChunkRead(
                rank=c.rank,
                document_id=None,
                start=c.start,
                end=c.end,
                text=c.text,
                score=c.score,
                location=c.location,
                match_score=c.match_score,
            )
            for c in o.chunks
        ],
    )


def list_outputs(session: Session, run_id: int, page: PageRequest | None = None) -> Page[OutputRead]:
    """The run's outputs in question order; with ``page``, one page of them (read with one query for the
    outputs and one per kind of external id, whatever the run's size)."""
    get_run(session, run_id)
    after = page.after[0] if page and page.after else None
    limit = page.limit + 1 if page else None
    outputs = RunRepository(session).outputs(run_id, after, limit)
    paged = take(outputs, page.limit, lambda o: (o.question_id,)) if page else Page(list(outputs), None)
    drepo = DatasetRepository(session)
    questions = drepo.external_ids(Question, (o.question_id for o in paged.items))
    docs = drepo.external_ids(
        Document, (c.document_id for o in paged.items for c in o.chunks if c.document_id)
    )
    result = []
    for o in paged.items:
        read = output_read(o, questions[o.question_id])
        for chunk, stored in zip(read.retrieved, o.chunks, strict=True):
            chunk.document_id = docs.get(stored.document_id) if stored.document_id is not None else None
        result.append(read)
    return Page(result, paged.next_key)
