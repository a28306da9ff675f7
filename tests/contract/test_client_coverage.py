"""The Python client (ragmeta.Client, AsyncClient) covers every operation of openapi/openapi.json, each under
its operationId with the spec's method and path."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import ragmeta
from app.sdk import operations

ROOT = Path(__file__).resolve().parents[2]
SPEC = json.loads((ROOT / "openapi" / "openapi.json").read_text())


def _spec_operations() -> dict[str, tuple[str, str]]:
    return {
        op["operationId"]: (method.upper(), path)
        for path, item in SPEC["paths"].items()
        for method, op in item.items()
    }


def _client_operations() -> dict[str, tuple[str, str]]:
    return {
        name: func.__operation__
        for name, func in inspect.getmembers(operations, inspect.isfunction)
        if hasattr(func, "__operation__")
    }


def test_every_operation_of_the_spec_is_a_method_of_both_clients() -> None:
    spec, built = _spec_operations(), _client_operations()
    missing = sorted(set(spec) - set(built))
    assert not missing, f"operations without a client method: {missing}"
    for op_id, (method, path) in spec.items():
        assert built[op_id] == (method, path), op_id
        for cls in (ragmeta.Client, ragmeta.AsyncClient):
            bound = getattr(cls, op_id, None)
            assert bound is not None and bound.__operation__ == (method, path), (cls.__name__, op_id)
    assert len(spec) == len(set(spec)) >= 80


def test_every_client_method_is_an_operation_of_the_spec() -> None:
    """A method left behind by a removed or renamed operation fails here (variants share their op's path)."""
    routes = set(_spec_operations().values())
    stale = sorted(name for name, route in _client_operations().items() if route not in routes)
    assert not stale, stale


def test_a_method_builds_its_operation_s_path() -> None:
    call = operations.metric_items(3, "classic.bleu", k=4)
    assert (call.method, call.path, dict(call.params)) == (
        "GET",
        "/runs/3/metrics/classic.bleu/items",
        {"k": 4},
    )
    assert dict(operations.pooled_report([3, 4]).params) == {"runs": "3,4"}


def test_a_name_in_a_path_is_one_segment() -> None:
    """A metric's name goes into its path encoded: ``#``, ``?`` or ``/`` in it cannot cut the URL short."""
    from app.sdk import operations

    assert operations.delete_scores(3, "external.a#b?c").path == "/runs/3/scores/external.a%23b%3Fc"
    assert operations.metric_items(1, "ref.word_recall@5").path == "/runs/1/metrics/ref.word_recall%405/items"
