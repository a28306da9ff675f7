"""RAGChecker through the scoring API against the loopback test judge: hand-computed values for all eleven
metrics, calls per sample, one judge pass shared by every metric, the gateway cache, bounded concurrency,
per-sample failures that never hang, and the French prompts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, Response

from app.settings import Settings
from services.config import JudgeSettings
from services.metrics.registry import CATALOGUE
from services.models import MetricScore
from tests.api.helpers import create_dataset, upload
from tests.fakellm import FakeLLM, garbage
from tests.integration.judges.helpers import rows, score
from tests.judgefake import judge_script

RC = [s.name for s in CATALOGUE if s.library == "ragchecker"]
GROUPS = {
    "overall": ["ragchecker.precision", "ragchecker.recall", "ragchecker.f1"],
    "retriever": ["ragchecker.claim_recall", "ragchecker.context_precision"],
    "generator": [s.name for s in CATALOGUE if s.library == "ragchecker" and s.kind == "generation"],
    "all": RC,
}
TRIPLET = re.compile(r'\("(.*?)", "(.*?)", "(.*?)"\)')

Reply = str | Response | None


@dataclass
class Judge:
    """The loopback judge: schema-valid answers unless ``reply(prompt)`` scripts one (text or a Response)."""

    reply: Callable[[str], Reply] | None = None
    fake: FakeLLM = field(default_factory=FakeLLM)

    def __call__(self, body: dict[str, Any], index: int) -> Any:
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        scripted = self.reply(prompt) if self.reply else None
        return scripted if scripted is not None else judge_script()(body, index)


@pytest.fixture
def judge() -> Iterator[Judge]:
    j = Judge()
    j.fake = FakeLLM(script=j, hang_s=3.0).start()
    yield j
    j.fake.stop()


@pytest.fixture
def settings(settings: Settings, judge: Judge) -> Settings:
    settings.judge = JudgeSettings(
        base_url=judge.fake.base_url, model="judge-model", max_concurrency=3, timeout_s=2.0, retries=1
    )
    return settings


@dataclass
class Item:
    question: str
    answer: str
    reference: str
    contexts: tuple[str, ...]


def make_run(client: TestClient, items: list[Item], language: str = "fr") -> int:
    ds = create_dataset(client, f"rc-{language}", language)
    questions = [
        {"external_id": f"q{i}", "question": it.question, "reference_answer": it.reference}
        for i, it in enumerate(items)
    ]
    jsonl = "\n".join(json.dumps(q, ensure_ascii=False) for q in questions).encode()
    r = upload(client, f"/datasets/{ds}/questions", "q.jsonl", jsonl)
    assert r.status_code == 200, r.text
    r = client.post(f"/datasets/{ds}/runs", json={"name": "r1", "system": {"retriever": "external", "k": 5}})
    assert r.status_code == 201, r.text
    run = int(r.json()["id"])
    outputs = [
        {"question_id": f"q{i}", "answer": it.answer, "retrieved": [{"text": c} for c in it.contexts]}
        for i, it in enumerate(items)
    ]
    r = client.post(f"/runs/{run}/outputs", json=outputs)
    assert r.status_code == 200, r.text
    return run


def stored(engine: Engine, metric: str) -> list[MetricScore]:
    with Session(engine) as s:
        return list(s.scalars(select(MetricScore).where(MetricScore.metric == metric)))


def calls_by_metric(engine: Engine, metrics: list[str]) -> dict[str, int]:
    """Gateway calls per metric's scores, from the per-score accounting: each RAGChecker score shows the
    calls of its output's one pass, shared by the RAGChecker metrics scored together."""
    return {m: sum(s.details["judge_calls"] for s in stored(engine, f"{m}@5")) for m in metrics}


PLAIN = Item(
    "Quelle est la capitale de la France ?",
    "Paris est la capitale de la France.",
    "La capitale de la France est Paris.",
    ("Paris est la capitale de la France depuis 987.", "La France est en Europe.", "Lyon est une ville."),
)


