"""A toy RAG application instrumented with the real OpenTelemetry SDK and OpenInference's conventions sends
its spans with the standard OTLP/HTTP exporter to a served ragmeta; the run gets one output per trace with
its chunks located in the dataset's documents."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.conftest import Live
from tests.otlpdata import DOCS, QUESTIONS, ToyRag


def _seed(live: Live) -> int:
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=30) as c:
        ds = c.post("/datasets", json={"name": "shop"})
        assert ds.status_code == 201, ds.text
        docs = [{"external_id": k, "text": v} for k, v in DOCS.items()]
        r = c.post(f"/datasets/{ds.json()['id']}/documents", json=docs)
        assert r.status_code == 200, r.text
        return int(ds.json()["id"])


def test_an_instrumented_app_feeds_a_run_with_located_chunks(live_server: Live) -> None:
    dataset = _seed(live_server)
    app = ToyRag(
        live_server.url, {**live_server.headers, "X-Ragmeta-Dataset": "shop", "X-Ragmeta-Run": "toy"}
    )
    try:
        answers = {q: app.ask(q) for q in QUESTIONS}
        assert app.flush() == [SpanExportResult.SUCCESS]
        # The same questions again: the same content, so the outputs keep their version.
        for q in QUESTIONS:
            app.ask(q)
        assert app.flush() == [SpanExportResult.SUCCESS, SpanExportResult.SUCCESS]
    finally:
        app.close()

    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=30) as c:
        runs = c.get(f"/datasets/{dataset}/runs").json()
        assert [r["name"] for r in runs] == ["toy"]
        outputs = c.get(f"/runs/{runs[0]['id']}/outputs").json()
        questions = {q["external_id"]: q["question"] for q in c.get(f"/datasets/{dataset}/questions").json()}
    assert sorted(questions.values()) == sorted(QUESTIONS)
    assert len(outputs) == len(QUESTIONS)
    for out in outputs:
        question = questions[out["question_id"]]
        assert out["answer"] == answers[question]
        gen = out["generator"]
        assert gen["format"] == "otlp" and gen["model"] == "toy-extractive"
        assert len(gen["trace_id"]) == 32 and int(gen["trace_id"], 16) > 0
        assert out["latency_ms"] is not None and out["latency_ms"] >= 0
        first, second = out["retrieved"]
        assert [first["rank"], second["rank"]] == [1, 2]
        assert [first["score"], second["score"]] == [1.0, 0.5]
        # Chunk 1 is a sentence of its document (exact), chunk 2 the whole document with its spacing changed.
        doc = DOCS[first["document_id"]]
        assert first["location"] == "exact"
        assert doc[first["start"] : first["end"]] == first["text"] == doc.split(". ")[0]
        assert second["location"] == "normalized"
        assert (second["start"], second["end"]) == (0, len(DOCS[second["document_id"]]))
        assert " ".join(second["text"].split()) == DOCS[second["document_id"]]
