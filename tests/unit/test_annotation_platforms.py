"""services.annotations.platforms on arbitrary JSON: every document is read or refused with the service's own
errors (a 400 or 422 naming the field), never an exception of another kind (a 500); and the join keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.annotations.platforms import parse
from services.annotations.service import normalise_id
from services.errors import InvalidItems, MalformedInput

KEYS = [
    "data",
    "content",
    "assessments",
    "info",
    "name",
    "source",
    "dataType",
    "value",
    "stringValue",
    "traceId",
    "subject",
    "kind",
    "id",
    "authorUserId",
    "feedback_scores",
    "value_by_author",
    "input",
    "span_id",
    "trace_id",
    "annotator_kind",
    "result",
    "score",
    "label",
    "user_id",
    "assessment_name",
    "feedback",
    "expectation",
    "valid",
    "categories",
    "details",
    "type",
    "values",
    "min",
    "max",
    "minValue",
    "maxValue",
    "optimization_direction",
    "lower_bound",
    "upper_bound",
]
WORDS = st.sampled_from(
    [
        "ANNOTATION",
        "EVAL",
        "NUMERIC",
        "CATEGORICAL",
        "BOOLEAN",
        "ui",
        "sdk",
        "HUMAN",
        "LLM",
        "LLM_JUDGE",
        "trace",
        "observation",
        "numerical",
        "categorical",
        "boolean",
        "CONTINUOUS",
        "yes",
        "x",
        "",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | WORDS
JSON: Any = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    max_leaves=30,
)


@pytest.mark.parametrize("platform", ["langfuse", "opik", "phoenix", "mlflow"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=JSON, configs=JSON)
def test_any_json_is_read_or_refused_naming_a_field(platform: str, doc: Any, configs: Any) -> None:
    raw = json.dumps(doc).encode()
    try:
        parsed = parse(platform, raw, json.dumps(configs).encode() if platform != "mlflow" else None)
    except (InvalidItems, MalformedInput) as exc:
        assert exc.items and all(i.field for i in exc.items)
    else:
        assert parsed.annotations


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00garbage", b"[" * 100_000, b"", b'{"a": 1}\n{oops'])
def test_unreadable_files_are_400s_naming_the_file(raw: bytes) -> None:
    with pytest.raises(MalformedInput) as got:
        parse("langfuse", raw, None)
    assert [i.field for i in got.value.items] == ["file"]


def test_trace_ids_compare_across_platforms() -> None:
    hex_id = "0123456789abcdef0123456789ABCDEF"
    assert normalise_id(hex_id) == normalise_id("tr-" + hex_id.lower())
    assert normalise_id("01234567-89ab-cdef-0123-456789abcdef") == hex_id.lower()


SCORE = {"data": [{"name": "q", "source": "EVAL", "dataType": "NUMERIC", "value": 1, "traceId": "ab"}]}
OPIK = {"content": [{"id": "t", "feedback_scores": [{"name": "q", "source": "sdk", "value": 1}]}]}
PHOENIX = {"data": [{"name": "q", "annotator_kind": "LLM", "span_id": "s", "result": {"score": 1}}]}


@pytest.mark.parametrize(
    ("platform", "doc", "configs", "field"),
    [
        (
            "langfuse",
            SCORE,
            {"data": [{"name": "q", "dataType": "CATEGORICAL", "categories": ["a"]}]},
            "configs.data[0].categories[0]",
        ),
        (
            "langfuse",
            SCORE,
            {"data": [{"name": "q", "dataType": "CATEGORICAL", "categories": "a"}]},
            "configs.data[0].categories",
        ),
        ("opik", {"content": [{"id": "t", "feedback_scores": 3}]}, None, "content[0].feedback_scores"),
        ("opik", OPIK, {"content": [{"name": "q", "type": "numerical", "details": [1]}]}, None),
        (
            "phoenix",
            PHOENIX,
            {"data": [{"name": "q", "type": "CATEGORICAL", "values": [2]}]},
            "configs.data[0].values[0]",
        ),
    ],
)
def test_nested_fields_of_the_wrong_type_are_named(
    platform: str, doc: Any, configs: Any, field: str | None
) -> None:
    raw_configs = json.dumps(configs).encode() if configs is not None else None
    if field is None:  # details of another type: a config without its bounds, read
        assert parse(platform, json.dumps(doc).encode(), raw_configs).configs["q"].min is None
        return
    with pytest.raises(InvalidItems) as got:
        parse(platform, json.dumps(doc).encode(), raw_configs)
    assert field in [i.field for i in got.value.items]
