"""The study import's last phase: writing a checked plan in one transaction (``write``), and all three phases
on one session for the command line, tests and benchmarks (``import_study``)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from sqlalchemy.orm import Session

from services.errors import ItemError
from services.models import (
    Dataset,
    Document,
    MetricScore,
    Output,
    Passage,
    Question,
    Rater,
    RetrievedChunk,
    Run,
    utcnow,
)
from services.ratings.repository import RatingRepository
from services.ratings.service import ensure_default_rubric
from services.scores.external import (
    score_row,
)
from services.studies.plan import Plan, RunPlan, Snapshot, StaleSnapshot, StudyFiles
from services.studies.preferences import write_preferences
from services.studies.repository import StudyRepository
from services.studies.schemas import (
    CorpusInfo,
    DatasetRef,
    QuestionCounts,
    RatingsInfo,
    RunImportRead,
    RunRef,
    ScoresInfo,
    StudyImportRead,
    StudyOptions,
)
from services.studies.service import (
    check_run_name,
    count_located,
    plan,
    snapshot,
)


def write(session: Session, p: Plan) -> StudyImportRead:
    """Write a plan in the current transaction (StaleSnapshot when the dataset changed since the snapshot)."""
    repo = StudyRepository(session)
    now = utcnow()
    dataset_id, created_ds = _dataset(repo, p.snapshot)
    _write_documents(repo, p, dataset_id, now)
    created_qs, updated_qs = _write_questions(repo, p, dataset_id, now)
    run_reads, output_ids = _write_runs(repo, p, dataset_id)
    ratings_read = _write_ratings(session, p, run_reads, output_ids)
    preferences_read = write_preferences(
        session,
        p.preferences,
        [r.id for r in run_reads],
        [r.name for r in run_reads],
        [q.stored_id for q in p.questions],
        output_ids,
    )
    repo.flush()

    passages = [s for q in p.questions if q.passages for s in q.passages]
    first = run_reads[0] if run_reads else None
    return StudyImportRead(
        dataset=DatasetRef(id=dataset_id, name=p.snapshot.dataset_name, created=created_ds),
        run=RunRef(id=first.id, name=first.name) if first else None,
        runs=run_reads,
        format=p.formats[0],
        file=p.files[0],
        corpus=CorpusInfo(source=p.corpus_source, name=p.corpus_name, documents=p.document_counts),
        questions=QuestionCounts(
            received=len(p.questions),
            created=created_qs,
            updated=updated_qs,
            unchanged=sum(q.action == "keep" for q in p.questions),
            with_reference_answer=sum(q.reference_answer is not None for q in p.questions),
            with_gold_passages=sum(bool(q.passages) for q in p.questions),
        ),
        passages=count_located(passages),
        located_passages=p.located,
        outputs=first.outputs if first else 0,
        chunks=first.chunks if first else count_located([]),
        scores=first.scores if first else ScoresInfo(),
        ratings=ratings_read,
        preferences=preferences_read,
        fuzzy_threshold=p.options.fuzzy_threshold,
        fuzzy_word_changes=p.options.fuzzy_word_changes,
        notes=p.notes
        + p.passage_notes
        + (p.ratings.notes if p.ratings else [])
        + (p.preferences.notes if p.preferences else []),
    )


def _dataset(repo: StudyRepository, snap: Snapshot) -> tuple[int, bool]:
    """The dataset's id, locked and checked against the snapshot, or created; and whether it was created."""
    if snap.dataset_id is not None:
        ds = repo.lock_dataset(snap.dataset_id)
        if ds is None or repo.stamp(snap.dataset_id) != snap.stamp:
            raise StaleSnapshot(
                f"dataset {snap.dataset_id} changed while this import was prepared; nothing was written",
                [ItemError(None, "dataset", "changed concurrently")],
            )
        return snap.dataset_id, False
    taken = repo.dataset_by_name(snap.dataset_name)
    if taken is not None:
        raise StaleSnapshot(
            f"a dataset named {snap.dataset_name!r} was created meanwhile (id {taken.id}); "
            "nothing was written",
            [ItemError(None, "dataset", f"now taken by dataset {taken.id}")],
        )
    [dataset_id] = repo.insert_rows(
        Dataset,
        [{"name": snap.dataset_name, "language": snap.language, "description": None, "chunking": {}}],
        with_ids=True,
    )
    return dataset_id, True


