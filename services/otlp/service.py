"""Traces into a run, in the three phases of the study import (services.studies.service): a short read of
the dataset (``snapshot``), mapping and locating with no database (``plan``), one short write (``write``)
that checks the documents did not change meanwhile (StaleSnapshot: plan again).

Questions are found by their exact text, else created with the study import's identity (``q-`` and a hash
of the text), so a study file and a trace of the same question meet on one question. Chunks are located in
the dataset's documents as the study import locates them (services.corpus: exact, normalised, then fuzzy at
or above ``FUZZY_THRESHOLD``; a ``document.id`` naming a document is tried first); a chunk not found is kept,
unlocated. An output remembers its trace in its generator (``{"kind": "external", "format": "otlp",
"trace_id": ..., "span_ids": [...]}``): the trace id (or, for a span annotation, one of its span ids)
is how later annotation imports (services.annotations) find it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from services.corpus import Corpus
from services.errors import InvalidItems, ItemError, NotFound
from services.models import Question, Run
from services.otlp.mapping import Mapped, TraceOutput
from services.otlp.repository import TraceRepository
from services.otlp.schemas import (
    DATASET_HEADER,
    RUN_HEADER,
    OutputCounts,
    PartialSuccess,
    TraceIngestRead,
    UnmappedSpan,
)
from services.runs.service import ResolvedOutput, lock_run, write_outputs
from services.studies.plan import StaleSnapshot
from services.studies.repository import StoredDocument
from services.studies.schemas import Located

FUZZY_THRESHOLD = 90.0
MAX_NAME = 200


@dataclass(frozen=True)
class Target:
    dataset: str
    run: str


def target(dataset: str | None, run: str | None) -> Target:
    """The dataset and run the headers name; InvalidItems naming each header missing or too long."""
    errors = []
    for header, value in ((DATASET_HEADER, dataset), (RUN_HEADER, run)):
        if value is None or not value.strip():
            errors.append(ItemError(None, header, "missing: the header names the dataset and the run"))
        elif len(value.strip()) > MAX_NAME:
            errors.append(ItemError(None, header, f"longer than {MAX_NAME} characters"))
        elif "\x00" in value:
            errors.append(ItemError(None, header, "holds a NUL character"))
    if errors:
        raise InvalidItems("the target dataset and run are named by two headers", errors)
    assert dataset is not None and run is not None
    return Target(dataset.strip(), run.strip())


@dataclass(frozen=True)
class Snapshot:
    dataset_id: int
    documents: list[StoredDocument]
    stamp: tuple[Any, ...]


def snapshot(session: Session, where: Target) -> Snapshot:
    repo = TraceRepository(session)
    ds = repo.dataset_by_name(where.dataset)
    if ds is None:
        raise NotFound(
            f"no dataset is named {where.dataset!r}: create it (with its documents) first",
            [ItemError(None, DATASET_HEADER, f"unknown dataset {where.dataset!r}")],
        )
    return Snapshot(ds.id, repo.documents(ds.id), repo.document_stamp(ds.id))


@dataclass
class PlannedChunk:
    doc: int | None  # index in the snapshot's documents
    start: int | None
    end: int | None
    text: str
    score: float | None
    how: str
    match_score: float | None


@dataclass
class Plan:
    snapshot: Snapshot
    target: Target
    mapped: Mapped
    chunks: list[list[PlannedChunk]]  # per output of ``mapped``


def question_key(text: str) -> str:
    """The study import's identity of a question given by its text only."""
    return "q-" + hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]


def plan(snap: Snapshot, where: Target, mapped: Mapped) -> Plan:
    """Locate every retrieved chunk in the dataset's documents (CPU, no database)."""
    corpus = Corpus([d.text for d in snap.documents])
    by_ext = {d.external_id: i for i, d in enumerate(snap.documents)}
    texts = sorted({c.text.strip() for o in mapped.outputs for c in o.chunks if c.text.strip()})
    cands = dict(zip(texts, corpus.candidates(texts), strict=True)) if snap.documents else {}
    planned: list[list[PlannedChunk]] = []
    for o in mapped.outputs:
        row = []
        for c in o.chunks:
            hint = by_ext.get(c.document_id) if c.document_id is not None else None
            if not snap.documents:
                row.append(PlannedChunk(None, None, None, c.text, c.score, "unlocated", None))
                continue
            m = corpus.locate(c.text, cands.get(c.text.strip()), hint, FUZZY_THRESHOLD)
            if m.located:
                row.append(PlannedChunk(m.doc, m.start, m.end, c.text, c.score, m.how, m.score))
            else:
                row.append(PlannedChunk(hint, None, None, c.text, c.score, "unlocated", m.score))
        planned.append(row)
    return Plan(snap, where, mapped, planned)


def _located(chunks: list[list[PlannedChunk]]) -> Located:
    flat = [c for row in chunks for c in row]
    counts = Counter(c.how for c in flat)
    fuzzy = [c.match_score for c in flat if c.how == "fuzzy" and c.match_score is not None]
    return Located(
        total=len(flat),
        exact=counts["exact"],
        normalized=counts["normalized"],
        fuzzy=counts["fuzzy"],
        unlocated=counts["unlocated"],
        lowest_fuzzy_score=min(fuzzy) if fuzzy else None,
    )


def _generator(o: TraceOutput) -> dict[str, Any]:
    gen: dict[str, Any] = {
        "kind": "external",
        "format": "otlp",
        "trace_id": o.trace_id,
        "span_ids": o.span_ids,
    }
    if o.model:
        gen["model"] = o.model
    return gen


