from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from scripts.openapi import OUT, render
from tests.contract.openapi_walk import nodes


def test_committed_openapi_is_up_to_date() -> None:
    assert OUT.exists(), "openapi/openapi.json is missing: run `make openapi`"
    assert json.loads(OUT.read_text(encoding="utf-8")) == json.loads(render()), (
        "openapi/openapi.json is stale: run `make openapi` and commit it"
    )


def test_every_error_response_uses_the_envelope() -> None:
    spec = json.loads(render())
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for code, resp in op.get("responses", {}).items():
                if code.startswith(("4", "5")):
                    ref = resp["content"]["application/json"]["schema"].get("$ref", "")
                    assert ref.endswith("/ErrorEnvelope"), (path, method, code)
    assert "ErrorEnvelope" in spec["components"]["schemas"]


def _integers(
    schema: dict[str, Any], components: dict[str, Any], seen: set[str], where: str
) -> Iterator[str]:
    """The places under ``schema`` that are an integer without both bounds (nor an enum), refs followed."""
    for place, node in nodes(schema, components, seen, where):
        bounded = "maximum" in node and "minimum" in node
        if node.get("type") == "integer" and not bounded and "enum" not in node:
            yield place


def test_every_integer_a_request_carries_is_bounded() -> None:
    """An unbounded integer reaches the database as an out-of-range parameter (a 500 on SQLite); each
    one the API takes declares a maximum, so a larger value is a 422 naming it."""
    spec = json.loads(render())
    components = spec["components"]["schemas"]
    unbounded = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            seen: set[str] = set()
            for parameter in op.get("parameters", []):
                where = f"{method} {path} {parameter['in']}.{parameter['name']}"
                unbounded += _integers(parameter["schema"], components, seen, where)
            for media in op.get("requestBody", {}).get("content", {}).values():
                unbounded += _integers(media["schema"], components, seen, f"{method} {path} body")
    assert unbounded == []


def _free_form(
    schema: dict[str, Any], components: dict[str, Any], seen: set[str], where: str
) -> Iterator[str]:
    """The places under ``schema`` that are an object of any shape (no properties, or additional
    properties of any type), refs and unions followed."""
    for place, node in nodes(schema, components, seen, where):
        extra = node.get("additionalProperties")
        shapeless = node.get("type") == "object" and "properties" not in node and not isinstance(extra, dict)
        if shapeless or extra is True or extra == {}:
            yield place


def test_job_responses_are_typed_through() -> None:
    """Every job a response carries (GET /jobs and the routes that start one) is its kind's typed model:
    params and summary written out, no object of any shape."""
    spec = json.loads(render())
    components = spec["components"]["schemas"]
    routes = [
        ("get", "/jobs"),
        ("get", "/jobs/{job_id}"),
        ("post", "/jobs/{job_id}/cancel"),
        ("post", "/jobs/{job_id}/resume"),
        ("post", "/runs/{run_id}/scoring-jobs"),
        ("post", "/runs/{run_id}/pair-judging-jobs"),
        ("post", "/datasets/{dataset_id}/index"),
        ("post", "/runs/{run_id}/generate"),
    ]
    free = []
    for method, path in routes:
        ok = next(c for c in spec["paths"][path][method]["responses"] if c.startswith("2"))
        schema = spec["paths"][path][method]["responses"][ok]["content"]["application/json"]["schema"]
        free += _free_form(schema, components, set(), f"{method} {path}")
    assert free == []
    union = spec["paths"]["/jobs/{job_id}"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]
    assert set(union["discriminator"]["mapping"]) == {"scoring", "pair_judging", "index", "generate"}