def _write_documents(repo: StudyRepository, p: Plan, dataset_id: int, now: datetime) -> None:
    """New documents inserted (their ids set on the plan), changed ones updated."""
    new_docs = [d for d in p.documents if d.action == "create"]
    new_ids = repo.insert_rows(
        Document,
        [
            {
                "dataset_id": dataset_id,
                "external_id": d.external_id,
                "title": d.title,
                "text": d.text,
                "meta": d.meta,
            }
            for d in new_docs
        ],
        with_ids=True,
    )
    for d, i in zip(new_docs, new_ids, strict=True):
        d.stored_id = i
    repo.update_documents(
        [
            {"id": d.stored_id, "title": d.title, "text": d.text, "meta": d.meta, "updated_at": now}
            for d in p.documents
            if d.action == "update"
        ]
    )


def _write_questions(repo: StudyRepository, p: Plan, dataset_id: int, now: datetime) -> tuple[int, int]:
    """Questions inserted or updated (ids set on the plan), their passages replaced; (created, updated)."""
    new_qs = [q for q in p.questions if q.action == "create"]
    q_ids = repo.insert_rows(
        Question,
        [
            {
                "dataset_id": dataset_id,
                "external_id": q.external_id,
                "question": q.question,
                "reference_answer": q.reference_answer,
                "answerable": q.answerable,
                "types": q.types,
                "meta": q.meta,
            }
            for q in new_qs
        ],
        with_ids=True,
    )
    for q, i in zip(new_qs, q_ids, strict=True):
        q.stored_id = i
    changed = [q for q in p.questions if q.action == "update"]
    repo.update_questions(
        [
            {
                "id": q.stored_id,
                "question": q.question,
                "reference_answer": q.reference_answer,
                "answerable": q.answerable,
                "types": q.types,
                "updated_at": now,
            }
            for q in changed
        ]
    )
    replaced = [q for q in p.questions if q.passages is not None and q.action != "keep"]
    repo.delete_passages([q.stored_id for q in replaced if q.action == "update" and q.stored_id is not None])
    passage_rows = []
    for q in replaced:
        assert q.passages is not None
        for pos, s in enumerate(q.passages):
            assert s.doc is not None
            passage_rows.append(
                {
                    "question_id": q.stored_id,
                    "document_id": p.documents[s.doc].stored_id,
                    "position": pos,
                    "start": s.start,
                    "end": s.end,
                    "location": s.how,
                    "match_score": s.score,
                }
            )
    repo.insert_rows(Passage, passage_rows)
    return len(new_qs), len(changed)


def _write_runs(
    repo: StudyRepository, p: Plan, dataset_id: int
) -> tuple[list[RunImportRead], list[list[int]]]:
    """The runs, their outputs, chunks and scores; the runs' answers and each run's output ids."""
    run_reads: list[RunImportRead] = []
    output_ids: list[list[int]] = []
    # The notes about the dataset's passages are the report's to repeat; the others are about this upload.
    notes = [n for n in p.notes if n.startswith(("no corpus", "RAGChecker"))] + p.passage_notes
    for run in p.runs:
        check_run_name(repo, dataset_id, run.name)
        run_id, out_ids, n_scores = _write_run(repo, p, dataset_id, run, notes)
        output_ids.append(out_ids)
        run_reads.append(
            RunImportRead(
                id=run_id,
                name=run.name,
                format=run.format,
                file=run.file,
                outputs=len(run.outputs),
                chunks=count_located([c for o in run.outputs for c in o.chunks]),
                scores=ScoresInfo(
                    metrics=[m.name for m in run.metrics],
                    created=n_scores,
                    not_imported=run.not_imported,
                ),
            )
        )
    return run_reads, output_ids


