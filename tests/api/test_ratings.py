from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import assert_envelope, load_mini, upload
from tests.api.test_outputs import make_run, native_outputs


def rated_run(client: TestClient) -> int:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    return run


def test_default_rubric_is_the_study_scale(client: TestClient) -> None:
    rubrics = client.get("/rubrics").json()
    default = next(r for r in rubrics if r["is_default"])
    assert (default["min"], default["max"]) == (1, 5)
    assert set(default["levels"]) == {"1", "2", "3", "4", "5"}
    assert "declined" in default["levels"]["5"] and "off-topic" in default["levels"]["1"]


def test_custom_rubric_scales(client: TestClient) -> None:
    r = client.post(
        "/rubrics", json={"name": "pm2", "min": -2, "max": 2, "levels": {"-2": "bad", "2": "good"}}
    )
    assert r.status_code == 201
    assert_envelope(client.post("/rubrics", json={"name": "pm2", "min": 0, "max": 3}), 409)
    body = assert_envelope(client.post("/rubrics", json={"name": "x", "min": 3, "max": 3}), 422)
    assert "max must be greater" in body["items"][0]["reason"]
    body = assert_envelope(
        client.post("/rubrics", json={"name": "y", "min": 0, "max": 3, "levels": {"7": "?"}}), 422
    )
    assert "outside the scale" in body["items"][0]["reason"]


def test_ratings_csv_and_rerating_keeps_created_at(client: TestClient) -> None:
    run = rated_run(client)
    csv = "question_id,rater,score,rubric,comment\r\nq1,alice,5,,parfait\r\nq1,bob,4,,\r\nq4,alice,5,,\r\n"
    r = upload(client, f"/runs/{run}/ratings", "r.csv", csv.encode())
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 3
    before = {(x["question_id"], x["rater"]): x for x in client.get(f"/runs/{run}/ratings").json()}
    assert before[("q1", "alice")]["comment"] == "parfait" and before[("q1", "bob")]["comment"] is None
    time.sleep(0.01)
    r = client.post(f"/runs/{run}/ratings", json=[{"question_id": "q1", "rater": "bob", "score": 2}]).json()
    assert (r["created"], r["updated"], r["unchanged"]) == (0, 1, 0)
    after = {(x["question_id"], x["rater"]): x for x in client.get(f"/runs/{run}/ratings").json()}
    assert after[("q1", "bob")]["score"] == 2
    assert after[("q1", "bob")]["created_at"] == before[("q1", "bob")]["created_at"]
    assert after[("q1", "bob")]["updated_at"] > before[("q1", "bob")]["updated_at"]
    assert len(after) == 3
    assert client.get(f"/runs/{run}").json()["rated_outputs"] == 2


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ({"question_id": "q1", "rater": "alice", "score": 6}, "score", "outside the scale 1..5"),
        ({"question_id": "q1", "rater": "alice", "score": 0}, "score", "outside the scale"),
        ({"question_id": "q1", "rater": "alice", "score": 4.5}, "score", "integer"),
        ({"question_id": "q1", "rater": "carol", "score": 3}, "rater", "unknown rater"),
        ({"question_id": "zz", "rater": "alice", "score": 3}, "question_id", "unknown question"),
        ({"question_id": "q2", "rater": "alice", "score": 3}, "question_id", "no output"),
        ({"question_id": "q1", "rater": "alice", "score": 3, "rubric": "nope"}, "rubric", "unknown rubric"),
    ],
)
def test_bad_ratings_write_nothing(client: TestClient, row: dict[str, Any], field: str, reason: str) -> None:
    run = rated_run(client)
    good = {"question_id": "q4", "rater": "bob", "score": 5}
    body = assert_envelope(client.post(f"/runs/{run}/ratings", json=[good, row]), 422, "InvalidItems")
    assert [(i["index"], i["field"]) for i in body["items"]] == [(1, field)], body
    assert reason in body["items"][0]["reason"]
    assert client.get(f"/runs/{run}/ratings").json() == []


def test_duplicate_rating_in_batch(client: TestClient) -> None:
    run = rated_run(client)
    rows = [
        {"question_id": "q1", "rater": "alice", "score": 5},
        {"question_id": "q1", "rater": "alice", "score": 4},
    ]
    body = assert_envelope(client.post(f"/runs/{run}/ratings", json=rows), 422)
    assert body["items"][0]["index"] == 1 and "duplicate" in body["items"][0]["reason"]


def test_one_rubric_per_run(client: TestClient) -> None:
    run = rated_run(client)
    client.post("/rubrics", json={"name": "0-3", "min": 0, "max": 3})
    client.post(f"/runs/{run}/ratings", json=[{"question_id": "q1", "rater": "alice", "score": 5}])
    row = {"question_id": "q4", "rater": "alice", "score": 2, "rubric": "0-3"}
    body = assert_envelope(client.post(f"/runs/{run}/ratings", json=[row]), 422)
    assert body["items"][0]["field"] == "rubric"


