"""Opik's own metrics against the loopback test judge, through the scoring API: scripted verdicts reach the
score table, one judge call per metric per sample, a re-scoring served by the gateway cache, the concurrency
bound, per-item failures with their causes, and no network or lingering thread at exit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, Response, StreamingResponse

from services.config import JudgeSettings, Settings
from services.metrics.registry import BY_NAME
from services.models import MetricScore
from services.offline import OFFLINE_ENV
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.fakellm import FakeLLM, garbage
from tests.integration.judges.helpers import score as shared_score
from tests.integration.test_scoring import rows_by_question
from tests.judgefake import Override, all_text, judge_script, start_judge

ROOT = Path(__file__).resolve().parents[3]
METRICS = [
    "opik.hallucination",
    "opik.moderation",
    "opik.answer_relevance",
    "opik.usefulness",
    "opik.context_precision",
    "opik.context_recall",
]
# The pydantic response format Opik sends as the strict json_schema of each metric's request.
FORMATS = {
    "opik.hallucination": "HallucinationResponseFormat",
    "opik.moderation": "ModerationResponseFormat",
    "opik.answer_relevance": "AnswerRelevanceResponseFormat",
    "opik.usefulness": "UsefulnessResponseFormat",
    "opik.context_precision": "ContextPrecisionResponseFormat",
    "opik.context_recall": "ContextRecallResponseFormat",
}
QUESTIONS = {
    "q1": "Combien coûte le forfait Essentiel ?",
    "q2": "Comment résilier et en combien de temps ?",
    "q3": "Quel est le prix du forfait Intégral comparé à l’Essentiel ?",
}
ANSWERS = {
    "q1": "9,99 € par mois.",
    "q2": "Appelez le service client ; la résiliation prend effet sous 10 jours.",
    "q3": "24,99 € contre 9,99 €.",
    "q4": "Je ne sais pas.",
    "q5": "Redémarrez la box.",
}


def outputs() -> list[dict[str, Any]]:
    """Five outputs: q1-q3 have contexts and a reference answer, q4 has no context (and no reference),
    q5 has contexts but no reference answer."""
    ctx = {
        "q1": ["Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go de données."],
        "q2": [
            "Pour résilier, le client appelle le service client ou envoie une lettre recommandée.",
            "La résiliation prend effet sous 10 jours.",
        ],
        "q3": [
            "Le forfait Intégral coûte 24,99 € par mois avec 150 Go",
            "Le forfait Essentiel coûte 9,99 € par mois",
        ],
        "q4": [],
        "q5": ["Si le wifi est lent, redémarrez la box et rapprochez-vous du routeur."],
    }
    return [
        {"question_id": q, "answer": ANSWERS[q], "retrieved": [{"text": t} for t in ctx[q]]} for q in ANSWERS
    ]


def response_format(body: dict[str, Any]) -> str:
    return str((body.get("response_format") or {}).get("json_schema", {}).get("name", ""))


def litellm_format(name: str) -> dict[str, Any]:
    """The response_format litellm makes from Opik's answer model ``name``, as sent (through JSON)."""
    from litellm.llms.base_llm.base_utils import type_to_response_format_param
    from opik.evaluation.metrics import llm_judges

    found = [
        cls
        for module in _submodules(llm_judges)
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__name__ == name
    ]
    assert found, name
    made: dict[str, Any] = json.loads(json.dumps(type_to_response_format_param(found[0])))
    return made


def _submodules(package: Any) -> list[Any]:
    import importlib
    import pkgutil

    names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [importlib.import_module(n) for n in names]


@pytest.fixture
def judge(settings: Settings) -> Iterator[Any]:
    """``judge(override=None, **judge_settings)`` starts the loopback judge and points the service at it."""
    started: list[FakeLLM] = []

    def start(override: Override | None = None, fake: FakeLLM | None = None, **kw: Any) -> FakeLLM:
        server = fake.start() if fake is not None else start_judge(override)
        started.append(server)
        options: dict[str, Any] = {"timeout_s": 5.0, "retries": 1, "max_concurrency": 4, **kw}
        settings.judge = JudgeSettings(base_url=server.base_url, model="judge-model", **options)
        return server

    yield start
    for server in started:
        server.stop()


def new_run(client: TestClient) -> int:
    run = make_run(client, load_mini(client))
    r = client.post(f"/runs/{run}/outputs", json=outputs())
    assert r.status_code == 200, r.text
    return run


def score(client: TestClient, run: int, metrics: list[str], recompute: bool = False) -> dict[str, Any]:
    return shared_score(client, run, metrics, recompute, check_done=False)


def stored(engine: Engine, metric: str) -> dict[int, MetricScore]:
    with Session(engine) as s:
        return {m.output_id: m for m in s.scalars(select(MetricScore).where(MetricScore.metric == metric))}


