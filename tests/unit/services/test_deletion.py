"""services.deletion: refusals listing dependants, cascades removing exactly those, active jobs, queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from services.datasets import service as datasets
from services.datasets.schemas import DatasetCreate
from services.deletion import service as deletion
from services.deletion.repository import DeletionRepository
from services.errors import Conflict, InvalidItems, NotFound
from services.models import (
    Dataset,
    Document,
    Job,
    JobItem,
    MetricScore,
    Output,
    Question,
    Rater,
    Rating,
    RatingHistory,
    RetrievedChunk,
    Rubric,
    Run,
)
from services.ratings import service as ratings
from services.runs import service as runs
from services.scores import service as scores
from tests.unit.services.factories import dataset, raters, rows, run


def _count(db: Session, model: type) -> int:
    return db.scalar(select(func.count()).select_from(model)) or 0


def _rated_run(db: Session, ds: int, name: str = "r1") -> int:
    r = run(db, ds, name=name)
    ratings.import_ratings(
        db,
        r,
        rows(
            {"question_id": "q1", "rater": "ann", "score": 4},
            {"question_id": "q2", "rater": "bob", "score": 2},
        ),
    )
    scores.import_scores(db, r, rows({"question_id": "q1", "metric": "external.m", "value": 0.5}))
    return r


def _job(db: Session, kind: str, status: str, **params: object) -> Job:
    job = Job(kind=kind, status=status, params=params)
    db.add(job)
    db.flush()
    return job


def test_a_run_with_dependants_is_refused_listing_them(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    with pytest.raises(Conflict) as exc:
        deletion.delete_run(db, r, cascade=False)
    assert {e.field: e.reason for e in exc.value.items} == {
        "outputs": "3 outputs",
        "ratings": "2 ratings",
        "metric scores": "1 metric score",
    }
    assert "delete with ?cascade=true" in exc.value.detail
    assert _count(db, Output) == 3


def test_cascading_a_run_removes_exactly_its_dependants(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    kept = _rated_run(db, ds, name="kept")
    done = _job(db, "scoring", "done", run_id=r)
    report = deletion.delete_run(db, r, cascade=True)
    assert report.deleted == f"run {r} ('r1')"
    assert report.rows == {
        "preference": 0, "rating": 2, "rating_history": 0, "metric_score": 1, "metric_score_history": 0,
        "retrieved_chunk": 3, "pair_verdict": 0, "output": 3, "job_item": 0, "job": 1, "run": 1,
    }  # fmt: skip
    # Bulk deletes leave loaded objects in the session as they were: ask the database.
    assert db.scalar(select(func.count()).where(Job.id == done.id)) == 0
    # The other run, the raters, the rubric and the dataset stay.
    assert [x.id for x in db.scalars(select(Run))] == [kept]
    assert (_count(db, Output), _count(db, Rating), _count(db, MetricScore)) == (3, 2, 1)
    assert (_count(db, Rater), _count(db, Rubric), _count(db, Dataset)) == (2, 1, 1)


def test_an_active_job_blocks_deletion_even_with_cascade(db: Session) -> None:
    ds = dataset(db)
    r = run(db, ds)
    job = _job(db, "scoring", "running", run_id=r)
    with pytest.raises(Conflict) as exc:
        deletion.delete_run(db, r, cascade=True)
    assert [(e.field, e.reason) for e in exc.value.items] == [("jobs", f"job {job.id} is running")]
    with pytest.raises(Conflict):
        deletion.delete_dataset(db, ds, cascade=True)
    with pytest.raises(Conflict):
        deletion.delete_job_results(db, job.id, cascade=True)
    assert db.get(Run, r) is not None


def test_dataset_deletion_refuses_then_cascades(db: Session, tmp_path: Path) -> None:
    ds = dataset(db)
    other = datasets.create_dataset(db, DatasetCreate(name="other")).id
    raters(db, "ann", "bob")
    _rated_run(db, ds)
    with pytest.raises(Conflict) as exc:
        deletion.delete_dataset(db, ds, cascade=False)
    assert {e.field for e in exc.value.items} == {
        "documents",
        "questions",
        "runs",
        "outputs",
        "ratings",
        "metric scores",
    }
    report = deletion.delete_dataset(db, ds, cascade=True)
    assert (report.rows["dataset"], report.rows["question"], report.rows["document"]) == (1, 3, 1)
    assert (report.rows["passage"], report.rows["run"], report.rows["output"]) == (3, 1, 3)
    assert [d.id for d in db.scalars(select(Dataset))] == [other]
    assert (_count(db, Question), _count(db, Document), _count(db, RetrievedChunk)) == (0, 0, 0)
    # An empty dataset goes without cascade.
    assert deletion.delete_dataset(db, other, cascade=False).rows["dataset"] == 1
    db.expire_all()  # as a new request's session would start
    with pytest.raises(NotFound):
        deletion.delete_dataset(db, ds, cascade=True)

    assert deletion.remove_index_files(tmp_path, ds) is None
    (tmp_path / "indexes" / str(ds)).mkdir(parents=True)
    assert deletion.remove_index_files(tmp_path, ds) is not None
    assert not (tmp_path / "indexes" / str(ds)).exists()


def test_delete_one_raters_ratings(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    # One of ann's ratings is of an earlier answer: it goes too.
    ratings.import_ratings(db, r, rows({"question_id": "q3", "rater": "ann", "score": 1}))
    runs.import_outputs(db, r, rows({"question_id": "q3", "answer": "new"}))
    report = deletion.delete_ratings(db, r, "ann")
    assert report.rows == {"rating": 1, "rating_history": 1}
    assert [x.rater_id for x in db.scalars(select(Rating))] == [
        db.scalar(select(Rater.id).where(Rater.name == "bob"))
    ]
    assert _count(db, RatingHistory) == 0 and _count(db, Rater) == 2
    with pytest.raises(NotFound) as exc:
        deletion.delete_ratings(db, r, "ann")
    assert [(e.field, e.reason) for e in exc.value.items] == [("rater", "no rating")]
    with pytest.raises(NotFound) as exc:
        deletion.delete_ratings(db, r, "zed")
    assert [(e.field, e.reason) for e in exc.value.items] == [("rater", "unknown")]
    with pytest.raises(NotFound):
        deletion.delete_ratings(db, 999, "ann")


def test_delete_imported_scores_only(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    with pytest.raises(InvalidItems) as exc:
        deletion.delete_scores(db, r, "ref.word_recall@5")
    assert [e.field for e in exc.value.items] == ["metric"]
    assert deletion.delete_scores(db, r, "external.m").rows == {"metric_score": 1, "metric_score_history": 0}
    assert _count(db, MetricScore) == 0
    with pytest.raises(NotFound) as nf:
        deletion.delete_scores(db, r, "external.m")
    assert [(e.field, e.reason) for e in nf.value.items] == [("metric", "no score")]


def test_delete_job_results_by_kind(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    scoring = _job(db, "scoring", "done", run_id=r)
    db.execute(update(MetricScore).values(job_id=scoring.id))
    assert deletion.delete_job_results(db, scoring.id, cascade=False).rows["metric_score"] == 1
    assert db.get(Job, scoring.id) is not None  # the record stays

    generate = _job(db, "generate", "done", run_id=r)
    qids = {q.external_id: q.id for q in db.scalars(select(Question).where(Question.dataset_id == ds))}
    db.add_all(JobItem(job_id=generate.id, key=str(qids[q]), status="done") for q in ("q1", "q2"))
    db.execute(update(Output).values(generator={"kind": "extractive"}))
    with pytest.raises(Conflict) as exc:
        deletion.delete_job_results(db, generate.id, cascade=False)
    assert {e.field for e in exc.value.items} == {"ratings"}
    assert deletion.delete_job_results(db, generate.id, cascade=True).rows["output"] == 2
    assert _count(db, Output) == 1

    index = _job(db, "index", "done", dataset_id=ds)
    with pytest.raises(InvalidItems) as inv:
        deletion.delete_job_results(db, index.id, cascade=True)
    assert [(e.field, e.reason) for e in inv.value.items] == [("job", "kind index")]
    with pytest.raises(NotFound):
        deletion.delete_job_results(db, 999, cascade=True)


def test_repository_queries(db: Session) -> None:
    ds = dataset(db)
    raters(db, "ann", "bob")
    r = _rated_run(db, ds)
    repo = DeletionRepository(db)
    assert repo.run_ids_of(ds) == {r}
    assert repo.counts_of_dataset(ds) == {"documents": 1, "questions": 3, "runs": 1}
    outputs = repo.outputs_of_run(r)
    assert repo.count(outputs) == 3 and repo.count(repo.outputs_of_runs(repo.runs_of(ds))) == 3
    assert repo.count(repo.ratings_on(outputs)) == 2 and repo.count(repo.scores_on(outputs)) == 1
    assert repo.count(repo.retired_on(outputs)) == 0
    assert repo.rater("ann") is not None and repo.rater("zed") is None
    ann = repo.rater("ann")
    assert ann is not None and repo.count(repo.ratings_of_rater(r, ann.id)) == 1
    assert repo.count(repo.scores_of_metric(r, "external.m")) == 1
    # Imported outputs are not the service's to delete with a generation job.
    assert repo.generated_outputs(r, list(db.scalars(select(Question.id)))) == []