# ------------------------------------------------------------------------------ 1. hand-computed values
ANSWER = "Le forfait coûte 9,99 €, sans engagement, avec la 5G, pour un mois ; l'appel est gratuit."
REFERENCE = "9,99 € par mois, prix mensuel."
CTX = (
    "Le forfait Essentiel coûte 9,99 € par mois.",
    "Les appels vers l'Europe sont gratuits ; le prix est mensuel.",
    "Le forfait est sans engagement, dit une autre offre.",
)
A = [  # answer claims: correct per the reference? which context supports it?
    ("forfait", "coûte", "9,99 €"),  # correct, context 1 (relevant)
    ("forfait", "est", "sans engagement"),  # incorrect, context 3 only (irrelevant): noise, irrelevant
    ("forfait", "inclut", "la 5G"),  # incorrect (contradicted), no context: hallucination
    ("forfait", "dure", "un mois"),  # correct, no context: self-knowledge
    ("appel", "est", "gratuit"),  # incorrect, context 2 (relevant): noise, relevant
]
G = [("prix", "est", "9,99 €"), ("prix", "est", "mensuel")]
E, N, C = "Entailment", "Neutral", "Contradiction"
VERDICTS = {  # reference text -> claim -> label (missing: Neutral)
    REFERENCE: dict(zip(A, [E, N, C, E, N], strict=True)),
    ANSWER: dict(zip(G, [E, N], strict=True)),
    CTX[0]: {A[0]: E, G[0]: E},
    CTX[1]: {A[4]: E, G[1]: E},
    CTX[2]: {A[1]: E},
}
EXPECTED = {  # percentages, from the verdicts above by RAGChecker's definitions
    "precision": 100 * 2 / 5,  # answer claims entailed by the reference: a1, a4
    "recall": 100 * 1 / 2,  # reference claims entailed by the answer: g1
    "f1": 100 * 2 * 0.4 * 0.5 / 0.9,
    "claim_recall": 100.0,  # g1 in context 1, g2 in context 2
    "context_precision": 100 * 2 / 3,  # contexts 1 and 2 entail a reference claim, 3 does not
    "context_utilization": 100 * 1 / 2,  # of g1, g2 (both in contexts), the answer has g1
    "noise_sensitivity_in_relevant": 100 * 1 / 5,  # a5
    "noise_sensitivity_in_irrelevant": 100 * 1 / 5,  # a2
    "hallucination": 100 * 1 / 5,  # a3
    "self_knowledge": 100 * 1 / 5,  # a4
    "faithfulness": 100 * 3 / 5,  # a1, a2, a5
}


def scripted(prompt: str) -> Reply:
    if prompt.rstrip().endswith("### KG:"):
        text = prompt.rsplit("### Candidate Answer:\n", 1)[1].split("\n\n### KG:", 1)[0].strip()
        claims = {ANSWER: A, REFERENCE: G}[text]
        return "\n".join('("{}", "{}", "{}")'.format(*c) for c in claims)
    if "### Claims:" in prompt:
        ref = prompt.rsplit("### Reference:\n", 1)[1].split("\n\n### Claims:", 1)[0].strip()
        block = prompt.rsplit("### Claims:\n", 1)[1].split("\n\n", 1)[0]
        return "\n".join(VERDICTS[ref].get(c, N) for c in TRIPLET.findall(block))
    return None


def test_all_metrics_equal_hand_computed_values_through_the_api(
    client: TestClient, judge: Judge, engine: Engine
) -> None:
    judge.reply = scripted
    run = make_run(client, [Item("Combien coûte le forfait ?", ANSWER, REFERENCE, CTX)])
    job = score(client, run, RC)
    assert (job["done"], job["failed"]) == (11, 0), job["errors"]
    row = rows(client, run)["q0"]
    for name in RC:
        assert row[f"{name}@5"] == pytest.approx(EXPECTED[name.split(".")[1]]), name
    # the prompts were the French ones, and one pass made every verdict: 2 extractions + 1 + 1 + 3 + 3
    prompts = judge.fake.prompts()
    assert len(prompts) == 10
    assert sum("Étant donné une question et une réponse candidate" in p for p in prompts) == 2
    assert sum("Voici une liste d'affirmations" in p for p in prompts) == 8
    details = stored(engine, "ragchecker.hallucination@5")[0].details
    assert details["scale"].startswith("0-100") and details["answer_claims"] == 5
    assert '("forfait", "inclut", "la 5G"): Contradiction | N N N' in details["explanation"]


