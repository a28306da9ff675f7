"""Every schema in openapi/openapi.json is typed: no ``{}`` schema and no free-form object (``type: object``
without ``properties`` and without a typed ``additionalProperties``), except the fields below, whose content
is the user's own or another tool's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"

# Where a free-form object is the point, each with why.
ALLOWED = {
    "components/schemas/RunCreate/properties/metadata": "the user's own run metadata, stored as given",
    "components/schemas/RunRead/properties/metadata": "RunCreate.metadata read back",
    "components/schemas/RunRead/properties/system": "the user's own system description (model, prompt...)",
    "components/schemas/DocumentCreate/properties/metadata": "the user's own document metadata",
    "components/schemas/QuestionCreate/properties/metadata": "the user's own question metadata",
    "components/schemas/OutputRead/properties/generator": "whatever the generating system reported",
    "components/schemas/NativeOutput/properties/generator/anyOf/0": "whatever the generating system reported",
    "components/schemas/AnswerResponse/properties/tokens/anyOf/0": "the token usage as the provider gives it",
    "components/schemas/Health/properties/database": "the database driver's own status fields",
    "components/schemas/Health/properties/components": "one status object per optional component, open-ended",
    "components/schemas/ScoreTable/properties/configs/additionalProperties": "a metric library's own config",
    "paths//v1/traces/post/requestBody/content/application/json/schema/properties/resourceSpans/items": (
        "OTLP resourceSpans passed through as the OpenTelemetry exporter sends them"
    ),
}

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "not", "additionalProperties", "contains")


def schemas(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON schema under ``node`` (itself a schema) with its path."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in _SUBSCHEMA:
        if isinstance(node.get(key), dict):
            yield from schemas(node[key], f"{path}/{key}")
    for key in _SUBSCHEMA_LISTS:
        for i, sub in enumerate(node.get(key) or []):
            yield from schemas(sub, f"{path}/{key}/{i}")
    for name, sub in (node.get("properties") or {}).items():
        yield from schemas(sub, f"{path}/properties/{name}")


def all_schemas(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        yield from schemas(schema, f"components/schemas/{name}")

    def media(content: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for mtype, obj in (content or {}).items():
            if "schema" in obj:
                yield from schemas(obj["schema"], f"{where}/content/{mtype}/schema")
            elif "json" in mtype.split(";")[0]:
                yield f"{where}/content/{mtype}/schema", {}  # JSON without a schema is as bad as {}

    for route, item in spec.get("paths", {}).items():
        for method, op in item.items():
            where = f"paths/{route}/{method}"
            for p in op.get("parameters", []):
                yield from schemas(p.get("schema"), f"{where}/parameters/{p.get('name')}")
            yield from media(op.get("requestBody", {}).get("content"), f"{where}/requestBody")
            for status, resp in op.get("responses", {}).items():
                yield from media(resp.get("content"), f"{where}/responses/{status}")
                for h, header in (resp.get("headers") or {}).items():
                    yield from schemas(header.get("schema"), f"{where}/responses/{status}/headers/{h}")


def untyped(spec: dict[str, Any]) -> list[str]:
    bad = []
    for path, node in all_schemas(spec):
        if not node:
            bad.append(f"{path}: empty schema")
        elif (
            node.get("type") == "object"
            and "properties" not in node
            and not isinstance(node.get("additionalProperties"), dict)
        ):
            bad.append(f"{path}: free-form object")
    return [b for b in bad if b.split(": ")[0] not in ALLOWED]


def test_every_schema_is_typed() -> None:
    bad = untyped(json.loads(SPEC.read_text()))
    assert not bad, "untyped schemas in openapi.json:\n" + "\n".join(bad)


def test_allowlist_is_current() -> None:
    """An allowed path that no longer exists (or is typed now) is dropped from ALLOWED."""
    spec = json.loads(SPEC.read_text())
    free = {p for p, n in all_schemas(spec) if n.get("type") == "object" and "properties" not in n}
    assert not set(ALLOWED) - free, sorted(set(ALLOWED) - free)


def test_the_check_catches_both_kinds() -> None:
    spec = {
        "components": {"schemas": {"X": {"properties": {"a": {"type": "object"}, "b": {}}}}},
        "paths": {"/f": {"get": {"responses": {"200": {"content": {"application/json": {}}}}}}},
    }
    assert untyped(spec) == [
        "components/schemas/X/properties/a: free-form object",
        "components/schemas/X/properties/b: empty schema",
        "paths//f/get/responses/200/content/application/json/schema: empty schema",
    ]