def write(session: Session, p: Plan) -> TraceIngestRead:
    """Write a plan in the current transaction: the run (created when the dataset has none of this name),
    the questions not yet in the dataset, and the outputs (upserted: a trace sent again changes nothing)."""
    repo = TraceRepository(session)
    snap = p.snapshot
    ds = repo.lock_dataset(snap.dataset_id)
    if ds is None or repo.document_stamp(snap.dataset_id) != snap.stamp:
        raise StaleSnapshot(
            f"the documents of dataset {snap.dataset_id} changed while the traces were located; nothing was "
            "written",
            [ItemError(None, DATASET_HEADER, "documents changed concurrently")],
        )
    run_id, created_run = _target_run(repo, ds.id, p.target.run)
    lock_run(session, run_id)
    found, new_rows = _questions(repo, ds.id, p.mapped.outputs)
    resolved = _resolved(p, found)
    written = write_outputs(session, run_id, resolved)
    unmapped = [
        UnmappedSpan(trace_id=u.trace_id, span_id=u.span_id, name=u.name, kind=u.kind, reason=u.reason)
        for u in p.mapped.unmapped
    ]
    docs = snap.documents
    notes = []
    if not docs and any(p.chunks):
        notes.append(
            f"dataset {ds.id} has no documents: every retrieved chunk is kept unlocated (import the corpus "
            "to give the outputs word-level recall)"
        )
    located = _located(p.chunks)
    if located.unlocated and docs:
        notes.append(
            f"{located.unlocated} retrieved chunk(s) were not found in the dataset's documents (kept, marked "
            "unlocated)"
        )
    message = ""
    if unmapped:
        reasons = Counter(u.reason for u in unmapped)
        message = f"{len(unmapped)} span(s) gave no part of an output: " + "; ".join(
            f"{n} x {r}" for r, n in reasons.most_common(5)
        )
    return TraceIngestRead(
        dataset_id=ds.id,
        run_id=run_id,
        run=p.target.run,
        run_created=created_run,
        traces=p.mapped.traces,
        spans=p.mapped.spans,
        outputs=OutputCounts(
            created=written.created,
            updated=written.updated,
            unchanged=written.unchanged,
            invalidated_ratings=written.invalidated_ratings,
            invalidated_scores=written.invalidated_scores,
        ),
        questions_created=len(new_rows),
        chunks=located,
        unmapped_spans=len(unmapped),
        unmapped=unmapped,
        notes=notes,
        partial_success=PartialSuccess(rejected_spans=len(unmapped), error_message=message),
    )


def _target_run(repo: TraceRepository, dataset_id: int, name: str) -> tuple[int, bool]:
    """The id of the dataset's run of this name, created when there is none; and whether it was created."""
    run = repo.run_by_name(dataset_id, name)
    if run is not None:
        return run.id, False
    [run_id] = repo.insert_rows(
        Run,
        [{"dataset_id": dataset_id, "name": name, "system": {}, "meta": {"source": "otlp"}}],
        with_ids=True,
    )
    return run_id, True


def _questions(
    repo: TraceRepository, dataset_id: int, outputs: list[TraceOutput]
) -> tuple[dict[str, list[Question]], list[dict[str, Any]]]:
    """The dataset's questions by text for every trace question, those missing inserted (their rows returned
    too); InvalidItems when a trace question is the text of several questions of the dataset."""
    wanted = sorted({o.question for o in outputs})
    found = repo.questions_by_text(dataset_id, wanted)
    ambiguous = {t: qs for t, qs in found.items() if len(qs) > 1}
    if ambiguous:
        raise InvalidItems(
            f"{len(ambiguous)} trace question(s) match several questions of the dataset",
            [
                ItemError(
                    None,
                    "input.value",
                    f"{text[:80]!r} is the text of questions "
                    + ", ".join(repr(q.external_id) for q in qs[:5]),
                )
                for text, qs in list(ambiguous.items())[:20]
            ],
        )
    missing = [t for t in wanted if t not in found]
    taken = repo.taken_external_ids(dataset_id, [question_key(t) for t in missing])
    new_rows: list[dict[str, Any]] = []
    for t in missing:
        key = question_key(t)
        if key in taken:  # the same hash for another text: unlikely, kept apart
            key = "q-" + hashlib.sha1(t.encode("utf-8")).hexdigest()[:20]
        new_rows.append(
            {
                "dataset_id": dataset_id,
                "external_id": key,
                "question": t,
                "reference_answer": None,
                "answerable": True,
                "types": [],
                "meta": {"source": "otlp"},
            }
        )
    new_ids = repo.insert_rows(Question, new_rows, with_ids=True)
    for row, qid in zip(new_rows, new_ids, strict=True):
        stored = repo.question(qid)
        assert stored is not None
        found[str(row["question"])] = [stored]
    return found, new_rows


def _resolved(p: Plan, found: dict[str, list[Question]]) -> list[ResolvedOutput]:
    """The plan's outputs with their question and their chunks on the snapshot's documents."""
    docs = p.snapshot.documents
    return [
        ResolvedOutput(
            question=found[o.question][0],
            answer=o.answer,
            chunks=[
                {
                    "document": docs[c.doc] if c.doc is not None else None,
                    "start": c.start,
                    "end": c.end,
                    "text": c.text,
                    "score": c.score,
                    "location": c.how,
                    "match_score": c.match_score,
                }
                for c in chunks
            ],
            generator=_generator(o),
            default_generator=_generator(o),
            latency_ms=o.latency_ms,
        )
        for o, chunks in zip(p.mapped.outputs, p.chunks, strict=True)
    ]
