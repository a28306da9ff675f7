"""Ragas metrics run by the real library against the loopback test judge, through the judge gateway and the
scoring API: hand-computed values from scripted verdicts, calls per sample, cache on re-run, concurrency
bound, per-item failures, French prompt adaptation."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, StreamingResponse

from app.settings import Settings
from services.config import JudgeSettings
from services.models import MetricScore
from tests.api.helpers import MINI, create_dataset, upload
from tests.fakellm import FakeLLM, garbage
from tests.integration.judges.helpers import score
from tests.integration.test_scoring import rows_by_question
from tests.judgefake import all_text, completion, embedded_schema, judge_script, start_judge

ALL = [
    "ragas.faithfulness",
    "ragas.answer_relevancy",
    "ragas.factual_correctness:f1",
    "ragas.factual_correctness:recall",
    "ragas.factual_correctness:precision",
    "ragas.context_precision",
    "ragas.context_recall",
]
USEFUL = "Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go de données."
NOISE = "La résiliation prend effet sous 10 jours."
OTHER = "Si le wifi est lent, redémarrez la box."


def outputs(answers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    answers = answers or {}
    ctx = {"q1": [NOISE, USEFUL, OTHER], "q2": [NOISE], "q3": [USEFUL, OTHER], "q4": [], "q5": [OTHER]}
    return [
        {
            "question_id": q,
            "answer": answers.get(q, "9,99 € par mois." if q != "q4" else "Je ne sais pas."),
            "retrieved": [{"text": t} for t in ctx[q]],
        }
        for q in ("q1", "q2", "q3", "q4", "q5")
    ]


def make_run(client: TestClient, language: str, answers: dict[str, str] | None = None) -> int:
    ds = create_dataset(client, f"mini-{language}", language)
    for kind, name in (("documents", "documents.jsonl"), ("questions", "questions.jsonl")):
        r = upload(client, f"/datasets/{ds}/{kind}", name, (MINI / name).read_bytes())
        assert r.status_code == 200, r.text
    r = client.post(f"/datasets/{ds}/runs", json={"name": "r", "system": {"retriever": "external", "k": 5}})
    assert r.status_code == 201, r.text
    run = int(r.json()["id"])
    assert client.post(f"/runs/{run}/outputs", json=outputs(answers)).status_code == 200
    return run


def details(session: Session, metric: str) -> dict[str, dict[str, Any]]:
    """Score details by question id (the table in the API carries values only)."""
    from services.models import Output, Question

    rows = session.execute(
        select(Question.external_id, MetricScore.details)
        .join(Output, Output.id == MetricScore.output_id)
        .join(Question, Question.id == Output.question_id)
        .where(MetricScore.metric == metric)
    ).all()
    return {q: dict(d or {}) for q, d in rows}


def memoized(session: Session, metrics: list[str]) -> dict[str, list[str]]:
    """The questions whose last score of each metric came from the score memo."""
    session.expire_all()
    return {
        f"{m}@5": sorted(q for q, d in details(session, f"{m}@5").items() if "score_memo" in d)
        for m in metrics
    }


def memo_hits(job: dict[str, Any]) -> int:
    return int(job["summary"].get("score_memo_hits", 0))


QUESTIONS = ["q1", "q2", "q3", "q4", "q5"]


# --------------------------------------------------------------------------------------- scripted judge
def kind(body: dict[str, Any]) -> str:
    """The Ragas output model a request asks for (instructor puts its JSON schema in the system message)."""
    schema = embedded_schema(all_text(body)) or {}
    return str(schema.get("title", ""))


def ragas_input(body: dict[str, Any]) -> dict[str, Any]:
    """The sample-specific input Ragas appends after its examples ("input: {...}\\nOutput: ")."""
    user = all_text(body).rsplit("Now perform the same with the following input", 1)[-1]
    return dict(json.loads(user.split("input:", 1)[1].rsplit("Output:", 1)[0]))


def translate(body: dict[str, Any]) -> str | None:
    text = all_text(body)
    if "You are a TRANSLATOR" not in text:
        return None
    strings = json.loads(text.split("Statements to translate:", 1)[1].strip())
    return json.dumps({"statements": [f"«fr» {s}" for s in strings]})


def scripted(body: dict[str, Any]) -> str | None:
    """Faithfulness: 3 statements, 2 supported; context recall: 1 of 4 attributed; context precision:
    useful iff the context is the tariff sentence."""
    t = translate(body)
    if t is not None:
        return t
    k = kind(body)
    if k == "StatementGeneratorOutput":
        return json.dumps({"statements": ["s1", "s2", "s3"]})
    if k == "NLIStatementOutput":
        verdicts = [("s1", 1), ("s2", 0), ("s3", 1)]
        return json.dumps(
            {"statements": [{"statement": s, "reason": f"raison {s}", "verdict": v} for s, v in verdicts]}
        )
    if k == "ContextRecallOutput":
        flags = [1, 0, 0, 0]
        return json.dumps(
            {
                "classifications": [
                    {"statement": f"c{i}", "reason": "r", "attributed": f} for i, f in enumerate(flags)
                ]
            }
        )
    if k == "ContextPrecisionOutput":
        useful = "9,99" in ragas_input(body)["context"]
        return json.dumps({"reason": "utile" if useful else "inutile", "verdict": int(useful)})
    return None


@pytest.fixture
def judge(settings: Settings) -> Iterator[FakeLLM]:
    fake = start_judge(scripted)
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=5, retries=1)
    yield fake
    fake.stop()


# ------------------------------------------------------------------------------------------------ tests
def test_french_scores_equal_hand_computed_values_and_rerun_is_free(
    judge: FakeLLM, client: TestClient, settings: Settings, session: Session
) -> None:
    metrics = ["ragas.faithfulness", "ragas.context_precision", "ragas.context_recall"]
    run = make_run(client, "fr")
    job = score(client, run, metrics)
    assert (job["done"], job["failed"]) == (15, 0), job["errors"]
    rows = rows_by_question(client, run)
    # faithfulness: 2 of 3 statements supported; context recall: 1 of 4 reference statements attributed
    assert rows["q1"]["ragas.faithfulness@5"] == pytest.approx(2 / 3)
    assert rows["q1"]["ragas.context_recall@5"] == pytest.approx(1 / 4)
    # average precision over the useful contexts: q1 [noise, useful, other] -> precision@2 = 1/2;
    # q3 [useful, other] -> 1; q2 [noise] -> 0
    assert rows["q1"]["ragas.context_precision@5"] == pytest.approx(0.5)
    assert rows["q3"]["ragas.context_precision@5"] == pytest.approx(1.0)
    assert rows["q2"]["ragas.context_precision@5"] == pytest.approx(0.0)
    assert rows["q5"]["ragas.faithfulness@5"] == pytest.approx(2 / 3)
    # undefined cases carry the reason, never reach the judge
    assert rows["q4"]["ragas.faithfulness@5"] is None
    assert rows["q4"]["ragas.faithfulness@5.error"] == "no retrieved context"
    assert rows["q5"]["ragas.context_recall@5.error"] == "the question has no reference answer"
    d = details(session, "ragas.faithfulness@5")["q1"]
    assert d["prompts"] == "fr" and d["judge_calls"] == 2 and "0-1" in d["scale"]
    assert "[0] s2 — raison s2" in d["explanation"]
    # the scoring prompts are Ragas' own, adapted: translated instruction and examples
    scoring = [r["messages"][-1]["content"] for r in judge.requests if "TRANSLATOR" not in all_text(r)]
    assert len(scoring) == 4 * 2 + 6 + 3  # faithfulness 2 per answer, precision 1 per context, recall 1
    assert all(p.startswith("«fr» ") and '"«fr» ' in p.split("--------EXAMPLES")[1] for p in scoring)
    # Ragas' fixed JSON-format sentence stays English
    assert all("Please return the output in a JSON format" in p for p in scoring)
    # Ragas adapts each prompt with one call for its examples and one for its instruction, once per prompt
    assert sum("TRANSLATOR" in all_text(r) for r in judge.requests) == 2 * (2 + 1 + 1)
    # adapted once, kept on disk per language and judge model
    saved = sorted(p.name for p in (settings.data_dir / "prompts/ragas/fr/judge-model").iterdir())
    assert len(saved) == 4 and all(n.endswith(".json") for n in saved)
    # the same scoring again: every score from the memo (the translated prompts and judge answers are
    # unchanged), the 5 undefined for a missing input included (their key rests on the prompts too)
    n = len(judge.requests)
    memo = score(client, run, metrics, recompute=True)
    assert (memo["done"], memo["summary"]["score_memo_hits"], len(judge.requests)) == (15, 15, n)
    assert rows_by_question(client, run) == rows
    # context recall's translated prompt edited on disk: context recall's scores miss the memo (its judge
    # calls are made again with the edited prompt); the other metrics' prompt files did not change, their
    # scores are still reused
    folder = settings.data_dir / "prompts/ragas/fr/judge-model"
    (edited,) = [p for p in folder.iterdir() if ".ContextRecallPrompt-" in p.name]
    edited.write_text(edited.read_text(encoding="utf-8").replace("«fr»", "«fr» "), encoding="utf-8")
    missed = score(client, run, metrics, recompute=True)
    assert (missed["done"], missed["summary"]["score_memo_hits"], len(judge.requests)) == (15, 10, n + 3)
    assert memoized(session, metrics) == {
        "ragas.faithfulness@5": QUESTIONS,
        "ragas.context_precision@5": QUESTIONS,
        "ragas.context_recall@5": [],
    }
    assert rows_by_question(client, run) == rows
    edited.write_text(edited.read_text(encoding="utf-8").replace("«fr» ", "«fr»"), encoding="utf-8")
    # without the memo: prompts from disk, judge answers from the gateway cache
    settings.scoring.score_memo = False
    n = len(judge.requests)
    again = score(client, run, metrics, recompute=True)
    assert again["done"] == 15 and len(judge.requests) == n
    d = details(session, "ragas.faithfulness@5")["q1"]
    assert d["judge_calls"] == d["cache_hits"] == 2
    assert rows_by_question(client, run) == rows


def test_a_metric_translating_its_prompts_leaves_the_memo_keys_of_the_others_alone(
    settings: Settings, client: TestClient, session: Session
) -> None:
    """The metrics of a batch adapt their prompts concurrently, into one folder per language and judge.
    Here context recall's prompt is translated, and its scores computed, while faithfulness' translations
    are still held by the judge: its memo key must not depend on files that appear after it was taken."""
    from ragas.metrics.collections.context_recall.util import ContextRecallPrompt
    from ragas.prompt.utils import get_all_strings

    template = ContextRecallPrompt()
    recall_strings = {template.instruction, *get_all_strings(template.examples)}
    recall_scoring = threading.Event()  # context recall has prepared its metric and is scoring
    released: list[bool] = []  # per held translation: released because context recall was scoring
    answer = judge_script(scripted)

    async def held(body: dict[str, Any], i: int) -> AsyncIterator[bytes]:
        for _ in range(3000):  # at most 30 s
            if recall_scoring.is_set():
                break
            await asyncio.sleep(0.01)
        released.append(recall_scoring.is_set())
        yield json.dumps(answer(body, i)).encode()

    def script(body: dict[str, Any], i: int) -> Any:
        text = all_text(body)
        if "You are a TRANSLATOR" in text:
            strings = json.loads(text.split("Statements to translate:", 1)[1].strip())
            if not set(strings) <= recall_strings:
                return StreamingResponse(held(body, i), media_type="application/json")
        if kind(body) == "ContextRecallOutput":
            recall_scoring.set()
        return answer(body, i)

    fake = FakeLLM(script=script).start()
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=60, retries=1)
    metrics = ["ragas.faithfulness", "ragas.context_recall"]
    try:
        run = make_run(client, "fr")
        first = score(client, run, metrics)
        assert (first["done"], first["failed"]) == (10, 0), first["errors"]
        # the race took place: faithfulness' 4 translations all came after context recall's scoring began
        assert released == [True] * 4
        rows = rows_by_question(client, run)
        n = len(fake.requests)
        again = score(client, run, metrics, recompute=True)
        assert (memo_hits(again), len(fake.requests)) == (10, n)
        assert memoized(session, metrics) == dict.fromkeys(
            ("ragas.faithfulness@5", "ragas.context_recall@5"), QUESTIONS
        )
        assert rows_by_question(client, run) == rows
    finally:
        fake.stop()


def test_a_later_job_translating_another_metric_leaves_the_memo_keys_alone(
    judge: FakeLLM, client: TestClient, session: Session
) -> None:
    run = make_run(client, "fr")
    score(client, run, ["ragas.context_recall"])
    # another metric's prompt translated into the same folder by a later job
    score(client, run, ["ragas.context_precision"])
    n = len(judge.requests)
    again = score(client, run, ["ragas.context_recall"], recompute=True)
    assert (again["done"], memo_hits(again), len(judge.requests)) == (5, 5, n)
    assert memoized(session, ["ragas.context_recall"]) == {"ragas.context_recall@5": QUESTIONS}


def test_french_answer_relevancy_is_scored_with_its_translated_prompt(
    judge: FakeLLM, client: TestClient
) -> None:
    run = make_run(client, "fr")
    job = score(client, run, ["ragas.answer_relevancy"])
    assert (job["done"], job["failed"]) == (5, 0), job["errors"]
    rows = rows_by_question(client, run)
    assert all(isinstance(rows[q]["ragas.answer_relevancy"], float) for q in QUESTIONS)
    scoring = [all_text(r) for r in judge.requests if kind(r) == "AnswerRelevanceOutput"]
    # Ragas sends the answer alone: 2 distinct answers, 3 generated questions each (the rest from the cache)
    assert len(scoring) == 2 * 3
    assert all("«fr» " in p.split("--------EXAMPLES")[0] for p in scoring)


def test_every_metric_gives_a_value_with_the_documented_calls_per_sample(
    settings: Settings, client: TestClient, session: Session
) -> None:
    fake = start_judge()  # schema-valid answers only
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=5, retries=1)
    try:
        run = make_run(client, "en")
        job = score(client, run, ALL)
        assert job["failed"] == 0
        rows = rows_by_question(client, run)
        for q in ("q1", "q2", "q3"):
            for m in ALL:
                col = m + ("@5" if "context" in m or "faithfulness" in m else "")
                assert isinstance(rows[q][col], float), (q, col, rows[q].get(col + ".error"))
        # docs/judges.md, Ragas, with q1's 3 contexts
        expected = {
            "ragas.faithfulness@5": 2,
            "ragas.answer_relevancy": 3,
            "ragas.factual_correctness:f1": 4,
            "ragas.factual_correctness:recall": 4,
            "ragas.factual_correctness:precision": 2,
            "ragas.context_precision@5": 3,
            "ragas.context_recall@5": 1,
        }
        for metric, calls in expected.items():
            d = details(session, metric)["q1"]
            assert d["judge_calls"] == calls, metric
            assert d["prompts"] == "en"
        # English dataset: no adaptation call at all
        assert not any("TRANSLATOR" in all_text(r) for r in fake.requests)
        # request shape: instructor JSON mode
        r = fake.requests[0]
        assert r["response_format"] == {"type": "json_object"} and r["messages"][0]["role"] == "system"
        assert r["temperature"] == pytest.approx(0.01) and "n" not in r
        # a second scoring is served entirely from the gateway cache, including answer relevancy's three
        # deliberately identical calls
        n = len(fake.requests)
        again = score(client, run, ALL, recompute=True)
        assert again["failed"] == 0 and len(fake.requests) == n
        assert rows_by_question(client, run) == rows
    finally:
        fake.stop()


def test_answer_relevancy_repeats_stay_distinct_and_are_replayed_from_cache(
    settings: Settings, client: TestClient, session: Session
) -> None:
    def script(body: dict[str, Any], i: int) -> dict[str, Any]:
        if kind(body) == "AnswerRelevanceOutput":
            text = json.dumps({"question": f"Question numéro {i} sur le prix ?", "noncommittal": 0})
            return completion(body, text)
        return judge_script()(body, i)

    fake = FakeLLM(script=script).start()
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=5, retries=1)
    try:
        run = make_run(client, "en", {q: f"Réponse {q} : 9,99 €." for q in ("q1", "q2", "q3", "q4", "q5")})
        score(client, run, ["ragas.answer_relevancy"])
        ar = [r for r in fake.requests if kind(r) == "AnswerRelevanceOutput"]
        assert len(ar) == 15  # 5 answers x strictness 3, identical bodies per answer, none collapsed
        first = rows_by_question(client, run)
        d = details(session, "ragas.answer_relevancy")["q1"]
        assert d["explanation"].count("generated question") == 3
        assert len(set(re.findall(r"numéro \d+", d["explanation"]))) == 3
        assert 0 < first["q1"]["ragas.answer_relevancy"] <= 1
        score(client, run, ["ragas.answer_relevancy"], recompute=True)
        assert len(fake.requests) == 15
        assert rows_by_question(client, run) == first
        assert details(session, "ragas.answer_relevancy")["q1"]["explanation"] == d["explanation"]
    finally:
        fake.stop()


def test_concurrency_stays_within_the_setting(settings: Settings, client: TestClient) -> None:
    fake = start_judge()
    fake.latency_s = 0.05
    settings.judge = JudgeSettings(
        base_url=fake.base_url, model="judge-model", timeout_s=5, retries=1, max_concurrency=2
    )
    try:
        run = make_run(client, "en")
        job = score(client, run, ["ragas.faithfulness", "ragas.context_precision"])
        assert job["failed"] == 0 and len(fake.requests) > 10
        assert fake.max_in_flight == 2
    finally:
        fake.stop()


def test_failing_judge_calls_fail_their_items_only(settings: Settings, client: TestClient) -> None:
    async def slow() -> Any:
        await asyncio.sleep(4)
        yield b"{}"

    def script(body: dict[str, Any], i: int) -> Any:
        text = all_text(body)
        if "MARK500" in text:
            return JSONResponse({"error": {"message": "boom"}}, status_code=500)
        if "MARKGARBAGE" in text:
            return garbage()
        if "MARKHANG" in text:
            return StreamingResponse(slow(), media_type="application/json")
        if "MARKBADJSON" in text:
            return completion(body, "this is not JSON at all")
        return judge_script()(body, i)

    fake = FakeLLM(script=script).start()
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=1.5, retries=1)
    try:
        answers = {
            "q2": "MARK500 9,99 €.",
            "q3": "MARKGARBAGE 9,99 €.",
            "q4": "MARKHANG 9,99 €.",
            "q5": "MARKBADJSON 9,99 €.",
        }
        run = make_run(client, "en", answers)
        job = score(client, run, ["ragas.answer_relevancy"])
        assert (job["done"], job["failed"]) == (1, 4), job
        assert job["errors_by_cause"] == {
            "http_500": 1,
            "malformed_response": 1,
            "timeout": 1,
            "malformed_judge_output": 1,
        }
        rows = rows_by_question(client, run)
        assert isinstance(rows["q1"]["ragas.answer_relevancy"], float)
        assert rows["q2"]["ragas.answer_relevancy"] is None
        assert rows["q2"]["ragas.answer_relevancy.error"].startswith("http_500: ")
    finally:
        fake.stop()


def test_failed_prompt_adaptation_fails_the_items_with_its_cause(
    settings: Settings, client: TestClient
) -> None:
    # The default test judge answers a translation with 2 strings whatever it was asked: Ragas refuses that.
    fake = start_judge()
    settings.judge = JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=5, retries=1)
    try:
        run = make_run(client, "fr")
        job = score(client, run, ["ragas.context_recall"])
        assert (job["done"], job["failed"]) == (2, 3) and job["errors_by_cause"] == {
            "malformed_judge_output": 3
        }
        rows = rows_by_question(client, run)
        assert "adapting the Ragas prompts to 'fr' failed" in rows["q1"]["ragas.context_recall@5.error"]
        assert rows["q4"]["ragas.context_recall@5.error"] == "no reference answer (unanswerable question)"
        assert all("TRANSLATOR" in all_text(r) for r in fake.requests)  # nothing scored in English instead
        assert not list(settings.data_dir.rglob("*.json"))  # a failed adaptation is not kept
    finally:
        fake.stop()


def test_importing_the_adapter_loads_no_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, services.metrics.judges.ragas\n"
        "print(any(m.split('.')[0] in ('ragas', 'openai', 'instructor') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_config_records_what_changes_the_values(settings: Settings) -> None:
    from services.metrics import registry

    settings.judge = JudgeSettings(base_url="http://127.0.0.1:9/v1", model="m")
    from services.metrics.context import ScoringContext

    ar = registry.load_adapter(registry.resolve("ragas.answer_relevancy"))
    fc = registry.load_adapter(registry.resolve("ragas.factual_correctness:recall"))
    ctx = ScoringContext(settings, language="fr")
    assert ar.config(ctx)["embeddings"] == "all-MiniLM-L6-v2" and ar.config(ctx)["strictness"] == 3
    assert fc.config(ctx)["mode"] == "recall" and fc.config(ctx)["judge"]["prompts"] == "fr"
    settings.judge.language = "en"
    assert fc.config(ctx)["judge"]["prompts"] == "en"