# ------------------------------------------------------------------------------ 2. calls per sample
def two_claims(prompt: str) -> Reply:
    # The default judge extracts the same 2 triplets from any text: the answer's and the reference's checks
    # against a context would then be one identical request, which the gateway sends upstream once.
    if prompt.rstrip().endswith("### KG:"):
        text = prompt.rsplit("### Candidate Answer:\n", 1)[1].split("\n\n### KG:", 1)[0].strip()
        return f'("{text}", "dit", "une chose")\n("{text}", "dit", "une autre chose")'
    return None


@pytest.mark.parametrize(
    ("group", "calls"), [("overall", 4), ("retriever", 4), ("generator", 10), ("all", 10)]
)
def test_judge_calls_per_sample_match_libraries_md(
    client: TestClient, judge: Judge, engine: Engine, group: str, calls: int
) -> None:
    judge.reply = two_claims  # 3 contexts, 2 claims from the answer and 2 others from the reference
    run = make_run(client, [PLAIN])
    job = score(client, run, GROUPS[group])
    assert job["failed"] == 0, job["errors"]
    assert len(judge.fake.requests) == calls
    # One pass per output for every RAGChecker metric of the job: each score shows that pass's calls.
    assert set(calls_by_metric(engine, GROUPS[group]).values()) == {calls}
    assert job["summary"]["judge_usage"]["ragchecker"]["calls"] == calls
    statuses = [s.details["checkpoint"] for m in GROUPS[group] for s in stored(engine, f"{m}@5")]
    assert statuses.count("miss") == 1 and set(statuses) <= {"miss", "hit"}
    shapes = {(r["max_tokens"], r["temperature"]) for r in judge.fake.requests}
    assert shapes <= {(1000, 1e-05), (150, 0.0)}
    assert all(r["n"] == 1 and len(r["messages"]) == 1 for r in judge.fake.requests)


