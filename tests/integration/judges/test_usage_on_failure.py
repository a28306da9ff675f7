"""A judge that always fails: the judge calls and retries its items made still reach the job's judge_usage."""

from __future__ import annotations

from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from tests.fakellm import FakeLLM
from tests.integration.judges.test_opik import new_run, score
from tests.judgefake import start_judge


def test_judge_usage_counts_the_calls_and_retries_of_failed_items(
    client: TestClient, settings: Settings
) -> None:
    fake: FakeLLM = start_judge()
    try:
        fake.fail_first, fake.fail_status = 10**9, 500  # every call
        settings.judge = JudgeSettings(
            base_url=fake.base_url, model="judge-model", timeout_s=5.0, retries=2, max_concurrency=4
        )
        job = score(client, new_run(client), ["opik.moderation"])
    finally:
        fake.stop()
    assert job["failed"] == 5 and job["done"] == 0, job
    usage = job["summary"]["judge_usage"]["opik.moderation"]
    sent = len(fake.requests)
    assert sent >= 5 * 3, sent  # each item's request tried 1 + 2 times, at least once per item
    # one upstream call per request the libraries made, each tried twice more: every request sent is counted
    assert usage["upstream_calls"] + usage["upstream_retries"] == sent, (usage, sent)
    assert usage["upstream_retries"] == 2 * usage["upstream_calls"], usage
    assert usage["failures"] == usage["upstream_calls"] and usage["causes"] == {"http_500": usage["failures"]}