def test_rows_without_rubric_are_on_the_runs_rubric(client: TestClient) -> None:
    run = rated_run(client)
    client.post("/rubrics", json={"name": "pref", "min": -2, "max": 2})
    first = [{"question_id": "q1", "rater": "alice", "score": -2, "rubric": "pref"}]
    assert client.post(f"/runs/{run}/ratings", json=first).status_code == 200
    # No rubric named: the run's -2..2 rubric, not the default 1..5 (where -1 would be out of scale).
    later = [
        {"question_id": "q4", "rater": "alice", "score": -1},
        {"question_id": "q1", "rater": "bob", "score": 0},
    ]
    r = client.post(f"/runs/{run}/ratings", json=later)
    assert r.status_code == 200 and r.json()["created"] == 2
    body = assert_envelope(client.post(f"/runs/{run}/ratings", json=[{**later[0], "score": 5}]), 422)
    assert "-2..2" in body["items"][0]["reason"]
    # A run not rated yet: a batch naming one rubric puts its unnamed rows on it too.
    other = make_run(client, client.get(f"/runs/{run}").json()["dataset_id"], "r2")
    assert client.post(f"/runs/{other}/outputs", json=native_outputs()).status_code == 200
    mixed = [
        {"question_id": "q1", "rater": "alice", "score": -2, "rubric": "pref"},
        {"question_id": "q4", "rater": "alice", "score": 1},
    ]
    assert client.post(f"/runs/{other}/ratings", json=mixed).status_code == 200


def test_rating_csv_with_bad_line(client: TestClient) -> None:
    run = rated_run(client)
    csv = b"question_id,rater,score\nq1,alice,5\nq4,alice,5,extra\n"
    body = assert_envelope(upload(client, f"/runs/{run}/ratings", "r.csv", csv), 400, "MalformedInput")
    assert body["items"][0]["line"] == 3


def test_raters_are_idempotent(client: TestClient) -> None:
    assert client.post("/raters", json=[{"name": "alice"}]).json()["created"] == 1
    r = client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).json()
    assert (r["created"], r["unchanged"]) == (1, 1)
    assert [x["name"] for x in client.get("/raters").json()] == ["alice", "bob"]
    assert_envelope(client.post("/raters", json=[{"name": ""}]), 422)


def test_external_scores_import_and_table(client: TestClient) -> None:
    run = rated_run(client)
    rows = [
        {"question_id": "q1", "metric": "external.judge_x", "value": 0.8},
        {"question_id": "q4", "metric": "external.judge_x", "value": None},
        {"question_id": "q1", "metric": "external.len", "value": 12},
    ]
    r = client.post(f"/runs/{run}/scores", json=rows).json()
    assert r["created"] == 3
    assert client.post(f"/runs/{run}/scores", json=rows).json()["unchanged"] == 3
    table = client.get(f"/runs/{run}/scores").json()
    by_q = {row["question_id"]: row for row in table["rows"]}
    assert by_q["q1"]["external.judge_x"] == 0.8 and by_q["q1"]["external.len"] == 12
    assert by_q["q4"]["external.judge_x"] is None and "no value" in by_q["q4"]["external.judge_x.error"]
    csv = client.get(f"/runs/{run}/scores", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    lines = csv.text.splitlines()
    assert lines[0] == (
        "output_id,question_id,external.judge_x,external.judge_x.error,external.len,external.len.error"
    )
    assert len(lines) == 3


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"question_id": "q1", "metric": "ragas.faithfulness", "value": 1}, "metric"),
        ({"question_id": "q1", "metric": "external.x", "value": "abc"}, "value"),
        ({"question_id": "q1", "metric": "external.x", "value": float("inf")}, "value"),
        ({"question_id": "q1", "metric": "external.x", "value": "nan"}, "value"),
        ({"question_id": "q2", "metric": "external.x", "value": 1}, "question_id"),
    ],
)
def test_bad_external_scores(client: TestClient, row: dict[str, Any], field: str) -> None:
    run = rated_run(client)
    if row["value"] == float("inf"):
        # JSON has no Infinity: refused while parsing, before any row is read (400, the reason named).
        r = client.post(
            f"/runs/{run}/scores",
            content=b'[{"question_id": "q1", "metric": "external.x", "value": Infinity}]',
            headers={"content-type": "application/json"},
        )
        body = assert_envelope(r, 400, "MalformedInput")
        assert "Infinity" in body["items"][0]["reason"]
        # In a CSV cell the text "inf" is read as a number, and refused as one.
        csv_body = b"question_id,metric,value\nq1,external.x,inf\n"
        r = client.post(f"/runs/{run}/scores", content=csv_body, headers={"content-type": "text/csv"})
    else:
        r = client.post(f"/runs/{run}/scores", json=[row])
    body = assert_envelope(r, 422)
    assert body["items"][0]["field"] == field
    assert client.get(f"/runs/{run}/scores").json()["columns"] == ["output_id", "question_id"]
