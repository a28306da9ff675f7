"""A judge answer that cannot be read, or that cannot carry a value, is never stored as a number.

For each library, through the scoring API against the loopback test judge: answers that do not parse,
answers outside the library's vocabulary, too few (or too many) verdicts, and empty lists the libraries would
score 0 or 1 on their own. Each case ends as an error with its cause, or as an undefined score with its
reason; the stored row has no value either way."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.settings import Settings
from services.config import JudgeSettings
from services.models import MetricScore
from tests.fakellm import FakeLLM
from tests.integration.judges.helpers import score
from tests.integration.judges.test_ragchecker import TRIPLET, Item, make_run
from tests.judgefake import all_text, start_judge

PROSE = "Je pense que la réponse est plutôt correcte, dans l'ensemble."
SAMPLE = Item(
    "Combien coûte le forfait Essentiel ?",
    "Le forfait Essentiel coûte 9,99 € par mois. Il inclut 20 Go.",
    "9,99 € par mois, avec 20 Go de données.",
    ("Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go.", "La résiliation prend 10 jours."),
)
Answer = Callable[[dict[str, Any]], str | None]


def last_message(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    return str(messages[-1].get("content") or "")


def deepeval_schema(body: dict[str, Any]) -> str:
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    return next(iter(spec.get("schema", {}).get("$defs", {})), None) or str(spec.get("name", ""))


def ragas_schema(body: dict[str, Any]) -> str:
    # instructor's system message carries the output model's JSON schema; its title names the model
    match = re.search(r'"title":\s*"(\w+Output)"', all_text(body))
    return match.group(1) if match else ""


def opik_format(body: dict[str, Any]) -> str:
    return str((body.get("response_format") or {}).get("json_schema", {}).get("name", ""))


# --------------------------------------------------------------------------------------------- the cases
def rc_no_triplet(body: dict[str, Any]) -> str | None:
    return (
        "Je ne vois aucune affirmation à extraire."
        if last_message(body).rstrip().endswith("### KG:")
        else None
    )


def rc_one_label(body: dict[str, Any]) -> str | None:
    return "Entailment" if "### Claims:" in last_message(body) else None


def rc_all_neutral(body: dict[str, Any]) -> str | None:
    prompt = last_message(body)
    if "### Claims:" not in prompt:
        return None
    block = prompt.rsplit("### Claims:", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    return "\n".join("Neutral" for _ in TRIPLET.findall(block))


def de_oui(body: dict[str, Any]) -> str | None:
    if deepeval_schema(body) == "FaithfulnessVerdict":
        return json.dumps(
            {"verdicts": [{"verdict": "oui", "reason": "r"}, {"verdict": "yes", "reason": "r"}]}
        )
    return None


def de_one_verdict(body: dict[str, Any]) -> str | None:
    if deepeval_schema(body) == "FaithfulnessVerdict":
        return json.dumps({"verdicts": [{"verdict": "yes", "reason": "r"}]})
    return None


def de_no_claim(body: dict[str, Any]) -> str | None:
    return json.dumps({"claims": []}) if deepeval_schema(body) == "Claims" else None


def ragas_one_verdict(body: dict[str, Any]) -> str | None:
    kind = ragas_schema(body)
    if kind == "StatementGeneratorOutput":
        return json.dumps({"statements": ["s1", "s2"]})
    if kind == "NLIStatementOutput":
        return json.dumps({"statements": [{"statement": "s1", "reason": "r", "verdict": 1}]})
    return None


def ragas_verdict_two(body: dict[str, Any]) -> str | None:
    if ragas_schema(body) == "ContextPrecisionOutput":
        return json.dumps({"reason": "très utile", "verdict": 2})
    return None


def ragas_no_question(body: dict[str, Any]) -> str | None:
    if ragas_schema(body) == "AnswerRelevanceOutput":
        return json.dumps({"question": "", "noncommittal": 0})
    return None


def ragas_no_claim(body: dict[str, Any]) -> str | None:
    return json.dumps({"claims": []}) if ragas_schema(body) == "ClaimDecompositionOutput" else None


def opik_out_of_range(body: dict[str, Any]) -> str | None:
    if opik_format(body) == "UsefulnessResponseFormat":
        return json.dumps({"score": 7, "reason": "très utile"})
    return None


@dataclass(frozen=True)
class Case:
    metric: str
    answer: Answer
    error: str | None = None  # a substring of the stored error ("malformed_judge_output: ..." always)
    reason: str | None = None  # or: a substring of the stored reason (undefined, no error)


CASES = {
    # RAGChecker reads an answer without triplets as 0 claims and scores 0; pads missing labels with Neutral
    "ragchecker-prose": Case("ragchecker.precision", lambda b: PROSE, error="no claim triplet"),
    "ragchecker-no-triplet": Case("ragchecker.recall", rc_no_triplet, error="no claim triplet"),
    "ragchecker-missing-labels": Case("ragchecker.precision", rc_one_label, error="1 Entailment"),
    "ragchecker-utilization-0-of-0": Case(
        "ragchecker.context_utilization", rc_all_neutral, reason="no reference claim is entailed"
    ),
    # DeepEval drops verdicts outside its vocabulary, scores what is left, and scores an empty list 1
    "deepeval-prose": Case("deepeval.faithfulness", lambda b: PROSE, error="invalid JSON"),
    "deepeval-oui": Case("deepeval.faithfulness", de_oui, error="does not fit Verdicts"),
    "deepeval-missing-verdict": Case("deepeval.faithfulness", de_one_verdict, error="1 verdict(s) for 2"),
    "deepeval-no-claim": Case("deepeval.faithfulness", de_no_claim, reason="no claim in the answer"),
    # Ragas scores the verdicts it got, counts any non-zero verdict as 1, and scores nothing as 0
    "ragas-prose": Case("ragas.faithfulness", lambda b: PROSE, error="malformed_judge_output"),
    "ragas-missing-verdict": Case("ragas.faithfulness", ragas_one_verdict, error="1 verdict(s) for 2"),
    "ragas-verdict-2": Case("ragas.context_precision", ragas_verdict_two, error="must be 0 or 1"),
    "ragas-no-question": Case("ragas.answer_relevancy", ragas_no_question, error="no question"),
    "ragas-no-claim": Case("ragas.factual_correctness:precision", ragas_no_claim, reason="no claim"),
    # Opik's parsers are strict already: the adapter keeps their errors
    "opik-prose": Case("opik.hallucination", lambda b: PROSE, error="malformed_judge_output"),
    "opik-out-of-range": Case("opik.usefulness", opik_out_of_range, error="between 0.0 and 1.0"),
}


@pytest.fixture
def judge(settings: Settings) -> Iterator[Callable[[Answer], FakeLLM]]:
    started: list[FakeLLM] = []

    def start(answer: Answer) -> FakeLLM:
        fake = start_judge(answer)
        started.append(fake)
        settings.judge = JudgeSettings(
            base_url=fake.base_url, model="judge-model", timeout_s=5.0, retries=0, max_concurrency=4
        )
        return fake

    yield start
    for fake in started:
        fake.stop()


@pytest.mark.parametrize("name", list(CASES))
def test_no_number_is_stored_for_an_answer_that_cannot_carry_one(
    name: str, client: TestClient, judge: Callable[[Answer], FakeLLM], engine: Engine
) -> None:
    case = CASES[name]
    fake = judge(case.answer)
    run = make_run(client, [SAMPLE], language="en")
    job = score(client, run, [case.metric], check_done=False)
    assert job["status"] == "done", job
    assert fake.requests, "the judge was asked"
    with Session(engine) as s:
        [row] = s.scalars(select(MetricScore).where(MetricScore.metric.startswith(case.metric)))
    assert row.value is None, (row.value, row.error, row.reason)
    if case.error is not None:
        assert (job["done"], job["failed"]) == (0, 1), job
        assert row.error is not None and row.error.startswith("malformed_judge_output: "), row.error
        assert case.error in row.error, row.error
        assert job["errors_by_cause"] == {"malformed_judge_output": 1}
    else:
        assert case.reason is not None
        assert (job["done"], job["failed"]) == (1, 0), job
        assert row.error is None and row.reason is not None and case.reason in row.reason, row.reason
