"""What a request carries must fit the store on every database: ids beyond the narrowest id column, and text
holding NUL (U+0000), which PostgreSQL's text type cannot hold, are refused with a 422 naming the field on
SQLite as on PostgreSQL, so that a study stored on one database can move to the other."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from tests.api.helpers import assert_envelope

# The largest value of a 32-bit signed INTEGER column, the type of every id column (services.models).
INTEGER_MAX = 2**31 - 1
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _id_routes(client: TestClient) -> list[tuple[str, str, list[str]]]:
    """(method, path template, integer path parameters) of every route, the pages' included."""
    found = []
    # Included routers are listed as wrappers in app.routes; their routes are reached through them.
    for context in iter_route_contexts(client.app.routes):  # type: ignore[attr-defined]
        route = context.original_route
        if not isinstance(route, APIRoute) or context.path is None:
            continue
        names = [p.name for p in route.dependant.path_params if p.field_info.annotation is int]
        for method in sorted((context.methods or set()) & set(METHODS)):
            if names:
                found.append((method, context.path, names))
    return found


def _fill(template: str, values: dict[str, int]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: str(values.get(m.group(1), "x")), template)


def test_every_integer_path_parameter_is_walked(client: TestClient) -> None:
    # The walk below must see the operations whose ids reached PostgreSQL out of range (44 of them).
    routes = _id_routes(client)
    assert len(routes) >= 44
    names = {n for _, _, ns in routes for n in ns}
    assert {"dataset_id", "run_id", "job_id", "task_id", "user_id", "key_id", "position"} <= names


@pytest.mark.parametrize("value", [INTEGER_MAX + 1, 2**63 - 1])
def test_path_ids_beyond_an_integer_column_are_422(client: TestClient, value: int) -> None:
    wrong = []
    for method, template, names in _id_routes(client):
        for name in names:
            path = _fill(template, {n: (value if n == name else 1) for n in names})
            r = client.request(method, path)
            fields = [i.get("field") for i in r.json().get("items", [])] if r.status_code == 422 else []
            if f"path.{name}" not in fields:
                wrong.append((method, path, r.status_code))
    assert wrong == []


def test_path_ids_at_the_largest_integer_are_looked_up(client: TestClient) -> None:
    """The bound is the column's own maximum, not lower: the largest id is a well-formed one (404)."""
    wrong = []
    for method, template, names in _id_routes(client):
        if method != "GET":
            continue
        path = _fill(template, dict.fromkeys(names, INTEGER_MAX))
        r = client.get(path)
        fields = [i.get("field") for i in r.json().get("items", [])] if r.status_code == 422 else []
        if r.status_code >= 500 or any(f.startswith("path.") for f in fields):
            wrong.append((path, r.status_code))
    assert wrong == []
    assert_envelope(client.get(f"/runs/{INTEGER_MAX}"), 404)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/report?runs={}", "query.runs"),
        ("/report.html?runs=1,{}", "query.runs"),
        ("/report/metrics/classic.bleu/items?runs={}", "query.runs"),
        ("/reports/systems?runs=1,2,{}", "query.runs"),
        ("/reports/pairwise?run_a={}&run_b=1", "query.run_a"),
        ("/reports/pairwise?run_a=1&run_b={}", "query.run_b"),
        ("/preferences?run_a=1&run_b={}", "query.run_b"),
    ],
)
def test_query_ids_beyond_an_integer_column_are_422(client: TestClient, path: str, field: str) -> None:
    body = assert_envelope(client.get(path.format(INTEGER_MAX + 1)), 422)
    assert field.removeprefix("query.") in [i["field"].removeprefix("query.") for i in body["items"]], body
    # At the bound itself the id is looked up: no such run.
    assert client.get(path.format(INTEGER_MAX)).status_code == 404


def _task(run_id: int, run_b_id: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "t", "run_id": run_id, "raters": ["alice"]}
    if run_b_id is not None:
        body |= {"mode": "pairwise", "run_b_id": run_b_id}
    return body


