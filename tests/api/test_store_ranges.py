"""What a request carries must fit the store on every database: ids beyond the narrowest id column, and text
holding NUL (U+0000), which PostgreSQL's text type cannot hold, are refused with a 422 naming the field on
SQLite as on PostgreSQL, so that a study stored on one database can move to the other."""

from __future__ import annotations

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
