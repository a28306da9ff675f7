"""``refresh_judge_cache`` asks the judge again for everything: the gateway's cache and each library's own
caches (RAGChecker's checkpoints, Ragas' translated prompts) are bypassed, so a refreshed job makes as many
judge calls as the first one, and a plain re-scoring after it makes none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.fakellm import FakeLLM
from tests.integration.test_inline_score import ANSWERS, CONTEXTS
from tests.integration.test_scoring import drain
from tests.judgefake import start_judge

METRICS = [
    "opik.hallucination",
    "deepeval.faithfulness",
    "ragas.faithfulness",
    "ragchecker.precision",
    "ragchecker.faithfulness",
]


@pytest.fixture
def fake(settings: Settings) -> Iterator[FakeLLM]:
    server = start_judge()
    settings.judge = JudgeSettings(base_url=server.base_url, model="judge-model", timeout_s=5.0, retries=1)
    settings.judge.language = "en"
    yield server
    server.stop()


def _job(client: TestClient, run: int, **flags: Any) -> dict[str, Any]:
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS, **flags})
    assert r.status_code == 202, r.text
    drain(client)
    job: dict[str, Any] = client.get(f"/jobs/{r.json()['id']}").json()
    assert (job["status"], job["failed"]) == ("done", 0), job
    return job


def test_a_refreshed_job_asks_the_judge_as_often_as_the_first(client: TestClient, fake: FakeLLM) -> None:
    run = make_run(client, load_mini(client))
    outputs = [
        {"question_id": q, "answer": a, "retrieved": [{"text": t} for t in CONTEXTS[q]]}
        for q, a in ANSWERS.items()
    ]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    _job(client, run)
    first = len(fake.requests)
    assert first > 0
    _job(client, run, recompute=True)
    assert len(fake.requests) == first  # caches and checkpoints: nothing asked again
    for _ in range(2):  # every refreshed job, not only the first, asks everything again
        before = len(fake.requests)
        _job(client, run, recompute=True, refresh_judge_cache=True)
        assert len(fake.requests) - before == first