def test_companions_read_the_pass_made_in_their_batch_without_parsing_the_checkpoint_again(
    client: TestClient, judge: Judge, settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.metrics.judges import ragchecker as adapter

    judge.reply = two_claims
    run = make_run(client, [PLAIN, Item("Et l'Italie ?", "Rome.", "Rome est la capitale.", ("En Italie.",))])
    read: list[str] = []
    load = adapter._load

    def counted(path: Path) -> Any:
        read.append(path.name)
        return load(path)

    monkeypatch.setattr(adapter, "_load", counted)
    first = score(client, run, RC)
    assert first["failed"] == 0
    # one look per output (there is no checkpoint yet), not one per metric: the ten companions of the first
    # metric to reach an output take its pass from the batch
    assert sorted(set(read)) == sorted(read) and len(read) == 2
    read.clear()
    settings.scoring.score_memo = False
    again = score(client, run, RC, recompute=True)
    assert again["failed"] == 0 and len(read) == 2  # a later batch reads each file, once
    statuses = {s.details["checkpoint"] for m in RC for s in stored(engine, f"{m}@5")}
    assert statuses == {"hit"}  # every metric of the second batch, companions too, found every verdict


# ------------------------------------------------------------------------------ 3. caches
def test_second_scoring_makes_no_upstream_call(
    client: TestClient, judge: Judge, settings: Settings, engine: Engine
) -> None:
    judge.reply = two_claims
    run = make_run(client, [PLAIN, Item("Et l'Italie ?", "Rome.", "Rome est la capitale.", ("En Italie.",))])
    first = score(client, run, RC)
    assert first["failed"] == 0
    upstream = len(judge.fake.requests)
    assert upstream == 10 + 6
    before = rows(client, run)
    # the score memo: RAGChecker does not even read its checkpoints
    memo = score(client, run, RC, recompute=True)
    assert (memo["total"], memo["failed"], memo["summary"]["score_memo_hits"]) == (22, 0, 22)
    assert rows(client, run) == before
    # a checkpoint changed on disk: that sample's scores miss the memo
    ckpt = sorted((settings.data_dir / "ragchecker").rglob("o*.json"))[0]
    ckpt.write_text(ckpt.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    changed = score(client, run, RC, recompute=True)
    assert changed["summary"]["score_memo_hits"] == 11 and len(judge.fake.requests) == upstream
    # without the memo, RAGChecker's own checkpoints: not even a gateway call
    settings.scoring.score_memo = False
    again = score(client, run, RC, recompute=True)
    assert again["total"] == 22 and again["failed"] == 0
    assert sum(calls_by_metric(engine, RC).values()) == 0
    assert {d.details["checkpoint"] for d in stored(engine, "ragchecker.f1@5")} == {"hit"}
    # without them, the gateway's cache answers every call
    shutil.rmtree(settings.data_dir / "ragchecker")
    third = score(client, run, RC, recompute=True)
    assert third["failed"] == 0
    details = [s.details for s in stored(engine, "ragchecker.f1@5")]
    assert sum(d["judge_calls"] for d in details) == upstream
    assert sum(d["cache_hits"] for d in details) == upstream
    assert len(judge.fake.requests) == upstream
    assert rows(client, run) == before


# ------------------------------------------------------------------------------ 4. concurrency
def test_concurrency_never_exceeds_the_limit(client: TestClient, judge: Judge) -> None:
    judge.fake.latency_s = 0.05
    items = [
        Item(f"Question {i} ?", f"Réponse {i}.", f"Référence {i}.", (f"Contexte {i}a.", f"Contexte {i}b."))
        for i in range(6)
    ]
    run = make_run(client, items)
    job = score(client, run, ["ragchecker.faithfulness", "ragchecker.recall"])
    assert job["failed"] == 0
    assert len(judge.fake.requests) == 6 * (1 + 2 + 1 + 1)
    assert 2 <= judge.fake.max_in_flight <= 3


# ------------------------------------------------------------------------------ 5. failures
def test_failing_calls_fail_their_samples_only(client: TestClient, judge: Judge, settings: Settings) -> None:
    def faulty(prompt: str) -> Reply:
        if "panne500" in prompt:
            return JSONResponse({"error": {"message": "boom"}}, status_code=500)
        if "pannehtml" in prompt:
            return garbage()
        if "pannelabel" in prompt and "### Claims:" in prompt:
            return "Je ne peux pas répondre."
        return None

    judge.reply = faulty
    items = [
        Item(f"Question {tag} ?", "Paris.", "Paris est la capitale.", ("Paris est la capitale.", "Lyon."))
        for tag in ("panne500", "pannehtml", "pannelabel", "normale")
    ]
    run = make_run(client, items)
    metrics = ["ragchecker.precision", "ragchecker.faithfulness"]
    t0 = time.monotonic()
    job = score(client, run, metrics)
    assert time.monotonic() - t0 < 30
    assert (job["done"], job["failed"]) == (2, 6)
    assert job["errors_by_cause"] == {"http_500": 2, "malformed_response": 2, "malformed_judge_output": 2}
    table = rows(client, run)
    assert table["q3"]["ragchecker.precision@5"] == 100.0
    assert "label" in table["q2"]["ragchecker.precision@5.error"]
    # A repaired judge: the re-submission scores the items whose calls failed, resuming from their
    # checkpoints. The label-less answer was a valid completion, so the gateway cached it: q2 fails again.
    judge.reply = None
    again = score(client, run, metrics)
    assert (again["total"], again["failed"]) == (6, 2), again["errors"]
    assert again["errors_by_cause"] == {"malformed_judge_output": 2}
    assert all(r["ragchecker.faithfulness@5"] is not None for q, r in rows(client, run).items() if q != "q2")


def test_a_hanging_call_times_out_its_sample_quickly(
    client: TestClient, judge: Judge, settings: Settings
) -> None:
    settings.judge.timeout_s, settings.judge.retries = 0.5, 0
    judge.fake.hang_first = 1  # the first call hangs 3 s, longer than the gateway's timeout
    run = make_run(client, [PLAIN, Item("Et l'Italie ?", "Rome.", "Rome est la capitale.", ("En Italie.",))])
    t0 = time.monotonic()
    job = score(client, run, ["ragchecker.recall"])
    assert time.monotonic() - t0 < 15
    assert (job["done"], job["failed"]) == (1, 1)
    assert job["errors_by_cause"] == {"timeout": 1}


def test_an_unreachable_judge_raises_instead_of_retrying_forever(settings: Settings) -> None:
    """refchecker's own client would print "[sleep 10 seconds]" and loop forever here."""
    import asyncio
    import socket

    import httpx

    from services.metrics.base import Sample
    from services.metrics.context import JudgeSession, ScoringContext
    from services.metrics.judges import ragchecker
    from services.metrics.registry import BY_NAME

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]

    async def run() -> Any:
        async with httpx.AsyncClient() as http:
            session = JudgeSession(f"http://127.0.0.1:{closed}", "t", http, job="adhoc", refresh=False)
            ctx = ScoringContext(settings, language="fr", judge=session)
            adapter = ragchecker.Adapter(BY_NAME["ragchecker.precision"])
            return await adapter.score([sample], ctx)

    sample = Sample(1, "Q ?", "R.", ("C.",), "Ref.", True, "fr", (), (), {}, 5)
    t0 = time.monotonic()
    [res] = asyncio.run(run())
    assert time.monotonic() - t0 < 20
    assert res.value is None and res.error and "Connection" in res.error


# ------------------------------------------------------------------------------ 6. every metric, defaults
def test_every_metric_gives_a_value_without_any_spacy_model(
    client: TestClient, judge: Judge, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spacy

    def no_model(*_: Any, **__: Any) -> Any:
        raise AssertionError("a spaCy model was loaded")

    monkeypatch.setattr(spacy, "load", no_model)
    run = make_run(client, [PLAIN])
    job = score(client, run, RC)
    assert (job["done"], job["failed"]) == (11, 0), job["errors"]
    row = rows(client, run)["q0"]
    for name in RC:
        assert row[f"{name}@5.error"] is None, name
        assert 0 <= row[f"{name}@5"] <= 100, name
    for name in RC:
        [s] = stored(engine, f"{name}@5")
        assert s.config["judge"]["prompts"] == "fr" and s.config["ragchecker"]["prompt_version"] >= 1


# ------------------------------------------------------------------------------ 7. prompt language
def test_english_dataset_uses_english_prompts(client: TestClient, judge: Judge) -> None:
    from refchecker.checker import llm_checker
    from refchecker.extractor import llm_extractor

    run = make_run(client, [PLAIN], language="en")
    score(client, run, ["ragchecker.precision"])
    prompts = judge.fake.prompts()
    assert len(prompts) == 2
    assert prompts[0].startswith("Given a question and a candidate answer")
    assert prompts[1].startswith("I have a list of claims")
    # the French prompts of earlier tests were put back
    assert llm_extractor.LLM_TRIPLET_EXTRACTION_PROMPT_Q.startswith("Given a question")
    assert llm_checker.JOINT_CHECKING_PROMPT_Q.startswith("I have a list of claims")


def test_prompt_languages_never_mix_across_threads() -> None:
    from refchecker.checker import llm_checker

    from services.metrics.judges.ragchecker import PROMPTS

    inside_fr, release_fr, en_seen = threading.Event(), threading.Event(), []

    def french() -> None:
        with PROMPTS.use("fr"):
            inside_fr.set()
            release_fr.wait(5)

    def english() -> None:
        with PROMPTS.use("en"):
            en_seen.append(llm_checker.JOINT_CHECKING_PROMPT_Q[:20])

    fr = threading.Thread(target=french)
    fr.start()
    assert inside_fr.wait(5)
    en = threading.Thread(target=english)
    en.start()
    time.sleep(0.2)
    assert en_seen == []  # English waits while a French evaluation runs
    assert llm_checker.JOINT_CHECKING_PROMPT_Q.startswith("Voici une liste")
    release_fr.set()
    fr.join(5)
    en.join(5)
    assert en_seen == ["I have a list of cla"]
    assert llm_checker.JOINT_CHECKING_PROMPT_Q.startswith("I have a list of claims")


def test_importing_the_adapter_loads_no_library() -> None:
    code = (
        "import sys, services.metrics.judges.ragchecker\n"
        "assert not {'ragchecker', 'refchecker', 'litellm'} & set(sys.modules), sorted(sys.modules)"
    )
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, timeout=60)
