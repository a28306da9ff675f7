"""What the judge adapter tests share: submit a scoring job, drain it, read the score table."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

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


rows = rows_by_question

__all__ = ["rows", "score"]
