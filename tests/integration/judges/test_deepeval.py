"""DeepEval metrics through the API, the judge gateway and the loopback test judge: hand-computed values from
scripted verdicts, judge calls per sample, a free recompute (gateway cache), the concurrency bound, failures
recorded per item, French prompts sent as json_schema requests, and the plain-text fallback."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, StreamingResponse

from app.settings import Settings
from services.metrics.base import Sample
from services.metrics.context import ScoringContext
from services.metrics.registry import BY_NAME
from services.models import MetricScore
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.fakellm import FakeLLM, garbage
from tests.integration.judges.helpers import rows, score_samples
from tests.integration.judges.helpers import score as shared_score
from tests.judgefake import all_text, judge_script, start_judge

CONTEXTS = [
    "Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go de données.",
    "Le forfait Intégral coûte 24,99 € par mois avec 150 Go.",
    "La résiliation prend effet sous 10 jours.",
]
ANSWERS = {
    "q1": "Le forfait Essentiel coûte 9,99 € par mois.",
    "q2": "Il faut appeler le service client ; la résiliation prend effet sous 10 jours.",
    "q3": "24,99 € contre 9,99 €.",
}
# Judge calls per sample with include_reason=True (docs/judges.md, DeepEval), 3 contexts.
CALLS = {
    "deepeval.hallucination": 2,
    "deepeval.answer_relevancy": 3,
    "deepeval.faithfulness": 4,
    "deepeval.contextual_precision": 2,
    "deepeval.contextual_recall": 2,
    "deepeval.contextual_relevancy": 4,  # one per context, plus the reason
}
MAX_CONCURRENCY = 2


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = start_judge()
    yield server
    server.stop()


@pytest.fixture
def settings(settings: Settings, fake: FakeLLM) -> Settings:
    judge = settings.judge
    judge.base_url, judge.model = fake.base_url, "judge-model"
    judge.timeout_s, judge.retries, judge.max_concurrency = 1.0, 1, MAX_CONCURRENCY
    return settings


def schema_of(body: dict[str, Any]) -> str | None:
    """The verdict class of a DeepEval json_schema request (several metrics name their wrapper "Verdicts")."""
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    defs = spec.get("schema", {}).get("$defs", {})
    return next(iter(defs), None) or spec.get("name")


def scored(client: TestClient, answers: dict[str, str], metrics: list[str], k: int = 3) -> tuple[int, Any]:
    ds = load_mini(client)
    run = make_run(client, ds)
    # Contexts rotated per output: Faithfulness's truths depend on the contexts alone, and the gateway would
    # answer a second identical request from its cache (or not, if both are in flight), blurring call counts.
    outputs = [
        {"question_id": q, "answer": a, "retrieved": [{"text": c} for c in CONTEXTS[i:] + CONTEXTS[:i]]}
        for i, (q, a) in enumerate(answers.items())
    ]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    return run, score(client, run, metrics, k)


def score(client: TestClient, run: int, metrics: list[str], k: int = 3, recompute: bool = False) -> Any:
    return shared_score(client, run, metrics, recompute, k=k, check_done=False)


def details(engine: Engine, metric: str) -> list[dict[str, Any]]:
    with Session(engine) as s:
        found = s.scalars(select(MetricScore).where(MetricScore.metric == metric).order_by(MetricScore.id))
        return [dict(m.details or {}) for m in found]


def test_scripted_verdicts_give_hand_computed_scores_and_a_free_recompute(
    client: TestClient, fake: FakeLLM, engine: Engine, settings: Settings
) -> None:
    def override(body: dict[str, Any]) -> str | None:
        # Answers tagged with their request, so that no two samples send an identical follow-up request
        # (the gateway would answer the second from its cache if the first were done: counts would vary).
        tag = zlib.crc32(all_text(body).encode())

        def verdicts(*values: str) -> str:
            return json.dumps({"verdicts": [{"verdict": v, "reason": f"raison {v} {tag}"} for v in values]})

        return {
            "Claims": json.dumps({"claims": [f"affirmation {i} {tag}" for i in range(3)]}),
            # borderline passes unless penalize_ambiguous_claims: 2 of 3
            "FaithfulnessVerdict": verdicts("yes", "borderline", "no"),
            # relevant nodes at ranks 2 and 3: (1/2 + 2/3) / 2
            "ContextualPrecisionVerdict": verdicts("no", "yes", "yes"),
        }.get(schema_of(body) or "")

    fake.script = judge_script(override)
    metrics = ["deepeval.faithfulness", "deepeval.contextual_precision"]
    run, job = scored(client, {"q1": ANSWERS["q1"], "q2": ANSWERS["q2"]}, metrics)
    assert (job["status"], job["done"], job["failed"]) == ("done", 4, 0), job
    table = rows(client, run)
    for q in ("q1", "q2"):
        assert table[q]["deepeval.faithfulness@3"] == pytest.approx(2 / 3)
        assert table[q]["deepeval.contextual_precision@3"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    faith = details(engine, "deepeval.faithfulness@3")[0]
    assert faith["verdicts"] == ["yes", "borderline", "no"] and faith["prompts"] == "fr"
    assert faith["explanation"] and faith["scale"].startswith("0-1")
    assert faith["structured_output"] == "json_schema" and faith["judge_calls"] == 4
    calls = len(fake.requests)
    assert calls == 2 * (4 + 2)

    # the score memo: the same scores, not even a gateway call
    again = score(client, run, metrics, recompute=True)
    assert (again["done"], again["failed"], again["summary"]["score_memo_hits"]) == (4, 0, 4)
    assert len(fake.requests) == calls and "judge_usage" not in again["summary"]
    assert rows(client, run) == table
    for d in details(engine, "deepeval.faithfulness@3"):
        assert (d["judge_calls"], d["score_memo"]["judge_answers"]) == (0, 4)
        assert d["verdicts"] == ["yes", "borderline", "no"]
    # without it, every request is answered from the gateway's cache
    settings.scoring.score_memo = False
    again = score(client, run, metrics, recompute=True)
    assert (again["done"], again["failed"]) == (4, 0)
    assert len(fake.requests) == calls
    assert rows(client, run) == table
    for d in details(engine, "deepeval.faithfulness@3"):
        assert d["judge_calls"] == d["cache_hits"] == 4


def test_every_metric_scores_with_the_documented_calls_and_french_prompts(
    client: TestClient, fake: FakeLLM, engine: Engine
) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    out = [{"question_id": "q1", "answer": ANSWERS["q1"], "retrieved": [{"text": c} for c in CONTEXTS]}]
    assert client.post(f"/runs/{run}/outputs", json=out).status_code == 200
    for name, calls in CALLS.items():
        assert BY_NAME[name].library == "deepeval"
        before = len(fake.requests)
        job = score(client, run, [name])
        assert (job["done"], job["failed"]) == (1, 0), job
        assert len(fake.requests) - before == calls, name
        full = BY_NAME[name].full_name(3)
        # the default judge answers "yes" to every verdict and splits every text in two
        assert rows(client, run)["q1"][full] == pytest.approx(1.0), name
        (d,) = details(engine, full)
        assert d["judge_calls"] == calls and d["prompts"] == "fr" and d["explanation"], d
    assert sorted(n for n, s in BY_NAME.items() if s.library == "deepeval") == sorted(CALLS)
    for body in fake.requests:
        assert body["response_format"]["type"] == "json_schema" and body["temperature"] == 0
        assert body["model"] == "judge-model"
        assert "français" in all_text(body) and "Please make sure" not in all_text(body)


def test_concurrency_never_exceeds_the_setting(client: TestClient, fake: FakeLLM) -> None:
    fake.latency_s = 0.05
    _, job = scored(client, ANSWERS, ["deepeval.contextual_relevancy", "deepeval.faithfulness"])
    assert (job["done"], job["failed"]) == (6, 0)
    assert fake.max_in_flight == MAX_CONCURRENCY


async def _stall() -> AsyncIterator[bytes]:
    await asyncio.sleep(4)
    yield b"{}"


def test_failing_judge_calls_are_per_item_errors(client: TestClient, fake: FakeLLM) -> None:
    chatty = judge_script(lambda body: "Désolé, je ne sais pas." if "BAVARD" in all_text(body) else None)

    def script(body: dict[str, Any], i: int) -> Any:
        text = all_text(body)
        if "PANNE" in text:
            return JSONResponse({"error": {"message": "injected"}}, status_code=500)
        if "CHARABIA" in text:
            return garbage()
        if "BLOQUE" in text:
            return StreamingResponse(_stall(), media_type="application/json")
        return chatty(body, i)

    fake.script = script
    answers = {
        "q1": ANSWERS["q1"],
        "q2": "PANNE du service.",
        "q3": "CHARABIA complet.",
        "q4": "BAVARD comme toujours.",
        "q5": "BLOQUE ici.",
    }
    run, job = scored(client, answers, ["deepeval.answer_relevancy"])
    assert job["status"] == "done" and (job["done"], job["failed"]) == (1, 4), job
    assert job["errors_by_cause"] == {
        "http_500": 1,
        "malformed_response": 1,
        "malformed_judge_output": 1,
        "timeout": 1,
    }
    table = rows(client, run)
    assert table["q1"]["deepeval.answer_relevancy"] == pytest.approx(1.0)
    assert table["q2"]["deepeval.answer_relevancy"] is None
    assert table["q2"]["deepeval.answer_relevancy.error"].startswith("http_500: ")
    assert table["q4"]["deepeval.answer_relevancy.error"].startswith("malformed_judge_output: ")


def test_english_prompts_and_plain_text_when_the_server_rejects_json_schema(
    settings: Settings, fake: FakeLLM
) -> None:
    from services.metrics.judges.deepeval import Adapter

    plain = judge_script()

    def script(body: dict[str, Any], i: int) -> Any:
        if "response_format" in body:
            return JSONResponse({"error": {"message": "response_format is not supported"}}, status_code=400)
        return plain(body, i)

    fake.script = script
    settings.judge.language = "en"
    adapter = Adapter(BY_NAME["deepeval.answer_relevancy"])
    ctx = ScoringContext(settings, language="fr", k=3)
    assert adapter.config(ctx)["judge"]["prompts"] == "en" and not adapter.translates(ctx)
    assert "prompt_templates" not in adapter.config(ctx)
    sample = Sample(
        output_id=1,
        question="How much is the Essential plan?",
        answer="It costs 9.99 euros a month.",
        contexts=tuple(CONTEXTS),
        reference_answer="9.99 euros a month.",
        answerable=True,
        language="en",
        passages=(),
        retrieved=(),
        documents={},
        k=3,
    )
    (res,) = score_samples(settings, "deepeval.answer_relevancy", [sample], language="fr")
    assert res.error is None and res.value == pytest.approx(1.0), res
    assert res.details["structured_output"] == "text" and res.details["prompts"] == "en"
    # one rejected json_schema request, then the three calls as plain text
    assert ["response_format" in b for b in fake.requests] == [True, False, False, False]
    assert all("Please make sure" in all_text(b) for b in fake.requests)


def test_empty_answer_is_undefined_not_an_error(settings: Settings, fake: FakeLLM) -> None:
    from services.metrics.judges.deepeval import Adapter

    adapter = Adapter(BY_NAME["deepeval.faithfulness"])
    ctx = ScoringContext(settings, language="fr", k=3)
    assert adapter.translates(ctx) and adapter.config(ctx)["prompt_templates"]
    sample = Sample(1, "Combien ?", "  ", tuple(CONTEXTS), None, True, "fr", (), (), {}, 3)
    (res,) = score_samples(settings, "deepeval.faithfulness", [sample], language="fr")
    assert res.value is None and res.error is None and res.reason and "empty answer" in res.reason
    assert fake.requests == []
