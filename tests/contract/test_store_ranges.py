"""Every integer a request carries is bounded by the column that stores it or is looked up in, on the
narrowest database supported: an id PostgreSQL's INTEGER cannot hold answered 500 there and 404 on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Column
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import InstrumentedAttribute

from scripts.openapi import render
from services.models import ApiKey, Dataset, Job, RatingTask, Run, TaskItem, User
from tests.contract.openapi_walk import nodes

# The largest value each integer type holds. SQLite's INTEGER is 64-bit whatever it is called; PostgreSQL's
# types are what their names say. (The migrations are held to the models by tests/integration.)
_PG = {"SMALLINT": 2**15 - 1, "INTEGER": 2**31 - 1, "BIGINT": 2**63 - 1}
_SQLITE = {"SMALLINT": 2**63 - 1, "INTEGER": 2**63 - 1, "BIGINT": 2**63 - 1}

# Where each id a request carries is looked up or stored, by its place in the OpenAPI document. A new id
# must be added here, with its column, so that its bound is checked against the column's type.
ID_COLUMNS: dict[str, InstrumentedAttribute[Any]] = {
    "path.dataset_id": Dataset.id,
    "path.run_id": Run.id,
    "path.job_id": Job.id,
    "path.task_id": RatingTask.id,
    "path.user_id": User.id,
    "path.key_id": ApiKey.id,
    "path.position": TaskItem.position,
    "query.run_a": Run.id,
    "query.run_b": Run.id,
    "TaskCreate.run_id": RatingTask.run_id,
    "TaskCreate.run_b_id": RatingTask.run_b_id,
    "PairJudgingRequest.run_b": Run.id,
    "Body_import_study.dataset_id": Dataset.id,
}

# Integers that are never stored in an integer column, with their reason.
NOT_STORED = {
    "query.seed",  # a bootstrap seed (numpy takes 32 unsigned bits), written in the report, not in a column
}


def column_max(attribute: InstrumentedAttribute[Any]) -> int:
    """The largest value ``attribute``'s column holds on every supported database."""
    column = attribute.property.columns[0]
    assert isinstance(column, Column)
    pg = column.type.compile(dialect=postgresql.dialect())  # type: ignore[no-untyped-call]
    lite = column.type.compile(dialect=sqlite.dialect())  # type: ignore[no-untyped-call]
    return min(_PG[pg], _SQLITE[lite])


def _integers(
    schema: dict[str, Any], components: dict[str, Any], seen: set[str], where: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(place, schema) of every integer in ``schema``, refs and unions followed."""
    return (
        (place, node)
        for place, node in nodes(schema, components, seen, where)
        if node.get("type") == "integer"
    )


def _request_integers() -> dict[str, list[dict[str, Any]]]:
    spec = json.loads(render())
    components = spec["components"]["schemas"]
    found: dict[str, list[dict[str, Any]]] = {}
    for ops in spec["paths"].values():
        for op in ops.values():
            seen: set[str] = set()
            for parameter in op.get("parameters", []):
                where = f"{parameter['in']}.{parameter['name']}"
                for place, schema in _integers(parameter["schema"], components, seen, where):
                    found.setdefault(place, []).append(schema)
            for media in op.get("requestBody", {}).get("content", {}).values():
                for place, schema in _integers(media["schema"], components, seen, "body"):
                    found.setdefault(place, []).append(schema)
    return found


def _is_id(place: str) -> bool:
    name = place.rsplit(".", 1)[-1]
    return place.startswith("path.") or name.endswith("_id") or name in ("id", "run_a", "run_b")


def test_every_id_is_bounded_by_its_column() -> None:
    found = _request_integers()
    ids = {place for place in found if _is_id(place)}
    assert ids - set(ID_COLUMNS) == set(), "an id without its column in ID_COLUMNS"
    wrong = {}
    for place in sorted(ids):
        bound = column_max(ID_COLUMNS[place])
        maxima = {s.get("maximum") for s in found[place]}
        if maxima != {bound} or {s.get("minimum") for s in found[place]} != {1}:
            wrong[place] = (maxima, bound)
    assert wrong == {}


def test_every_other_integer_fits_an_integer_column() -> None:
    """Offsets, versions, scores, seeds, counts: stored beside the ids, in INTEGER columns."""
    narrowest = min(column_max(c) for c in ID_COLUMNS.values())
    wrong = {
        place: schemas
        for place, schemas in _request_integers().items()
        if not _is_id(place)
        and place not in NOT_STORED
        and any(not -narrowest <= s.get("minimum", -(2**63)) <= s.get("maximum", 2**63) <= narrowest
                for s in schemas)
    }  # fmt: skip
    assert wrong == {}


def test_the_bound_follows_the_column_type() -> None:
    # What the test reads from the models: a column widened to BIGINT would raise the bound it demands.
    assert column_max(Run.id) == 2**31 - 1
    assert _PG[postgresql.BIGINT().compile(dialect=postgresql.dialect())] == 2**63 - 1  # type: ignore[no-untyped-call]
