"""Every list the API gives is paged: walked from the OpenAPI contract, not from a list kept by hand."""

from __future__ import annotations

import json
from typing import Any

from scripts.openapi import render

# Lists whose length is fixed by the code, not by stored data: the metric catalogue (its entries are the
# registered adapters, the same for every deployment and read by the pages as one list).
BOUNDED_BY_CODE = {("get", "/metrics")}
STREAMED_TYPES = ("application/x-ndjson", "text/csv")


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return components[ref.rsplit("/", 1)[-1]] if ref else schema


def _is_list(op: dict[str, Any], components: dict[str, Any]) -> bool:
    """A list operation: its 200 answer is a JSON array, or a stream of rows (JSONL, CSV) that is not a
    rendered report."""
    content = op.get("responses", {}).get("200", {}).get("content", {})
    schema = _resolve(content.get("application/json", {}).get("schema", {}), components)
    if schema.get("type") == "array":
        return True
    report = "report" in op.get("operationId", "") or "report" in " ".join(op.get("tags", []))
    return any(t in content for t in STREAMED_TYPES) and not report


def _list_operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    components = spec["components"]["schemas"]
    return [
        (method, path, op)
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method == "get" and _is_list(op, components)
    ]


def test_no_list_operation_is_without_pagination() -> None:
    spec = json.loads(render())
    found = _list_operations(spec)
    # The walk finds the lists it should (a walk that found none would pass whatever the API did).
    paths = {path for _, path, _ in found}
    assert {"/runs/{run_id}/outputs", "/datasets", "/jobs", "/runs/{run_id}/scores"} <= paths
    unpaged = []
    for method, path, op in found:
        if (method, path) in BOUNDED_BY_CODE:
            continue
        params = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
        limit = params.get("limit", {}).get("schema", {})
        limit_max = limit.get("maximum", next((s.get("maximum") for s in limit.get("anyOf", [])), None))
        headers = op["responses"]["200"].get("headers", {})
        ok = (
            op.get("x-paginated") is True
            and "cursor" in params
            and limit_max is not None
            and {"Link", "X-Next-Cursor"} <= set(headers)
        )
        if not ok:
            unpaged.append(f"{method.upper()} {path}")
    assert unpaged == []


def test_the_walk_sees_an_unpaged_list() -> None:
    """The check itself: an operation answering an array without limit and cursor is caught."""
    spec = {
        "components": {"schemas": {}},
        "paths": {
            "/things": {
                "get": {
                    "operationId": "list_things",
                    "responses": {"200": {"content": {"application/json": {"schema": {"type": "array"}}}}},
                }
            },
            "/things.csv": {
                "get": {"operationId": "export", "responses": {"200": {"content": {"text/csv": {}}}}}
            },
        },
    }
    assert [(m, p) for m, p, _ in _list_operations(spec)] == [("get", "/things"), ("get", "/things.csv")]