@pytest.mark.parametrize(
    ("body", "field"),
    [(_task(INTEGER_MAX + 1), "run_id"), (_task(1, INTEGER_MAX + 1), "run_b_id")],
)
def test_body_ids_beyond_an_integer_column_are_422(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    answer = assert_envelope(client.post("/tasks", json=body), 422)
    assert [i["field"] for i in answer["items"]] == [field]


def test_body_ids_at_the_largest_integer_are_looked_up(client: TestClient) -> None:
    assert_envelope(client.post("/tasks", json=_task(INTEGER_MAX)), 404)


def test_form_ids_beyond_an_integer_column_are_422(client: TestClient) -> None:
    study = b'[{"user_input": "q", "response": "a", "retrieved_contexts": ["c"]}]'
    files = {"file": ("s.json", study, "application/json")}
    body = assert_envelope(
        client.post("/studies/import", files=files, data={"dataset_id": str(INTEGER_MAX + 1)}), 422
    )
    assert "dataset_id" in [i["field"] for i in body["items"]], body
    assert_envelope(client.post("/studies/import", files=files, data={"dataset_id": str(INTEGER_MAX)}), 404)


# --- NUL (U+0000) in text -------------------------------------------------------------------------------

NUL = "\x00"


def _nul_refused(resp: Any, field: str, index: int | None = None, line: int | None = None) -> None:
    body = assert_envelope(resp, 422)
    assert {"index": index, "line": line, "field": field} in [
        {k: i.get(k) for k in ("index", "line", "field")} for i in body["items"]
    ], body
    assert "NUL" in body["detail"] and all("U+0000" in i["reason"] for i in body["items"]), body


def test_nul_in_a_json_body_is_422_naming_the_field(client: TestClient) -> None:
    _nul_refused(client.post("/datasets", json={"name": f"mini{NUL}"}), "name")
    _nul_refused(client.post("/datasets", json={"name": "d", "description": f"a{NUL}b"}), "description")
    assert client.get("/datasets").json() == []
    _nul_refused(client.post("/raters", json=[{"name": "alice"}, {"name": f"b{NUL}ob"}]), "name", index=1)
    assert client.get("/raters").json() == []


def _rated_run(client: TestClient) -> int:
    from tests.api.helpers import load_mini
    from tests.api.test_outputs import make_run, native_outputs

    run = make_run(client, load_mini(client))
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}]).status_code == 200
    return run


def test_nul_in_a_rating_comment_is_422_as_json_and_csv(client: TestClient) -> None:
    run = _rated_run(client)
    rows = [{"question_id": "q1", "rater": "alice", "score": 4, "comment": f"good{NUL}"}]
    _nul_refused(client.post(f"/runs/{run}/ratings", json=rows), "comment", index=0)
    csv_body = f"question_id,rater,score,comment\r\nq1,alice,4,fine\r\nq4,ali{NUL}ce,2,ok\r\n".encode()
    r = client.post(f"/runs/{run}/ratings", content=csv_body, headers={"content-type": "text/csv"})
    _nul_refused(r, "rater", index=1, line=3)
    r = client.post(f"/runs/{run}/ratings", files={"file": ("r.csv", csv_body, "text/csv")})
    _nul_refused(r, "rater", index=1, line=3)
    assert client.get(f"/runs/{run}/ratings").json() == []


def test_nul_in_document_text_is_422_as_jsonl_and_multipart(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "docs"}).json()["id"]
    good = {"external_id": "d1", "title": "one", "text": "plain text"}
    bad = {"external_id": "d2", "title": "two", "text": f"text with {NUL} inside", "metadata": {"k": "v"}}
    jsonl = "\n".join(json.dumps(d) for d in (good, bad)).encode()
    r = client.post(
        f"/datasets/{ds}/documents", content=jsonl, headers={"content-type": "application/x-ndjson"}
    )
    _nul_refused(r, "text", index=1, line=2)
    r = client.post(
        f"/datasets/{ds}/documents", files={"file": ("d.jsonl", jsonl, "application/octet-stream")}
    )
    _nul_refused(r, "text", index=1, line=2)
    nested = [good, {**good, "external_id": "d3", "metadata": {"tags": ["a", f"b{NUL}"]}}]
    _nul_refused(client.post(f"/datasets/{ds}/documents", json=nested), "metadata.tags[1]", index=1)
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


def test_nul_in_a_task_name_is_422(client: TestClient) -> None:
    run = _rated_run(client)
    body = {"name": f"task{NUL}", "run_id": run, "raters": ["admin"]}
    _nul_refused(client.post("/tasks", json=body), "name")
    assert client.get("/tasks").json() == []


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/runs/1/report?types=factual%00", "query.types"),
        ("/runs/1/ratings?rater=al%00ice", "query.rater"),
        ("/datasets?x%00=1", "query.x\x00"),
    ],
)
def test_nul_in_a_query_string_is_422(client: TestClient, path: str, field: str) -> None:
    _nul_refused(client.get(path), field)


