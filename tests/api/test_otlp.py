"""POST /v1/traces through the app: the OTLP JSON encoding with GenAI (OpenLLMetry) spans, the protobuf
answer, unmapped spans named, one test per class of malformed request, and who may send traces."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from sqlalchemy import Engine

from app.main import create_app
from app.settings import Settings
from services.otlp.decode import parse_json
from tests.conftest import FAST_HASH, issue_key
from tests.otlpdata import DOCS

TARGET = {"X-Ragmeta-Dataset": "shop", "X-Ragmeta-Run": "traced"}
JSON_HEADERS = {**TARGET, "Content-Type": "application/json"}
QUESTION = "How long do I have to return an item?"
ANSWER = "Within 30 days of delivery."
# "boxes" for "box": found by the fuzzy stage, not verbatim.
FUZZY_CHUNK = "Items must be unused and in their boxes."


def _seed(client: TestClient) -> int:
    ds = client.post("/datasets", json={"name": "shop"})
    assert ds.status_code == 201, ds.text
    docs = [{"external_id": k, "text": v} for k, v in DOCS.items()]
    assert client.post(f"/datasets/{ds.json()['id']}/documents", json=docs).status_code == 200
    return int(ds.json()["id"])


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(
    trace: str, span: str, name: str, attrs: dict[str, Any], parent: str | None = None, t: int = 0
) -> Any:
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + t),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + t + 5_000_000),
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def _request(spans: list[Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "openllmetry-app")]},
                "scopeSpans": [{"scope": {"name": "traceloop"}, "spans": spans}],
            }
        ]
    }


T1, T2 = "a" * 32, "b" * 32


def _genai_trace() -> list[Any]:
    """A workflow with an OpenInference retriever span, a GenAI LLM span and a tool span; and a second trace
    holding only a retriever span (no answer)."""
    return [
        _span(T1, "1" * 16, "workflow", {"traceloop.span.kind": "workflow"}),
        _span(
            T1,
            "2" * 16,
            "retrieve",
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": QUESTION,
                "retrieval.documents.0.document.content": "Returns are accepted within 30 days of delivery.",
                "retrieval.documents.0.document.score": 0.9,
                "retrieval.documents.1.document.content": FUZZY_CHUNK,
                "retrieval.documents.1.document.score": 0.4,
                "retrieval.documents.2.document.content": "Gift cards never expire.",
            },
            parent="1" * 16,
            t=1,
        ),
        _span(
            T1,
            "3" * 16,
            "openai.chat",
            {
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "Answer from the context.",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": QUESTION,
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": ANSWER,
            },
            parent="1" * 16,
            t=2,
        ),
        _span(T1, "4" * 16, "lookup_tool", {"tool.name": "calendar"}, parent="1" * 16, t=3),
        _span(T2, "5" * 16, "retrieve", {"openinference.span.kind": "RETRIEVER", "input.value": "Where?"}),
    ]


def test_a_genai_json_trace_becomes_an_output_and_every_other_span_is_named(client: TestClient) -> None:
    dataset = _seed(client)
    body = json.dumps(_request(_genai_trace()))
    r = client.post("/v1/traces", content=body, headers=JSON_HEADERS)
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["traces"], got["spans"], got["run"], got["run_created"]) == (2, 5, "traced", True)
    assert got["outputs"]["created"] == 1 and got["questions_created"] == 1
    assert got["chunks"] == {
        "total": 3,
        "given": 0,
        "exact": 1,
        "normalized": 0,
        "fuzzy": 1,
        "unlocated": 1,
        "lowest_fuzzy_score": got["chunks"]["lowest_fuzzy_score"],
    }
    assert 90 <= got["chunks"]["lowest_fuzzy_score"] < 100
    # The workflow span (no OpenInference kind, no GenAI attributes), the tool span and the answerless trace.
    named = {(u["trace_id"], u["span_id"]): u for u in got["unmapped"]}
    assert set(named) == {(T1, "1" * 16), (T1, "4" * 16), (T2, "5" * 16)}
    assert got["unmapped_spans"] == 3 == got["partialSuccess"]["rejectedSpans"]
    assert "no answer" in named[(T2, "5" * 16)]["reason"]
    assert "nothing to read" in named[(T1, "4" * 16)]["reason"]
    assert "3 span(s)" in got["partialSuccess"]["errorMessage"]

    [run] = client.get(f"/datasets/{dataset}/runs").json()
    [out] = client.get(f"/runs/{run['id']}/outputs").json()
    assert out["answer"] == ANSWER
    # Every span of the trace is remembered, the unmapped tool span too: a span annotation names any of them.
    assert out["generator"] == {
        "kind": "external",
        "format": "otlp",
        "trace_id": T1,
        "span_ids": ["1" * 16, "2" * 16, "3" * 16, "4" * 16],
        "model": "gpt-test",
    }
    exact, fuzzy, unlocated = out["retrieved"]
    assert (exact["document_id"], exact["start"], exact["location"]) == ("returns", 0, "exact")
    assert DOCS["returns"][exact["start"] : exact["end"]] == exact["text"]
    assert fuzzy["location"] == "fuzzy" and fuzzy["document_id"] == "returns"
    assert DOCS["returns"][fuzzy["start"] : fuzzy["end"]].startswith("Items must be unused")
    assert unlocated["location"] == "unlocated" and unlocated["start"] is None
    assert [c["score"] for c in out["retrieved"]] == [0.9, 0.4, None]

    # The same request again (an exporter's retry, gzip-compressed this time) changes nothing.
    gzipped = {**JSON_HEADERS, "Content-Encoding": "gzip"}
    again = client.post("/v1/traces", content=gzip.compress(body.encode()), headers=gzipped).json()
    assert again["outputs"] == {**got["outputs"], "created": 0, "unchanged": 1}
    assert (again["run_created"], again["questions_created"]) == (False, 0)


def test_a_protobuf_request_is_answered_in_protobuf_with_the_rejected_count(client: TestClient) -> None:
    _seed(client)
    message = parse_json(json.dumps(_request(_genai_trace())).encode())
    raw = message.SerializeToString()
    headers = {**TARGET, "Content-Type": "application/x-protobuf"}
    r = client.post("/v1/traces", content=raw, headers=headers)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_spans == 3
    # Asking for JSON gets the full answer; gzip is read.
    r = client.post(
        "/v1/traces",
        content=gzip.compress(raw),
        headers={**headers, "Accept": "application/json", "Content-Encoding": "gzip"},
    )
    assert r.status_code == 200 and r.json()["outputs"]["unchanged"] == 1


def _bad_json(**span: Any) -> bytes:
    base = _span(T1, "1" * 16, "s", {})
    base.update(span)
    return json.dumps(_request([base])).encode()


SPANS_0 = "resourceSpans[0].scopeSpans[0].spans[0]"


@pytest.fixture(scope="module")
def one_app(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the refusals (they write nothing): building an app per case costs seconds each."""
    settings = Settings(
        database_url=database_url,
        data_dir=tmp_path_factory.mktemp("otlp") / "data",
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        report_processes=0,
        auth={"enabled": True, **FAST_HASH},  # type: ignore[arg-type]
    )
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def refusing(one_app: TestClient, engine: Engine) -> TestClient:
    # The tables are emptied after every test: a new key (and the dataset) each time.
    one_app.headers["Authorization"] = f"Bearer {issue_key(one_app.app, 'admin')}"  # type: ignore[arg-type]
    _seed(one_app)
    return one_app


