"""A run fed by OTLP traces (POST /v1/traces, OpenInference spans), and the numbers the platforms' exports
give it: two annotators' 1..5 scores of each answer and a judge's 0..1 score, one per trace."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi.testclient import TestClient

from tests.otlpdata import DOCS

R1 = [5, 4, 4, 3, 2, 5, 1, 2, 3, 4, 1, 3]
R2 = [4, 4, 5, 3, 1, 5, 2, 2, 3, 3, 1, 4]
JUDGE = [0.91, 0.72, 0.80, 0.55, 0.30, 0.95, 0.12, 0.41, 0.50, 0.66, 0.20, 0.58]
N = len(R1)
LEVELS = {1: "wrong", 2: "poor", 3: "partial", 4: "good", 5: "perfect"}
DOC_IDS = sorted(DOCS)


def question(i: int) -> str:
    return f"Question {i}: what does the {DOC_IDS[i % len(DOC_IDS)]} policy say?"


def trace_id(i: int) -> str:
    return f"{0xA1B2C3D4:08x}{i + 1:024x}"


def root_span(i: int) -> str:
    return f"{1:08x}{i + 1:08x}"


def retriever_span(i: int) -> str:
    return f"{2:08x}{i + 1:08x}"


def _attr(key: str, value: str | float) -> dict[str, Any]:
    kind = "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: value}}


def _spans(i: int) -> list[dict[str, Any]]:
    t = 1_700_000_000_000_000_000 + i * 10_000_000
    doc = DOCS[DOC_IDS[i % len(DOC_IDS)]]

    def span(sid: str, name: str, attrs: list[dict[str, Any]], parent: str | None) -> dict[str, Any]:
        out = {
            "traceId": trace_id(i),
            "spanId": sid,
            "name": name,
            "startTimeUnixNano": str(t),
            "endTimeUnixNano": str(t + 5_000_000),
            "attributes": attrs,
        }
        return {**out, "parentSpanId": parent} if parent else out

    root = span(
        root_span(i),
        "rag",
        [
            _attr("openinference.span.kind", "CHAIN"),
            _attr("input.value", question(i)),
            _attr("output.value", f"Answer {i}: {doc}"),
        ],
        None,
    )
    retrieve = span(
        retriever_span(i),
        "retrieve",
        [
            _attr("openinference.span.kind", "RETRIEVER"),
            _attr("retrieval.documents.0.document.content", doc),
            _attr("retrieval.documents.0.document.score", 0.5),
        ],
        root_span(i),
    )
    return [root, retrieve]


def otlp_body(indices: range | list[int] = range(N)) -> bytes:
    spans = [s for i in indices for s in _spans(i)]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


@dataclass(frozen=True)
class TracedRun:
    dataset_id: int
    run_id: int


def traced_run(client: TestClient | httpx.Client, run: str = "traced") -> TracedRun:
    """Dataset ``shop`` with its documents and a run of N outputs, each sent as one OTLP trace."""
    ds = client.post("/datasets", json={"name": "shop"})
    assert ds.status_code == 201, ds.text
    docs = [{"external_id": k, "text": v} for k, v in DOCS.items()]
    assert client.post(f"/datasets/{ds.json()['id']}/documents", json=docs).status_code == 200
    headers = {"Content-Type": "application/json", "X-Ragmeta-Dataset": "shop", "X-Ragmeta-Run": run}
    sent = client.post("/v1/traces", content=otlp_body(), headers=headers)
    assert sent.status_code == 200, sent.text
    assert sent.json()["outputs"]["created"] == N
    return TracedRun(int(ds.json()["id"]), int(sent.json()["run_id"]))