def test_scripted_verdicts_are_the_scores(client: TestClient, judge: Any, engine: Engine) -> None:
    def verdicts(body: dict[str, Any]) -> str | None:
        if response_format(body) == "HallucinationResponseFormat":
            return json.dumps(
                {"score": 1.0, "reason": ["« 20 Go » n'est pas demandé.", "Le prix est exact."]}
            )
        if response_format(body) == "ContextRecallResponseFormat":
            return json.dumps({"context_recall_score": 0.4, "reason": "Il manque la durée."})
        return None

    fake = judge(verdicts)
    run = new_run(client)
    job = score(client, run, ["opik.hallucination@5", "opik.context_recall@5"])
    assert (job["status"], job["failed"]) == ("done", 0), job
    rows = rows_by_question(client, run)
    # Opik's value is the judge's own score, read by Opik's parser
    assert rows["q1"]["opik.hallucination@5"] == 1.0
    assert rows["q1"]["opik.context_recall@5"] == 0.4
    # undefined cases never reach the judge
    assert rows["q4"]["opik.hallucination@5"] is None
    assert rows["q4"]["opik.hallucination@5.error"] == "no retrieved context"
    assert rows["q5"]["opik.context_recall@5.error"] == "the question has no reference answer"
    assert len(fake.requests) == 4 + 3

    q1 = rows["q1"]["output_id"]
    hall, recall = stored(engine, "opik.hallucination@5")[q1], stored(engine, "opik.context_recall@5")[q1]
    # Opik joins the reasons of a hallucination verdict, one per line
    assert hall.details["explanation"] == "« 20 Go » n'est pas demandé.\nLe prix est exact."
    assert hall.details["scale"].startswith("0-1") and "unfaithful" in hall.details["scale"]
    assert recall.details["explanation"] == "Il manque la durée."
    assert hall.details["judge_calls"] == recall.details["judge_calls"] == 1
    # the mini dataset is French: Hallucination carries French examples, the others stay English
    assert hall.config["judge"]["prompts"] == "fr" and recall.config["judge"]["prompts"] == "en"
    assert hall.details["prompts"] == "English instructions, French few-shot examples"
    prompts = {response_format(b): all_text(b) for b in fake.requests}
    assert "EXAMPLES:" in prompts["HallucinationResponseFormat"]
    assert "médiathèque" in prompts["HallucinationResponseFormat"]
    assert "médiathèque" not in prompts["ContextRecallResponseFormat"]


def test_one_call_per_metric_per_sample_then_a_free_rescoring(
    client: TestClient, judge: Any, engine: Engine, settings: Settings
) -> None:
    fake = judge()
    run = new_run(client)
    job = score(client, run, METRICS)
    assert (job["status"], job["failed"]) == ("done", 0), job
    # q1-q3 have everything; q4 has no context, q5 no reference answer (see outputs())
    scorable = {
        "opik.hallucination": 4,
        "opik.moderation": 5,
        "opik.answer_relevance": 4,
        "opik.usefulness": 5,
        "opik.context_precision": 3,
        "opik.context_recall": 3,
    }
    assert Counter(response_format(b) for b in fake.requests) == {FORMATS[m]: n for m, n in scorable.items()}
    for body in fake.requests:
        assert body["model"] == "judge-model" and body["temperature"] == 0.0
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
        assert not {"n", "tools", "logprobs"} & set(body)
        # The answer model's schema, derived once per class, is what litellm derives from the class itself.
        assert body["response_format"] == litellm_format(response_format(body))
    rows = rows_by_question(client, run)
    for name in METRICS:
        full = BY_NAME[name].full_name(5)
        # every metric yields a value from the default schema-valid judge on a complete sample
        assert rows["q1"][full] == 0.0, (full, rows["q1"].get(f"{full}.error"))
        scores = stored(engine, full).values()
        assert [s.details["judge_calls"] for s in scores if s.value is not None] == [1] * scorable[name]
        assert all(s.tokens == 20 for s in scores if s.value is not None)
    assert job["summary"]["judge_usage"]["opik.moderation"]["upstream_calls"] == 5

    # the score memo: the same scores without running Opik again
    memo = score(client, run, METRICS, recompute=True)
    assert (memo["status"], memo["failed"], memo["summary"]["score_memo_hits"]) == ("done", 0, 24)
    assert len(fake.requests) == sum(scorable.values())
    assert rows_by_question(client, run) == rows
    # without it, the gateway's cache answers every call
    settings.scoring.score_memo = False
    again = score(client, run, METRICS, recompute=True)
    assert (again["status"], again["total"], again["failed"]) == ("done", 30, 0)
    assert len(fake.requests) == sum(scorable.values())  # no new upstream call
    for name in METRICS:
        rescored = [s for s in stored(engine, BY_NAME[name].full_name(5)).values() if s.value is not None]
        assert len(rescored) == scorable[name]
        assert all((s.details["judge_calls"], s.details["cache_hits"]) == (1, 1) for s in rescored)
    # The job summary looks judge usage up by full name ("opik.hallucination@5") while the gateway counts it
    # by base name, so only the metrics without @k can be checked there.
    assert again["summary"]["judge_usage"]["opik.moderation"]["cache_hits"] == 5
    assert rows_by_question(client, run) == rows


