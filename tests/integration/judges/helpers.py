"""What the judge adapter tests share: submit a scoring job, drain it, read the score table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.testclient import TestClient

from services.config import Settings
from services.metrics.base import Sample, SampleScore
from tests.integration.test_scoring import drain, rows_by_question


def score(
    client: TestClient,
    run: int,
    metrics: list[str],
    recompute: bool = False,
    k: int | None = None,
    check_done: bool = True,
) -> dict[str, Any]:
    """Score ``run`` with ``metrics`` through the API and return the finished job."""
    body: dict[str, Any] = {"metrics": metrics, "recompute": recompute}
    if k is not None:
        body["k"] = k
    r = client.post(f"/runs/{run}/scoring-jobs", json=body)
    assert r.status_code == 202, r.text
    drain(client)
    job: dict[str, Any] = client.get(f"/jobs/{r.json()['id']}").json()
    if check_done:
        assert job["status"] == "done", job
    return job


def score_samples(
    settings: Settings, metric: str, samples: Sequence[Sample], language: str = "fr"
) -> list[SampleScore]:
    """Score samples with one metric the way a job's batch does (its own resources, closed after)."""
    from services.metrics.batch import MetricWork, score_batch
    from services.metrics.registry import resolve
    from services.metrics.resources import ScoringResources

    resources = ScoringResources(settings)
    try:
        work = [MetricWork(resolve(metric, samples[0].k if samples else 5), samples)]
        result = resources.run(score_batch(settings, resources, work, language=language, job="adhoc"))
    finally:
        resources.close()
    return result.scores[0]


rows = rows_by_question

__all__ = ["rows", "score", "score_samples"]