BAD = [
    # (what, headers, body, status, field)
    ("media type", {**TARGET, "Content-Type": "text/plain"}, b"x", 415, "Content-Type"),
    (
        "no run header",
        {"X-Ragmeta-Dataset": "shop", "Content-Type": "application/json"},
        b"{}",
        422,
        "X-Ragmeta-Run",
    ),
    (
        "no dataset header",
        {"X-Ragmeta-Run": "r", "Content-Type": "application/json"},
        b"{}",
        422,
        "X-Ragmeta-Dataset",
    ),
    ("unknown dataset", {**JSON_HEADERS, "X-Ragmeta-Dataset": "nope"}, b"{}", 404, "X-Ragmeta-Dataset"),
    (
        "protobuf that does not parse",
        {**TARGET, "Content-Type": "application/x-protobuf"},
        b"\xff\xff\xff",
        400,
        "body",
    ),
    ("not JSON", JSON_HEADERS, b"{resourceSpans", 400, "body"),
    ("JSON not an object", JSON_HEADERS, b"[1, 2]", 400, "body"),
    ("resourceSpans not a list", JSON_HEADERS, b'{"resourceSpans": {}}', 400, "resourceSpans"),
    ("a span not an object", JSON_HEADERS, json.dumps(_request([7])).encode(), 400, SPANS_0),
    ("traceId not hex", JSON_HEADERS, _bad_json(traceId="z" * 32), 400, f"{SPANS_0}.traceId"),
    ("traceId of the wrong length", JSON_HEADERS, _bad_json(traceId="ab" * 8), 400, f"{SPANS_0}.traceId"),
    ("traceId all zero", JSON_HEADERS, _bad_json(traceId="0" * 32), 400, f"{SPANS_0}.traceId"),
    ("spanId missing", JSON_HEADERS, _bad_json(spanId=None), 400, f"{SPANS_0}.spanId"),
    (
        "parentSpanId of the wrong length",
        JSON_HEADERS,
        _bad_json(parentSpanId="ab"),
        400,
        f"{SPANS_0}.parentSpanId",
    ),
    ("a field of the wrong type", JSON_HEADERS, _bad_json(name=5), 400, f"{SPANS_0}.name"),
    (
        "an attribute value of the wrong type",
        JSON_HEADERS,
        _bad_json(attributes=[{"key": "a", "value": {"intValue": "x"}}]),
        400,
        f"{SPANS_0}.attributes.value.intValue",
    ),
    ("NUL in an attribute", JSON_HEADERS, _bad_json(name="a\x00b"), 422, "NUL"),
    (
        "NUL in a gzip attribute",
        {**JSON_HEADERS, "Content-Encoding": "gzip"},
        gzip.compress(_bad_json(name="a\x00b")),
        422,
        "NUL",
    ),
    (
        "JSON too deep",
        {**JSON_HEADERS, "Content-Encoding": "gzip"},
        gzip.compress(b"[" * 100 + b"]" * 100),
        400,
        "body",
    ),
    ("gzip declared, not gzip", {**JSON_HEADERS, "Content-Encoding": "gzip"}, b"{}", 400, "Content-Encoding"),
    ("an encoding not read", {**JSON_HEADERS, "Content-Encoding": "br"}, b"{}", 415, "Content-Encoding"),
]