def _write_run(
    repo: StudyRepository, p: Plan, dataset_id: int, run: RunPlan, notes: list[str]
) -> tuple[int, list[int], int]:
    """One run with its outputs, chunks and scores: (run id, output ids, scores written)."""
    k = max((len(o.chunks) for o in run.outputs), default=0)
    [run_id] = repo.insert_rows(
        Run,
        [
            {
                "dataset_id": dataset_id,
                "name": run.name,
                "system": {
                    "retriever": "external",
                    "generator": "external",
                    "k": k or None,
                    "format": run.format,
                },
                "meta": {
                    "import": {"format": run.format, "file": run.file.name, "rows": run.file.rows},
                    "notes": notes,
                },
            }
        ],
        with_ids=True,
    )
    out_ids = repo.insert_rows(
        Output,
        [
            {
                "run_id": run_id,
                "question_id": p.questions[o.question].stored_id,
                "answer": o.answer,
                "generator": {"kind": "external", "format": run.format},
                "latency_ms": None,
                "error": None,
            }
            for o in run.outputs
        ],
        with_ids=True,
    )
    chunk_rows = []
    score_rows = []
    for o, oid in zip(run.outputs, out_ids, strict=True):
        for rank, c in enumerate(o.chunks, start=1):
            chunk_rows.append(
                {
                    "output_id": oid,
                    "rank": rank,
                    "document_id": p.documents[c.doc].stored_id if c.doc is not None else None,
                    "start": c.start,
                    "end": c.end,
                    "text": c.text,
                    "score": None,
                    "location": c.how,
                    "match_score": c.score,
                }
            )
        for m in run.metrics:
            score_rows.append(score_row(m, run.library, oid, o.scores.get(m.name)))
    repo.insert_rows(RetrievedChunk, chunk_rows)
    repo.insert_rows(MetricScore, score_rows)
    return run_id, out_ids, len(score_rows)


def _write_ratings(
    session: Session, p: Plan, runs: list[RunImportRead], output_ids: list[list[int]]
) -> RatingsInfo | None:
    """The planned ratings, their raters registered and the default rubric made when missing."""
    if p.ratings is None:
        return None
    repo = RatingRepository(session)
    ensure_default_rubric(session)
    raters = repo.raters()
    missing = [name for name in p.ratings.raters if name not in raters]
    for name in missing:
        repo.add(Rater(name=name))
    repo.flush()
    raters = repo.raters()
    rubrics = repo.rubrics()
    unknown = sorted({r.rubric for r in p.ratings.ratings} - set(rubrics))
    if unknown:
        raise StaleSnapshot(
            f"rubric {unknown[0]!r} was deleted while this import was prepared; nothing was written",
            [ItemError(None, "ratings", "rubric removed concurrently")],
        )
    repo.insert_many(
        [
            {
                "output_id": output_ids[r.run][r.output],
                "rater_id": raters[r.rater].id,
                "rubric_id": rubrics[r.rubric].id,
                "score": r.score,
                "comment": r.comment,
            }
            for r in p.ratings.ratings
        ]
    )
    per_run = Counter(r.run for r in p.ratings.ratings)
    return RatingsInfo(
        files=p.ratings.files,
        received=p.ratings.received,
        created=len(p.ratings.ratings),
        raters=p.ratings.raters,
        raters_created=missing,
        by_run={runs[i].name: n for i, n in sorted(per_run.items())},
    )


def import_study(
    session: Session, files: StudyFiles, options: StudyOptions, max_bytes: int
) -> StudyImportRead:
    """All three phases on one session (one transaction): for the command line, tests and benchmarks."""
    return write(session, plan(snapshot(session, options), files, options, max_bytes))
