"""services.runs: runs, output imports in the three shapes (versions, metadata, history), the repository."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.errors import Conflict, InvalidItems, NotFound
from services.models import MetricScore, MetricScoreHistory, Output, Rating, RatingHistory, RetrievedChunk
from services.pagination import MAX_LIMIT, PageRequest
from services.ratings import service as ratings
from services.runs import service as runs
from services.runs.repository import RunRepository
from services.runs.schemas import RunCreate
from services.scores import service as scores
from tests.unit.services.factories import DOC_TEXT, dataset, raters, rows, run


def _output(db: Session, run_id: int, qid: str) -> Output:
    [o] = [o for o in RunRepository(db).outputs(run_id) if o.question_id == _question_id(db, run_id, qid)]
    return o


def _question_id(db: Session, run_id: int, ext: str) -> int:
    run_row = runs.get_run(db, run_id)
    return RunRepository(db).output_ids_by_question(run_row.dataset_id, run_id, [ext])[ext][0]


def test_create_run_and_its_failures(db: Session) -> None:
    ds = dataset(db)
    read = runs.create_run(db, ds, RunCreate(name="v1", system={"retriever": "bm25", "k": 5}))
    assert (read.dataset_id, read.name, read.system, read.outputs) == (
        ds,
        "v1",
        {"retriever": "bm25", "k": 5},
        0,
    )
    with pytest.raises(Conflict) as exc:
        runs.create_run(db, ds, RunCreate(name="v1"))
    assert [(e.field, e.reason) for e in exc.value.items] == [("name", f"already taken by run {read.id}")]
    # The same name in another dataset is another run.
    other = dataset(db, name="other")
    assert runs.create_run(db, other, RunCreate(name="v1")).id != read.id
    with pytest.raises(NotFound):
        runs.create_run(db, 999, RunCreate(name="x"))
    with pytest.raises(NotFound, match="run 999 does not exist"):
        runs.get_run(db, 999)
    with pytest.raises(NotFound):
        runs.import_outputs(db, 999, rows({"question_id": "q1", "answer": "a"}))
    assert [r.name for r in runs.list_runs(db, ds, PageRequest(MAX_LIMIT)).items] == ["v1"]


def test_output_reimport_counts_and_versions(db: Session) -> None:
    ds = dataset(db, n_questions=2)
    r = runs.create_run(db, ds, RunCreate(name="v1")).id
    items: list[dict[str, Any]] = [
        {"question_id": "q1", "answer": "Paris", "retrieved": [{"document_id": "d1", "start": 0, "end": 31}]},
        {"question_id": "q2", "answer": "Berlin", "latency_ms": 10},
    ]
    first = runs.import_outputs(db, r, rows(*items))
    assert (first.kind, first.created, first.updated, first.unchanged) == ("outputs", 2, 0, 0)
    assert runs.import_outputs(db, r, rows(*items)).unchanged == 2

    # Metadata only (latency, a chunk's score): updated, the version stays.
    items[1]["latency_ms"] = 20
    items[0]["retrieved"][0]["score"] = 0.5
    meta = runs.import_outputs(db, r, rows(*items))
    assert (meta.created, meta.updated, meta.unchanged, meta.invalidated_ratings) == (0, 2, 0, 0)
    q1, q2 = _output(db, r, "q1"), _output(db, r, "q2")
    assert (q1.version, q2.version, q2.latency_ms, q1.chunks[0].score) == (1, 1, 20, 0.5)
    # Leaving the latency out keeps the stored one while the content is the same.
    items[1].pop("latency_ms")
    assert runs.import_outputs(db, r, rows(*items)).unchanged == 2
    db.expire_all()
    assert _output(db, r, "q2").latency_ms == 20

    stored = db.scalars(select(RetrievedChunk).where(RetrievedChunk.output_id == q1.id)).one()
    assert (stored.rank, stored.start, stored.end, stored.text, stored.location) == (
        1,
        0,
        31,
        DOC_TEXT[:31],
        "given",
    )


def test_a_new_answer_moves_ratings_and_scores_to_history(db: Session) -> None:
    ds = dataset(db, n_questions=2)
    r = run(db, ds)
    raters(db, "ann")
    ratings.import_ratings(db, r, rows({"question_id": "q1", "rater": "ann", "score": 4}))
    scores.import_external_scores(db, r, rows({"question_id": "q1", "metric": "external.m", "value": 0.3}))
    report = runs.import_outputs(db, r, rows({"question_id": "q1", "answer": "a new answer"}))
    assert (report.updated, report.invalidated_ratings, report.invalidated_scores) == (1, 1, 1)
    db.expire_all()
    q1 = _output(db, r, "q1")
    assert (q1.version, q1.answer, q1.chunks, q1.latency_ms) == (2, "a new answer", [], None)
    assert db.scalar(select(func.count()).select_from(Rating)) == 0
    assert db.scalar(select(func.count()).select_from(MetricScore)) == 0
    history = db.scalars(select(RatingHistory)).one()
    assert (history.output_id, history.output_version, history.score) == (q1.id, 1, 4)
    assert db.scalars(select(MetricScoreHistory)).one().value == 0.3
    assert RunRepository(db).retired_counts([r]) == (1, 1)
    assert _output(db, r, "q2").version == 1


@pytest.mark.parametrize(
    ("item", "field", "reason"),
    [
        ({"question_id": "nope", "answer": "a"}, "question_id", "unknown question 'nope'"),
        ({"question_id": "q1", "answer": "a", "retrieved": [{"document_id": "zz", "start": 0, "end": 3}]},
         "retrieved[0].document_id", "unknown document 'zz'"),
        ({"question_id": "q1", "answer": "a", "retrieved": [{"document_id": "d1", "start": 3, "end": 3}]},
         "retrieved[0].end", "end 3 must be greater than start 3"),
        ({"question_id": "q1", "answer": "a", "retrieved": [{"document_id": "d1", "start": 0, "end": 84}]},
         "retrieved[0].end", "beyond document length 83"),
        ({"question_id": "q1", "answer": "a",
          "retrieved": [{"document_id": "d1", "start": 0, "end": 5, "text": "Rome."}]},
         "retrieved[0].text", "does not match the document span"),
        ({"question_id": "q1", "answer": "a", "retrieved": [{"start": 0}]},
         "retrieved[0]", "needs document_id"),
    ],
)  # fmt: skip
def test_a_bad_output_names_its_field(db: Session, item: dict[str, object], field: str, reason: str) -> None:
    ds = dataset(db)
    r = runs.create_run(db, ds, RunCreate(name="v1")).id
    with pytest.raises(InvalidItems) as exc:
        runs.import_outputs(db, r, rows(item))
    [error] = exc.value.items
    assert (error.index, error.field) == (0, field)
    assert reason in error.reason
    assert db.scalar(select(func.count()).select_from(Output)) == 0


def test_two_outputs_for_one_question_are_refused(db: Session) -> None:
    ds = dataset(db)
    r = runs.create_run(db, ds, RunCreate(name="v1")).id
    with pytest.raises(InvalidItems) as exc:
        runs.import_outputs(
            db, r, rows({"question_id": "q1", "answer": "a"}, {"question_id": "q1", "answer": "b"})
        )
    assert [(e.index, e.field, e.reason) for e in exc.value.items] == [
        (1, "question_id", "second output for 'q1' (first at index 0)")
    ]


def test_ragas_rows_match_by_text_and_locate_their_contexts(db: Session) -> None:
    ds = dataset(db, n_questions=2)
    r = runs.create_run(db, ds, RunCreate(name="ragas")).id
    report = runs.import_outputs(
        db,
        r,
        rows(
            {
                "user_input": "Question 1?",
                "response": "Paris",
                "retrieved_contexts": ["Berlin is the capital of Germany.", "not in any document"],
            }
        ),
    )
    assert report.created == 1
    [out] = runs.list_outputs(db, r).items
    assert out.question_id == "q1" and out.generator == {"kind": "external", "format": "ragas"}
    located, unlocated = out.retrieved
    assert (located.document_id, located.start, located.end, located.location) == ("d1", 32, 65, "exact")
    assert (unlocated.document_id, unlocated.start, unlocated.location) == (None, None, "unlocated")
    with pytest.raises(InvalidItems) as exc:
        runs.import_outputs(db, r, rows({"user_input": "Unknown?", "response": "x"}))
    assert [(e.field, e.reason) for e in exc.value.items] == [
        ("user_input", "no question of the dataset has exactly this text")
    ]


def test_ragchecker_rows_match_by_query_id(db: Session) -> None:
    ds = dataset(db, n_questions=1)
    r = runs.create_run(db, ds, RunCreate(name="rc")).id
    assert runs.detect_format(rows({"query_id": 1, "response": "x"})) == "ragchecker"
    runs.import_outputs(
        db,
        r,
        rows({"query_id": "q1", "response": "x", "retrieved_context": [{"doc_id": "d1", "text": "Rome"}]}),
    )
    [out] = runs.list_outputs(db, r).items
    assert (out.answer, out.retrieved[0].start, out.retrieved[0].document_id) == ("x", 66, "d1")


def test_repository_queries(db: Session) -> None:
    ds = dataset(db, n_questions=3)
    r = run(db, ds, answers={"q1": "a", "q2": "b"})
    raters(db, "ann")
    ratings.import_ratings(db, r, rows({"question_id": "q2", "rater": "ann", "score": 5}))
    repo = RunRepository(db)
    assert repo.counts(r) == (2, 1)
    assert repo.by_name(ds, "r1") is not None and repo.by_name(ds, "r2") is None
    targets = repo.output_ids_by_question(ds, r, None)
    assert sorted(targets) == ["q1", "q2", "q3"] and targets["q3"][1] is None
    assert sorted(repo.output_ids_by_question(ds, r, ["q1", "zz"])) == ["q1"]
    assert [(e, a) for _, e, _, a in repo.report_items([r])] == [("q1", True), ("q2", True)]
    oid = targets["q1"][1]
    assert oid is not None and repo.output_versions([oid]) == {oid: 1}
    assert len(repo.outputs_with_context([oid])[0][1].passages) == 1
    before = repo.data_version([r])
    ratings.import_ratings(db, r, rows({"question_id": "q1", "rater": "ann", "score": 2}))
    assert repo.data_version([r]) != before
    assert repo.retire_dependants([]) == (0, 0)
