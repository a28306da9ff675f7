"""A bounded loopback load on POST /v1/traces (uvicorn, real threadpool and connection pool; SQLite, and
PostgreSQL with RAGMETA_TEST_DATABASE_URL): 8 exporters send 4 requests each at once, every request 3
traces whose questions overlap with the other exporters', into one run, the first requests racing to create
the run and the questions.

Every answer must be 200 or 503 (an overload, with Retry-After); afterwards the run exists once, each
question once, one output per question at version 1 (the same answer every time: a trace sent again never
changes content) with its chunk located. The timeout only keeps a deadlock from hanging the suite; nothing
is timed."""

from __future__ import annotations

import asyncio
import json

import httpx
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from services.models import Output, Question, RetrievedChunk, Run
from tests.conftest import Live
from tests.integration.test_concurrency import HANG_GUARD_S
from tests.otlpdata import DOCS

N_EXPORTERS = 8
REQUESTS = 4
PER_REQUEST = 3
N_QUESTIONS = 12
DOC_IDS = sorted(DOCS)


def _question(n: int) -> str:
    return f"Question number {n} about {DOC_IDS[n % len(DOC_IDS)]}?"


def _attr(key: str, value: str | float) -> dict[str, object]:
    kind = "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: value}}


def _trace(exporter: int, request: int, slot: int, n: int) -> list[dict[str, object]]:
    trace = f"{exporter:08x}{request:08x}{slot:08x}{n + 1:08x}"
    root, llm, ret = f"{1:08x}{n + 1:08x}", f"{2:08x}{n + 1:08x}", f"{3:08x}{n + 1:08x}"
    doc = DOCS[DOC_IDS[n % len(DOC_IDS)]]
    t = 1_700_000_000_000_000_000

    def sp(sid: str, name: str, attrs: list[dict[str, object]], parent: str | None) -> dict[str, object]:
        out: dict[str, object] = {
            "traceId": trace,
            "spanId": sid,
            "name": name,
            "startTimeUnixNano": str(t),
            "endTimeUnixNano": str(t + 1000),
            "attributes": attrs,
        }
        if parent:
            out["parentSpanId"] = parent
        return out

    return [
        sp(
            root, "rag", [_attr("openinference.span.kind", "CHAIN"), _attr("input.value", _question(n))], None
        ),
        sp(
            ret,
            "retrieve",
            [
                _attr("openinference.span.kind", "RETRIEVER"),
                _attr("retrieval.documents.0.document.content", doc),
                _attr("retrieval.documents.0.document.score", 0.5),
            ],
            root,
        ),
        sp(
            llm,
            "llm",
            [_attr("openinference.span.kind", "LLM"), _attr("output.value", f"answer {n}")],
            root,
        ),
    ]


def _body(exporter: int, request: int) -> bytes:
    spans = [
        s
        for slot in range(PER_REQUEST)
        for s in _trace(exporter, request, slot, (exporter + request * PER_REQUEST + slot) % N_QUESTIONS)
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def test_concurrent_exporters_write_each_question_and_output_once(live_server: Live, engine: Engine) -> None:
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as c:
        ds = c.post("/datasets", json={"name": "shop"}).json()["id"]
        docs = [{"external_id": k, "text": v} for k, v in DOCS.items()]
        assert c.post(f"/datasets/{ds}/documents", json=docs).status_code == 200
    headers = {
        **live_server.headers,
        "Content-Type": "application/json",
        "X-Ragmeta-Dataset": "shop",
        "X-Ragmeta-Run": "load",
    }

    async def load() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=live_server.url, timeout=HANG_GUARD_S) as c:

            async def exporter(e: int) -> list[httpx.Response]:
                return [
                    await c.post("/v1/traces", content=_body(e, r), headers=headers) for r in range(REQUESTS)
                ]

            done = await asyncio.gather(*(exporter(e) for e in range(N_EXPORTERS)))
            return [r for rs in done for r in rs]

    answers = asyncio.run(load())
    assert len(answers) == N_EXPORTERS * REQUESTS
    codes = [r.status_code for r in answers]
    assert set(codes) <= {200, 503}, [r.text[:300] for r in answers if r.status_code not in (200, 503)]
    for r in answers:
        if r.status_code == 503:
            assert r.headers["Retry-After"].isdigit(), r.text
        else:
            assert r.json()["unmapped_spans"] == 0 and r.json()["chunks"]["exact"] == PER_REQUEST
    assert codes.count(200) >= 1
    sent = {
        (e + r * PER_REQUEST + s) % N_QUESTIONS
        for e in range(N_EXPORTERS)
        for r, code in zip(range(REQUESTS), codes[e * REQUESTS : (e + 1) * REQUESTS], strict=True)
        if code == 200
        for s in range(PER_REQUEST)
    }

    with Session(engine) as s:
        runs = s.scalars(select(Run).where(Run.dataset_id == ds)).all()
        assert [r.name for r in runs] == ["load"]
        questions = s.execute(select(Question.question, func.count()).group_by(Question.question)).all()
        assert sorted(q for q, _ in questions) == sorted(_question(n) for n in sent)
        assert all(count == 1 for _, count in questions)
        outputs = s.execute(
            select(Question.question, Output.answer, Output.version, func.count(RetrievedChunk.id))
            .join(Question, Question.id == Output.question_id)
            .join(RetrievedChunk, RetrievedChunk.output_id == Output.id)
            .where(Output.run_id == runs[0].id)
            .group_by(Question.question, Output.answer, Output.version)
        ).all()
        assert sorted(outputs) == sorted((_question(n), f"answer {n}", 1, 1) for n in sent)
        located = s.scalars(select(RetrievedChunk.location)).all()
        assert set(located) == {"exact"}
