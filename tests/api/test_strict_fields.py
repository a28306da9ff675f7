"""A request's booleans are JSON booleans and its numbers are not booleans: 0 is not false, true is not 1.
Each is a 422 naming the field, and nothing is stored; spreadsheet cells (CSV) are still read as text."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from services.models import MetricScore
from tests.api.helpers import assert_envelope, create_dataset, load_mini, upload
from tests.api.test_outputs import make_run, native_outputs


def _alice(client: TestClient) -> int:
    client.post("/keys", json={"name": "alice", "role": "editor"})
    return int(next(u["id"] for u in client.get("/users").json() if u["name"] == "alice"))


@pytest.mark.parametrize("value", [0, 1, "false", "no"])
def test_an_accounts_active_flag_is_a_boolean(client: TestClient, value: Any) -> None:
    user = _alice(client)
    body = assert_envelope(client.patch(f"/users/{user}", json={"active": value}), 422, "InvalidRequest")
    assert [i["field"] for i in body["items"]] == ["active"]
    alice = next(u for u in client.get("/users").json() if u["name"] == "alice")
    assert alice["active"] is True
    assert client.patch(f"/users/{user}", json={"active": False}).json()["active"] is False


# Bodies refused before anything is looked up, so the ids in their paths need not exist.
BODIES = [
    ("POST", "/tasks", {"name": "t", "run_id": 1, "raters": ["a"], "show_reference": 1}, "show_reference"),
    ("POST", "/tasks", {"name": "t", "run_id": 1, "raters": ["a"], "show_contexts": 0}, "show_contexts"),
    ("POST", "/tasks", {"name": "t", "run_id": True, "raters": ["a"]}, "run_id"),
    ("POST", "/tasks", {"name": "t", "run_id": 1, "run_b_id": True, "raters": ["a"]}, "run_b_id"),
    ("POST", "/tasks", {"name": "t", "run_id": 1, "raters": ["a"], "per_output": True}, "per_output"),
    ("POST", "/tasks", {"name": "t", "run_id": 1, "raters": ["a"], "seed": False}, "seed"),
    ("PUT", "/tasks/1/queue/1", {"action": "rate", "score": True}, "score"),
    ("PUT", "/tasks/1/queue/1", {"action": "rate", "score": 1, "version": True}, "version"),
    ("PUT", "/tasks/1/queue/1", {"action": "rate", "score": 1, "left_version": True}, "left_version"),
    ("PUT", "/tasks/1/queue/1", {"action": "rate", "score": 1, "right_version": True}, "right_version"),
    ("POST", "/rubrics", {"name": "r", "min": True, "max": 5}, "min"),
    ("POST", "/rubrics", {"name": "r", "min": 1, "max": True}, "max"),
    ("POST", "/datasets", {"name": "d", "chunking": {"overlap_words": False}}, "chunking.overlap_words"),
    ("POST", "/datasets", {"name": "d", "chunking": {"max_words": True}}, "chunking.max_words"),
    ("POST", "/datasets/1/runs", {"name": "r", "system": {"k": True}}, "system.k"),
    ("POST", "/datasets/1/retrieve", {"query": "q", "k": True}, "k"),
    ("POST", "/datasets/1/answer", {"question": "q", "k": True}, "k"),
    ("POST", "/runs/1/scoring-jobs", {"k": True}, "k"),
    ("POST", "/score", {"metrics": ["ragmeta.answer_length"], "samples": [], "k": True}, "k"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BODIES, ids=[f"{b[1]}:{b[3]}" for b in BODIES])
def test_a_number_is_not_a_boolean_nor_a_boolean_a_number(
    client: TestClient, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    r = client.request(method, path, json=body)
    found = assert_envelope(r, 422, "InvalidRequest")
    assert field in [i["field"] for i in found["items"]], found


def test_batch_rows_refuse_booleans_for_numbers_and_numbers_for_booleans(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    outputs = native_outputs()
    outputs[0]["retrieved"][0]["start"] = True
    body = assert_envelope(client.post(f"/runs/{run}/outputs", json=outputs), 422)
    assert [(i["index"], i["field"]) for i in body["items"]] == [(0, "retrieved[0].start")]

    passage = {"document_id": "offres", "start": 0, "end": True}
    question = {"external_id": "qx", "question": "?", "reference_answer": "a", "passages": [passage]}
    body = assert_envelope(client.post(f"/datasets/{ds}/questions", json=[question]), 422)
    assert body["items"][0]["field"] == "passages[0].end"

    score = {"question_id": "q1", "metric": "external.mine", "value": 0.5, "higher_is_better": 1}
    body = assert_envelope(client.post(f"/runs/{run}/scores", json=[score]), 422)
    assert [(i["index"], i["field"]) for i in body["items"]] == [(0, "higher_is_better")]
    assert client.get(f"/runs/{run}/outputs").json() == []


def test_a_ragchecker_query_id_is_not_a_boolean(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    item = {"query_id": True, "query": "?", "gt_answer": "a", "response": "b", "retrieved_context": []}
    r = client.post(f"/runs/{run}/outputs?format=ragchecker", json={"results": [item]})
    body = assert_envelope(r, 422)
    assert "query_id" in [i["field"] for i in body["items"]], body


@pytest.mark.parametrize(("cell", "expected"), [("TRUE", "true"), ("false", "false"), (" yes", "true")])
def test_a_csv_direction_cell_is_still_read_as_a_spreadsheet_writes_it(
    client: TestClient, engine: Engine, cell: str, expected: str
) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    csv = f"question_id,metric,value,higher_is_better\nq1,external.mine,0.5,{cell}\n".encode()
    r = upload(client, f"/runs/{run}/scores", "s.csv", csv)
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 1
    csv = b"question_id,metric,value,higher_is_better\nq1,external.other,0.5,maybe\n"
    body = assert_envelope(upload(client, f"/runs/{run}/scores", "s.csv", csv), 422)
    assert body["items"][0]["field"] == "higher_is_better"
    with engine.connect() as conn:
        stored = conn.scalars(select(MetricScore.details).where(MetricScore.metric == "external.mine")).all()
    assert [d["higher_is_better"] for d in stored] == [expected]


def test_registering_raters_answers_as_raters(client: TestClient) -> None:
    """The answer of POST /raters says what was imported: raters, not ratings."""
    create_dataset(client)
    r = client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}])
    assert r.status_code == 200, r.text
    assert (r.json()["kind"], r.json()["created"]) == ("raters", 2)
