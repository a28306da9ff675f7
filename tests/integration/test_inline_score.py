"""POST /score: inline samples scored through the same adapters, judge gateway and cache as a scoring job
(the same values for the same samples), bad requests refused with a 422 naming the field, and a bounded load
of concurrent requests served in full without exceeding the judge bound."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from tests.api.helpers import assert_envelope, load_mini
from tests.api.test_outputs import make_run
from tests.conftest import Live
from tests.fakellm import FakeLLM
from tests.integration.judges.helpers import score
from tests.integration.test_scoring import rows_by_question
from tests.judgefake import start_judge

CONTEXTS = {
    "q1": ["Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go de données."],
    "q2": [
        "Pour résilier, le client appelle le service client ou envoie une lettre recommandée.",
        "La résiliation prend effet sous 10 jours.",
    ],
    "q3": [
        "Le forfait Intégral coûte 24,99 € par mois avec 150 Go",
        "Le forfait Essentiel coûte 9,99 € par mois",
    ],
}
ANSWERS = {
    "q1": "9,99 € par mois.",
    "q2": "Appelez le service client ; la résiliation prend effet sous 10 jours.",
    "q3": "24,99 € contre 9,99 €.",
}
# One metric of each judge library, and classical ones.
METRICS = [
    "classic.bleu",
    "classic.rouge_l",
    "opik.hallucination",
    "deepeval.faithfulness",
    "ragas.faithfulness",
    "ragchecker.precision",
]


@pytest.fixture
def fake(settings: Settings) -> Iterator[FakeLLM]:
    server = start_judge()
    settings.judge = JudgeSettings(
        base_url=server.base_url, model="judge-model", timeout_s=5.0, retries=1, max_concurrency=3
    )
    # English prompts: the test judge does not translate Ragas' prompts (tests/integration/judges do).
    settings.judge.language = "en"
    yield server
    server.stop()


def test_inline_values_equal_the_job_path_for_the_same_samples(client: TestClient, fake: FakeLLM) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    outputs = [
        {"question_id": q, "answer": a, "retrieved": [{"text": t} for t in CONTEXTS[q]]}
        for q, a in ANSWERS.items()
    ]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    job = score(client, run, METRICS)
    assert job["failed"] == 0, job["errors"]
    rows = rows_by_question(client, run)
    questions = {q["external_id"]: q for q in client.get(f"/datasets/{ds}/questions").json()}
    ids = list(ANSWERS)
    body = {
        "metrics": METRICS,
        "language": "fr",
        "samples": [
            {
                "question": questions[q]["question"],
                "answer": ANSWERS[q],
                "contexts": CONTEXTS[q],
                "reference": questions[q]["reference_answer"],
            }
            for q in ids
        ],
    }
    r = client.post("/score", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    names = [m["name"] for m in got["metrics"]]
    assert names == [m if m.startswith("classic.") else f"{m}@5" for m in METRICS]
    assert {m["prompts"] for m in got["metrics"] if m["judge_model"]} == {"en"}
    compared = 0
    for q, sample in zip(ids, got["samples"], strict=True):
        for s in sample["scores"]:
            assert s["error"] is None, s
            assert s["value"] is not None, s
            assert s["value"] == pytest.approx(rows[q][s["metric"]], abs=1e-9), (q, s["metric"])
            compared += 1
    assert compared == len(ids) * len(METRICS)
    # same requests as the job's: every judge answer came from the gateway's cache
    judged = [s for sample in got["samples"] for s in sample["scores"] if s["judge_calls"]]
    assert judged and all(s["cache_hits"] == s["judge_calls"] for s in judged)


def _sample(**kw: Any) -> dict[str, Any]:
    return {
        "question": "Combien ?",
        "answer": "9,99 €.",
        "contexts": ["9,99 € par mois."],
        "reference": "9,99 €",
        **kw,
    }


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"metrics": ["classic.bleux"], "samples": [_sample()]}, "metrics[0]", "unknown metric"),
        ({"metrics": ["classic.bleu"], "samples": [_sample()] * 3}, "samples", "at most 2"),
        (
            {"metrics": ["classic.bleu"], "samples": [{"question": "Q ?", "contexts": []}]},
            "samples[0].answer",
            "",
        ),
        ({"metrics": ["classic.bleu"], "samples": [_sample(reference=None)]}, "reference", "classic.bleu"),
        ({"metrics": ["ref.word_recall"], "samples": [_sample()]}, "metrics[0]", "reference_passages"),
        ({"metrics": [], "samples": [_sample()]}, "metrics", ""),
    ],
    ids=[
        "unknown-metric",
        "too-many-samples",
        "missing-answer",
        "missing-reference",
        "needs-passages",
        "no-metric",
    ],
)
def test_bad_requests_are_422_naming_the_field(
    client: TestClient, settings: Settings, body: dict[str, Any], field: str, reason: str
) -> None:
    settings.scoring.max_inline_samples = 2
    env = assert_envelope(client.post("/score", json=body), 422)
    assert any(item["field"] == field and reason in item["reason"] for item in env["items"]), env


def test_a_judge_metric_without_a_judge_is_422(client: TestClient) -> None:
    env = assert_envelope(
        client.post("/score", json={"metrics": ["opik.hallucination"], "samples": [_sample()]}), 422
    )
    assert env["items"][0]["field"] == "metrics[0]" and "no judge configured" in env["items"][0]["reason"]


def test_concurrent_requests_are_all_served_within_the_judge_bound(
    fake: FakeLLM, settings: Settings, live_server: Live
) -> None:
    """A bounded loopback load: 12 clients at once, 2 samples each, 2 requests scored at a time."""
    fake.latency_s = 0.05
    settings.scoring.max_inline_requests = 2

    def one(i: int) -> httpx.Response:
        samples = [_sample(answer=f"Réponse {i}-{j}.") for j in range(2)]  # distinct: no cache hit
        with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=120) as http:
            return http.post(
                "/score", json={"metrics": ["opik.hallucination"], "samples": samples, "language": "fr"}
            )

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(one, range(12)))
    assert [r.status_code for r in responses] == [200] * 12, [
        r.text for r in responses if r.status_code != 200
    ]
    values = [s["value"] for r in responses for sample in r.json()["samples"] for s in sample["scores"]]
    assert len(values) == 24 and None not in values
    assert len(fake.requests) == 24
    assert 1 <= fake.max_in_flight <= 3
