"""Two scoring jobs of the same run under two judge models keep both sets of scores apart (by the judge
fingerprint in the config key); the report uses the later one and says so; judge sensitivity pairs them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.fakellm import FakeLLM
from tests.integration.judges.helpers import score
from tests.integration.test_inline_score import ANSWERS, CONTEXTS
from tests.judgefake import start_judge

METRICS = ["opik.answer_relevance", "opik.hallucination"]
# As stored and reported: both metrics use the top k retrieved chunks.
NAMES = [f"{m}@5" for m in METRICS]


@pytest.fixture
def fake(settings: Settings) -> Iterator[FakeLLM]:
    server = start_judge()
    settings.judge = JudgeSettings(base_url=server.base_url, model="judge-a", timeout_s=5.0, retries=1)
    settings.judge.language = "en"
    yield server
    server.stop()


def test_two_judge_models_coexist(client: TestClient, settings: Settings, fake: FakeLLM) -> None:
    run = make_run(client, load_mini(client))
    outputs = [
        {"question_id": q, "answer": a, "retrieved": [{"text": t} for t in CONTEXTS[q]]}
        for q, a in ANSWERS.items()
    ]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    score(client, run, METRICS)
    first = len(fake.requests)
    assert first > 0
    app_settings: Settings = client.app.state.resources.settings  # type: ignore[attr-defined]
    app_settings.judge.model = "judge-b"
    job = score(client, run, METRICS)  # not a recompute: another configuration, so scored again
    assert job["done"] == len(METRICS) * len(ANSWERS)
    assert len(fake.requests) > first
    confs = client.get(f"/runs/{run}/judge-configurations").json()["configurations"]
    assert [(c["model"], c["metrics"], c["n_scores"]) for c in confs] == [
        ("judge-a", NAMES, len(METRICS) * len(ANSWERS)),
        ("judge-b", NAMES, len(METRICS) * len(ANSWERS)),
    ]
    assert confs[0]["reported"] == [] and confs[1]["reported"] == NAMES
    # Both kept: the score table has one column per configuration of each metric.
    header = client.get(f"/runs/{run}/scores", params={"format": "csv"}).text.splitlines()[0]
    keys = {c.split("[")[1][:8] for c in header.split(",") if c.startswith("opik.hallucination@5[")}
    assert len(keys) == 2
    raters = [("rater1", [2, 4, 5]), ("rater2", [3, 4, 4])]
    ratings = [
        {"question_id": q, "rater": name, "score": s[i]} for name, s in raters for i, q in enumerate(ANSWERS)
    ]
    client.post("/raters", json=[{"name": name} for name, _ in raters])
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    report = client.get(f"/runs/{run}/report").json()
    assert any("this report uses the one scored last (model judge-b" in n for n in report["notes"])
    body = client.get(f"/runs/{run}/judge-sensitivity").json()
    assert (body["a"]["model"], body["b"]["model"]) == ("judge-a", "judge-b")
    assert [r["metric"] for r in body["metrics"]] == NAMES
    for r in body["metrics"]:
        # Three outputs: every figure says why it is undefined rather than showing a number.
        assert r["n"] == 3 and r["undefined_reason"]
        assert r["a"]["pearson"]["estimate"] is None and r["a"]["pearson"]["undefined_reason"]
    assert {w["code"] for w in body["warnings"]} == {"small_sample"}