@pytest.mark.parametrize(("what", "headers", "body", "status", "field"), BAD, ids=[b[0] for b in BAD])
def test_malformed_otlp_is_refused_naming_the_part(
    refusing: TestClient, what: str, headers: dict[str, str], body: bytes, status: int, field: str
) -> None:
    r = refusing.post("/v1/traces", content=body, headers=headers)
    assert r.status_code == status, r.text
    fields = [i["field"] for i in r.json()["items"]]
    if field == "NUL":
        assert any(f.endswith("spans[0].name") for f in fields) and "NUL" in r.text, r.json()
    else:
        assert field in fields, r.json()


def test_a_protobuf_span_with_a_short_trace_id_is_named(refusing: TestClient) -> None:
    message = ExportTraceServiceRequest()
    span = message.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 8, b"\x02" * 8, "short"
    r = refusing.post(
        "/v1/traces",
        content=message.SerializeToString(),
        headers={**TARGET, "Content-Type": "application/x-protobuf"},
    )
    assert r.status_code == 400 and r.json()["items"][0]["field"] == f"{SPANS_0}.traceId"


def test_a_protobuf_attribute_holding_nul_is_named(refusing: TestClient) -> None:
    message = ExportTraceServiceRequest()
    span = message.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "s"
    attr = span.attributes.add()
    attr.key, attr.value.string_value = "input.value", "a\x00b"
    r = refusing.post(
        "/v1/traces",
        content=message.SerializeToString(),
        headers={**TARGET, "Content-Type": "application/x-protobuf"},
    )
    assert r.status_code == 422 and r.json()["items"][0]["field"] == f"{SPANS_0}.attributes.input.value"


def test_a_gzip_body_inflating_past_the_limit_is_refused(refusing: TestClient) -> None:
    limit = refusing.app.state.resources.settings.max_request_bytes  # type: ignore[attr-defined]
    bomb = gzip.compress(b" " * (limit + 10))
    r = refusing.post("/v1/traces", content=bomb, headers={**JSON_HEADERS, "Content-Encoding": "gzip"})
    assert r.status_code == 400 and r.json()["items"][0]["field"] == "body"


@pytest.mark.parametrize(("role", "status"), [("editor", 200), ("viewer", 403), ("rater", 403)])
def test_traces_are_written_by_the_writer_roles(refusing: TestClient, role: str, status: int) -> None:
    key = issue_key(refusing.app, f"otel-{role}", role)  # type: ignore[arg-type]
    body = json.dumps(_request(_genai_trace()))
    r = refusing.post("/v1/traces", content=body, headers={**JSON_HEADERS, "Authorization": f"Bearer {key}"})
    assert r.status_code == status, r.text
    anonymous = refusing.post("/v1/traces", content=body, headers={**JSON_HEADERS, "Authorization": ""})
    assert anonymous.status_code == 401