def test_concurrency_stays_within_the_judge_bound(client: TestClient, judge: Any) -> None:
    fake = judge(fake=FakeLLM(script=judge_script(), latency_s=0.3), max_concurrency=2)
    run = new_run(client)
    job = score(client, run, ["opik.moderation", "opik.usefulness"])
    assert (job["done"], job["failed"]) == (10, 0), job
    assert len(fake.requests) == 10
    # five samples at once are held to two judge calls in flight, and do run two at a time
    assert fake.max_in_flight == 2


async def _slow_body(delay_s: float) -> AsyncIterator[bytes]:
    await asyncio.sleep(delay_s)
    yield b"{}"


def test_failing_judge_calls_fail_their_items_only(client: TestClient, judge: Any) -> None:
    schema_valid = judge_script()

    def script(body: dict[str, Any], i: int) -> Response | dict[str, Any]:
        text, fmt = all_text(body), response_format(body)
        if fmt == "UsefulnessResponseFormat":
            if QUESTIONS["q1"] in text:
                return JSONResponse({"error": {"message": "boom"}}, status_code=500)
            if QUESTIONS["q2"] in text:
                return garbage()
            if QUESTIONS["q3"] in text:  # headers at once, then a body slower than the judge timeout
                return StreamingResponse(_slow_body(3.0), media_type="application/json")
            if ANSWERS["q5"] in text:  # outside Opik's 0-1 range: its parser refuses it
                return judge_script(lambda b: '{"score": 1.5, "reason": "trop"}')(body, i)
        if fmt == "ModerationResponseFormat" and ANSWERS["q5"] in text:
            return judge_script(lambda b: "Je ne peux pas répondre en JSON.")(body, i)
        return schema_valid(body, i)

    fake = judge(fake=FakeLLM(script=script), timeout_s=1.0, retries=1)
    run = new_run(client)
    t0 = time.monotonic()
    job = score(client, run, ["opik.usefulness", "opik.moderation"])
    assert time.monotonic() - t0 < 30
    assert job["status"] == "done"
    assert (job["done"], job["failed"]) == (5, 5), job
    assert job["errors_by_cause"] == {
        "http_500": 1,
        "malformed_response": 1,
        "timeout": 1,
        "malformed_judge_output": 2,
    }
    rows = rows_by_question(client, run)
    assert rows["q1"]["opik.usefulness"] is None and rows["q1"]["opik.usefulness.error"].startswith(
        "http_500"
    )
    assert rows["q5"]["opik.moderation.error"].startswith("malformed_judge_output: Failed to calculate")
    assert "1.5" in rows["q5"]["opik.usefulness.error"]
    assert rows["q4"]["opik.usefulness"] == 0.0
    assert all(rows[q]["opik.moderation"] == 0.0 for q in ("q1", "q2", "q3", "q4"))
    # the gateway retried the 500 once; Opik itself did not ask again (its default is 3 attempts)
    assert sum(QUESTIONS["q1"] in all_text(b) for b in fake.requests) == 2


_CHILD = """
import atexit, json, sys, threading
hosts = []

def audit(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if host not in ("127.0.0.1", "localhost"):
            hosts.append(f"getaddrinfo {host}")
    elif event == "socket.connect" and isinstance(args[1], tuple) and not str(args[1][0]).startswith("127."):
        hosts.append(f"connect {args[1]!r}")

sys.addaudithook(audit)
# registered first, so it runs last: after litellm's and Opik's own exit handlers
def report():
    alive = [t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
    print("EXIT " + json.dumps({"hosts": hosts, "threads": alive}), flush=True)

atexit.register(report)

from services.config import JudgeSettings, Settings
from services.db import upgrade
from services.metrics.base import Sample
from tests.judgefake import start_judge

url = "sqlite:///" + sys.argv[1]
upgrade(url)
fake = start_judge()
settings = Settings(database_url=url, judge=JudgeSettings(base_url=fake.base_url, model="judge-model"))
sample = Sample(output_id=1, question="Combien ?", answer="9,99 €.", contexts=("9,99 € par mois.",),
                reference_answer=None, answerable=True, language="fr", passages=(), retrieved=(),
                documents={}, k=5)
from services.metrics.batch import MetricWork, score_batch
from services.metrics.registry import resolve
from services.metrics.resources import ScoringResources
resources = ScoringResources(settings)
work = [MetricWork(resolve("opik.hallucination"), [sample])]
res = resources.run(score_batch(settings, resources, work, language="fr", job="adhoc")).scores[0]
resources.close()
scored = {"value": res[0].value, "error": res[0].error, "calls": len(fake.requests)}
print("SCORED " + json.dumps(scored), flush=True)
"""


@pytest.mark.slow
def test_a_process_that_scored_exits_without_network_or_lingering_thread(tmp_path: Path) -> None:
    # The child does not set the offline switches itself: the adapter must. (Its exit still takes seconds:
    # that is the interpreter tearing down litellm's modules, 3-4 s after a bare `import litellm` here.)
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(tmp_path / "child.db")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in proc.stdout.splitlines() if " " in ln}
    assert json.loads(lines["SCORED"]) == {"value": 0.0, "error": None, "calls": 1}
    assert json.loads(lines["EXIT"]) == {"hosts": [], "threads": []}
