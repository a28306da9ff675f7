"""One walk over the schemas of openapi.json for the contract tests that look for a kind of node in them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def nodes(
    schema: dict[str, Any], components: dict[str, Any], seen: set[str], where: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(place, schema) of ``schema`` and of every schema under it: a ``$ref`` is followed once per ``seen``
    (its place is the component's name), a union's parts keep the place, a property adds ``.name`` and the
    items or additional properties ``[]``."""
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            yield from nodes(components[name], components, seen, name)
        return
    yield where, schema
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for part in schema.get(key, []):
            yield from nodes(part, components, seen, where)
    for name, prop in schema.get("properties", {}).items():
        yield from nodes(prop, components, seen, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from nodes(schema[key], components, seen, f"{where}[]")
