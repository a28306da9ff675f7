"""Undo: each delete refuses (409, dependants listed) without cascade, removes exactly what it says with it,
and leaves every other row of every table as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, select

from app.settings import Settings
from services.db import make_session_factory
from services.jobs.service import create_job
from services.jobs.worker import JobContext, Worker
from services.models import Base, Job, Question
from tests.api.helpers import assert_envelope, load_mini
from tests.api.test_outputs import make_run, native_outputs

Snapshot = dict[str, dict[int, tuple[Any, ...]]]


def snapshot(engine: Engine) -> Snapshot:
    """Every row of every table, by id (JSON columns compared as sorted JSON text)."""
    out: Snapshot = {}
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            rows = {}
            for row in conn.execute(select(table)):
                values = tuple(
                    json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                    for v in row._mapping.values()
                )
                rows[row._mapping["id"]] = values
            out[table.name] = rows
    return out


def removed(before: Snapshot, after: Snapshot) -> dict[str, set[int]]:
    """Ids gone from each table; asserts no row was added or changed anywhere."""
    gone = {}
    for name, rows in before.items():
        now = after[name]
        assert set(now) <= set(rows), f"rows added to {name}"
        for i, values in now.items():
            assert values == rows[i], f"{name} row {i} changed"
        if set(rows) - set(now):
            gone[name] = set(rows) - set(now)
    return gone


def col(snap: Snapshot, engine: Engine, table: str, column: str) -> dict[int, Any]:
    names = list(Base.metadata.tables[table].columns.keys())
    k = names.index(column)
    return {i: values[k] for i, values in snap[table].items()}


def drain(client: TestClient) -> None:
    app: Any = client.app
    Worker(
        JobContext(app.state.resources.session_factory, app.state.resources.settings), worker_id="test"
    ).drain()


@pytest.fixture
def world(client: TestClient) -> Iterator[dict[str, int]]:
    """Two datasets; the first with two rated and scored runs (imported and computed scores, a done scoring
    job), the second with one run; raters and a rubric shared by all."""
    ids: dict[str, int] = {}
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    for ds_name in ("a", "b"):
        ds = load_mini(client, ds_name)
        ids[f"ds_{ds_name}"] = ds
        for run_name in ("r1", "r2") if ds_name == "a" else ("r1",):
            run = make_run(client, ds, run_name)
            ids[f"{ds_name}_{run_name}"] = run
            assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
            ratings = [
                {"question_id": q, "rater": r, "score": s}
                for q, r, s in [("q1", "alice", 5), ("q1", "bob", 4), ("q4", "alice", 2), ("q4", "bob", 3)]
            ]
            assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
            scores = [
                {"question_id": q, "metric": m, "value": v}
                for q, m, v in [("q1", "external.x", 0.5), ("q4", "external.x", 0.1), ("q1", "external.y", 1)]
            ]
            assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
            job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleu"]}).json()
            ids[f"{ds_name}_{run_name}_job"] = job["id"]
            drain(client)
    # A new answer to q4 in a/r2: its ratings and scores move to the history tables.
    changed = [
        {**o, "answer": "Une autre réponse."} if o["question_id"] == "q4" else o for o in native_outputs()
    ]
    report = client.post(f"/runs/{ids['a_r2']}/outputs", json=changed).json()
    assert report["invalidated_ratings"] == 2 and report["invalidated_scores"] == 2
    yield ids


def test_dataset(client: TestClient, engine: Engine, world: dict[str, int]) -> None:
    ds = world["ds_a"]
    before = snapshot(engine)
    body = assert_envelope(client.delete(f"/datasets/{ds}"), 409)
    assert body["detail"].startswith(
        f"dataset {ds} ('a') has 3 documents, 5 questions, 2 runs, 4 outputs, 6 ratings, 8 metric scores, "
        "4 ratings and scores of earlier answers, 2 jobs:"
    )
    assert "cascade=true" in body["detail"]
    assert {i["field"] for i in body["items"]} == {
        "documents",
        "questions",
        "runs",
        "outputs",
        "ratings",
        "metric scores",
        "ratings and scores",
        "jobs",
    }
    assert removed(before, snapshot(engine)) == {}
    r = client.delete(f"/datasets/{ds}", params={"cascade": True})
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    runs = {world["a_r1"], world["a_r2"]}
    outputs = {i for i, run in col(before, engine, "output", "run_id").items() if run in runs}
    assert gone["dataset"] == {ds}
    assert gone["run"] == runs
    assert gone["output"] == outputs
    assert gone["document"] == {
        i for i, d in col(before, engine, "document", "dataset_id").items() if d == ds
    }
    assert gone["question"] == {
        i for i, d in col(before, engine, "question", "dataset_id").items() if d == ds
    }
    assert gone["rating"] == {
        i for i, o in col(before, engine, "rating", "output_id").items() if o in outputs
    }
    assert gone["metric_score"] == {
        i for i, o in col(before, engine, "metric_score", "output_id").items() if o in outputs
    }
    assert gone["job"] == {world["a_r1_job"], world["a_r2_job"]}
    assert gone["rating_history"] == {
        i for i, o in col(before, engine, "rating_history", "output_id").items() if o in outputs
    }
    assert len(gone["rating_history"]) == 2 and len(gone["metric_score_history"]) == 2
    assert set(gone) == {
        "rating_history",
        "metric_score_history",
        "dataset",
        "run",
        "output",
        "retrieved_chunk",
        "document",
        "question",
        "passage",
        "rating",
        "metric_score",
        "job",
        "job_item",
    }
    assert r.json()["rows"]["output"] == len(outputs)
    # dataset b, raters and rubrics are untouched (checked by removed()); an empty dataset needs no cascade
    empty = client.post("/datasets", json={"name": "empty"}).json()["id"]
    assert client.delete(f"/datasets/{empty}").status_code == 200
    assert_envelope(client.delete(f"/datasets/{empty}"), 404)


def test_run(client: TestClient, engine: Engine, world: dict[str, int]) -> None:
    run = world["a_r2"]
    before = snapshot(engine)
    body = assert_envelope(client.delete(f"/runs/{run}"), 409)
    assert body["detail"].startswith(
        f"run {run} ('r2') has 2 outputs, 2 ratings, 3 metric scores, "
        "4 ratings and scores of earlier answers, 1 job:"
    )
    r = client.delete(f"/runs/{run}", params={"cascade": True})
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    outputs = {i for i, x in col(before, engine, "output", "run_id").items() if x == run}
    assert gone["run"] == {run} and gone["output"] == outputs and len(outputs) == 2
    assert gone["rating"] == {
        i for i, o in col(before, engine, "rating", "output_id").items() if o in outputs
    }
    assert gone["job"] == {world["a_r2_job"]}
    assert set(gone) == {
        "run",
        "output",
        "retrieved_chunk",
        "rating",
        "rating_history",
        "metric_score",
        "metric_score_history",
        "job",
        "job_item",
    }
    # the dataset's other run and its questions are still there
    assert client.get(f"/runs/{world['a_r1']}/outputs").status_code == 200
    empty = make_run(client, world["ds_a"], "empty")
    assert client.delete(f"/runs/{empty}").json()["rows"]["run"] == 1


def test_active_jobs_are_never_cut_even_with_cascade(client: TestClient, world: dict[str, int]) -> None:
    run = world["a_r1"]
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.rouge_l"]}).json()
    assert job["status"] == "queued"
    body = assert_envelope(client.delete(f"/runs/{run}", params={"cascade": True}), 409)
    assert f"queued scoring job (id {job['id']})" in body["detail"]
    assert_envelope(client.delete(f"/datasets/{world['ds_a']}", params={"cascade": True}), 409)
    assert_envelope(client.delete(f"/jobs/{job['id']}/results"), 409)


def test_a_raters_ratings_on_a_run(client: TestClient, engine: Engine, world: dict[str, int]) -> None:
    run = world["a_r1"]
    before = snapshot(engine)
    r = client.delete(f"/runs/{run}/ratings", params={"rater": "alice"})
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    alice = next(i for i, v in col(before, engine, "rater", "name").items() if v == "alice")
    outputs = {i for i, x in col(before, engine, "output", "run_id").items() if x == run}
    expected = {
        i
        for i, o in col(before, engine, "rating", "output_id").items()
        if o in outputs and col(before, engine, "rating", "rater_id")[i] == alice
    }
    assert gone == {"rating": expected} and len(expected) == 2
    assert {x["rater"] for x in client.get(f"/runs/{run}/ratings").json()} == {"bob"}
    assert assert_envelope(client.delete(f"/runs/{run}/ratings", params={"rater": "alice"}), 404)
    # on a run whose answers changed, a rater's ratings of the earlier answers go too
    run2 = world["a_r2"]
    before = snapshot(engine)
    r = client.delete(f"/runs/{run2}/ratings", params={"rater": "bob"})
    assert r.json()["rows"] == {"rating": 1, "rating_history": 1}
    assert set(removed(before, snapshot(engine))) == {"rating", "rating_history"}
    assert_envelope(client.delete(f"/runs/{run}/ratings", params={"rater": "nobody"}), 404)
    assert_envelope(client.delete("/runs/999/ratings", params={"rater": "alice"}), 404)


def test_an_imported_metrics_scores_on_a_run(
    client: TestClient, engine: Engine, world: dict[str, int]
) -> None:
    run = world["a_r1"]
    before = snapshot(engine)
    r = client.delete(f"/runs/{run}/scores/external.x")
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    outputs = {i for i, x in col(before, engine, "output", "run_id").items() if x == run}
    metric = col(before, engine, "metric_score", "metric")
    expected = {
        i
        for i, o in col(before, engine, "metric_score", "output_id").items()
        if o in outputs and metric[i] == "external.x"
    }
    assert gone == {"metric_score": expected} and len(expected) == 2
    assert_envelope(client.delete(f"/runs/{run}/scores/external.x"), 404)
    body = assert_envelope(client.delete(f"/runs/{run}/scores/classic.bleu"), 422)
    assert "computed by the service" in body["detail"]


def test_a_scoring_jobs_results(client: TestClient, engine: Engine, world: dict[str, int]) -> None:
    job = world["a_r1_job"]
    before = snapshot(engine)
    r = client.delete(f"/jobs/{job}/results")
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    expected = {i for i, j in col(before, engine, "metric_score", "job_id").items() if j == job}
    assert gone == {"metric_score": expected} and len(expected) == 2
    # scoring again recomputes what was deleted
    again = client.post(f"/runs/{world['a_r1']}/scoring-jobs", json={"metrics": ["classic.bleu"]}).json()
    assert again["total"] == 2


def test_a_generation_jobs_results(client: TestClient, engine: Engine, world: dict[str, int]) -> None:
    run = make_run(client, world["ds_b"], "generated")
    rows = [{**o, "generator": {"kind": "extractive"}} for o in native_outputs()]
    assert client.post(f"/runs/{run}/outputs", json=rows).status_code == 200
    with make_session_factory(engine)() as s:
        keys = [str(q.id) for q in s.scalars(select(Question).where(Question.dataset_id == world["ds_b"]))]
        job = create_job(
            s, "generate", {"run_id": run}, keys, {}, settings=client.app.state.resources.settings
        )  # type: ignore[attr-defined]
        job.status = "done"
        s.commit()
        job_id = job.id
    assert client.post(
        f"/runs/{run}/ratings", json=[{"question_id": "q1", "rater": "bob", "score": 3}]
    ).json()
    before = snapshot(engine)
    body = assert_envelope(client.delete(f"/jobs/{job_id}/results"), 409)
    assert body["items"] == [{"index": None, "field": "ratings", "reason": "1 rating"}]
    r = client.delete(f"/jobs/{job_id}/results", params={"cascade": True})
    assert r.status_code == 200, r.text
    gone = removed(before, snapshot(engine))
    outputs = {i for i, x in col(before, engine, "output", "run_id").items() if x == run}
    assert gone["output"] == outputs and set(gone) == {"output", "retrieved_chunk", "rating"}
    with make_session_factory(engine)() as s:
        assert s.get(Job, job_id) is not None  # the job's record stays


def test_index_jobs_and_unknown_ids(client: TestClient, engine: Engine) -> None:
    with make_session_factory(engine)() as s:
        job = create_job(s, "index", {"dataset_id": 1}, [], {}, settings=client.app.state.resources.settings)  # type: ignore[attr-defined]
        s.commit()
        job_id = job.id
    body = assert_envelope(client.delete(f"/jobs/{job_id}/results"), 422)
    assert "rebuilt" in body["detail"]
    for path in ("/datasets/999", "/runs/999", "/jobs/999/results", "/runs/999/scores/external.x"):
        assert_envelope(client.delete(path), 404)


def test_index_files_go_only_once_the_dataset_rows_are_gone(client: TestClient, settings: Settings) -> None:
    """A deletion whose commit fails leaves the dataset and its index files; one that commits removes both."""
    ds = client.post("/datasets", json={"name": "indexed", "language": "en"}).json()["id"]
    assert settings.data_dir is not None
    directory = settings.data_dir / "indexes" / str(ds)
    directory.mkdir(parents=True)
    (directory / "bm25.pkl").write_bytes(b"index")
    factory = client.app.state.resources.session_factory  # type: ignore[attr-defined]

    def refuse(session: Any) -> None:
        raise RuntimeError("commit refused")

    event.listen(factory, "before_commit", refuse)
    try:
        with pytest.raises(RuntimeError, match="commit refused"):
            client.delete(f"/datasets/{ds}")
    finally:
        event.remove(factory, "before_commit", refuse)
    assert client.get(f"/datasets/{ds}").status_code == 200
    assert (directory / "bm25.pkl").read_bytes() == b"index"

    r = client.delete(f"/datasets/{ds}")
    assert r.status_code == 200, r.text
    assert r.json()["notes"] == [f"index files removed ({directory})"]
    assert not directory.exists()
    assert client.get(f"/datasets/{ds}").status_code == 404