def test_nul_in_a_query_filter_of_a_real_run(client: TestClient) -> None:
    run = _rated_run(client)
    _nul_refused(client.get(f"/runs/{run}/report?types=factuel%00"), "query.types")
    _nul_refused(client.delete(f"/runs/{run}/ratings?rater=alice%00"), "query.rater")


def test_nul_in_a_multipart_form_field_is_422(client: TestClient) -> None:
    study = b'[{"user_input": "q", "response": "a", "retrieved_contexts": ["some context"]}]'
    files = {"file": ("s.json", study, "application/json")}
    _nul_refused(client.post("/studies/import", files=files, data={"dataset": f"d{NUL}"}), "dataset")
    bad_study = json.dumps([{"user_input": f"q{NUL}", "response": "a", "retrieved_contexts": ["c"]}])
    files = {"file": ("s.json", bad_study.encode(), "application/json")}
    _nul_refused(client.post("/studies/import", files=files, data={"dataset": "s"}), "user_input", index=0)
    # A file name as a client sends it unencoded (httpx would percent-encode it).
    raw = (
        b'--B\r\nContent-Disposition: form-data; name="dataset"\r\n\r\ns\r\n'
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="s\x00.json"\r\n'
        b"Content-Type: application/json\r\n\r\n" + study + b"\r\n--B--\r\n"
    )
    r = client.post(
        "/studies/import", content=raw, headers={"content-type": "multipart/form-data; boundary=B"}
    )
    _nul_refused(r, "file")
    assert client.get("/datasets").json() == []


def test_nul_in_a_form_post_is_422(client: TestClient) -> None:
    r = client.post("/login", data={"name": f"admin{NUL}", "key": "k", "csrf": "c"})
    _nul_refused(r, "name")


def test_text_decoded_past_the_input_checks_is_refused_by_the_store(engine: Any) -> None:
    """NUL that reaches a statement (a JSON list in a CSV cell, a member of a corpus archive) is refused by
    the engine on SQLite as on PostgreSQL, before anything is written, naming the column."""
    from sqlalchemy import insert, select
    from sqlalchemy.orm import Session

    from services.errors import InvalidItems
    from services.models import Dataset

    with Session(engine) as s, pytest.raises(InvalidItems) as refused:
        s.add(Dataset(name=f"d{NUL}", language="en", chunking={}))
        s.flush()
    assert [i.field for i in refused.value.items] == ["name"]
    with Session(engine) as s, pytest.raises(InvalidItems) as refused:
        s.execute(select(Dataset).where(Dataset.name == f"x{NUL}"))
    assert [i.field for i in refused.value.items] == ["name"]
    # A set-based write, sent as one batch of many rows: the column is still named.
    with Session(engine) as s, pytest.raises(InvalidItems) as refused:
        rows = [{"name": f"d{i}{NUL if i == 7 else ''}", "language": "en", "chunking": {}} for i in range(20)]
        s.execute(insert(Dataset).returning(Dataset.id), rows)
    assert [i.field for i in refused.value.items] == ["name"]
    with Session(engine) as s:
        assert s.scalars(select(Dataset)).all() == []


def test_nul_in_a_list_cell_of_a_csv_is_422(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "docs"}).json()["id"]
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    questions = b'{"external_id": "q1", "question": "Why?", "reference_answer": "Because."}\n'
    r = client.post(
        f"/datasets/{ds}/questions", content=questions, headers={"content-type": "application/x-ndjson"}
    )
    assert r.status_code == 200, r.text
    csv_body = b'question_id,answer,retrieved\r\nq1,yes,"[{""text"": ""a\\u0000b""}]"\r\n'
    r = client.post(f"/runs/{run}/outputs", content=csv_body, headers={"content-type": "text/csv"})
    body = assert_envelope(r, 422)
    # Refused where the cell is decoded, with the batch's other row errors, naming the field inside it (not
    # the column the store would bind).
    assert [(i["index"], i["field"]) for i in body["items"]] == [(0, "retrieved[0].text")], body
    assert "U+0000" in body["items"][0]["reason"], body
    assert client.get(f"/runs/{run}/outputs").json() == []
