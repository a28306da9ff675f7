"""The Prometheus scrape after a scoring job with a judge: every family is there, and its numbers are those
the job, the store and the requests made say (each recounted here, not read back from the renderer)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import httpx
from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from tests.fakellm import FakeLLM
from tests.integration.judges.test_opik import new_run, score
from tests.judgefake import start_judge

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> tuple[dict[str, str], dict[str, dict[frozenset[tuple[str, str]], float]]]:
    """The families' types and every sample, by name and label set (the text format, read by hand)."""
    types: dict[str, str] = {}
    samples: dict[str, dict[frozenset[tuple[str, str]], float]] = defaultdict(dict)
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            m = LINE.match(line)
            assert m, line
            labels = frozenset(LABEL.findall(m.group(3) or ""))
            samples[m.group(1)][labels] = float(m.group(4))
    return types, samples


def one(samples: dict[str, Any], name: str, **labels: str) -> float:
    return float(samples[name][frozenset(labels.items())])


def test_scrape_after_a_scoring_job_shows_every_family(client: TestClient, settings: Settings) -> None:
    fake: FakeLLM = start_judge()
    try:
        fake.fail_first, fake.fail_status = 1, 500  # the first call is retried once
        settings.judge = JudgeSettings(
            base_url=fake.base_url, model="judge-model", timeout_s=5.0, retries=2, max_concurrency=4
        )
        run = new_run(client)
        jobs = [
            score(client, run, ["classic.rouge_l"]),
            score(client, run, ["classic.rouge_l"], recompute=True),
        ]
        # Judge calls as a worker process sends them: through the API process's gateway, under a ledger.
        core = client.app.state.resources.core  # type: ignore[attr-defined]
        assert core.scoring.gateway_url() is not None
        gateway = core.scoring.gateway
        token = gateway.open_ledger("telemetry-test")
        body = {"model": "judge-model", "messages": [{"role": "user", "content": "Bonjour ?"}]}
        url = gateway.base_url(token, "opik.moderation") + "/chat/completions"
        with httpx.Client(timeout=10) as http:
            for _ in range(3):  # the same request: the judge once (retried once), then the cache twice
                assert http.post(url, json=body).status_code == 200
        usage = gateway.close_ledger(token)["metrics"]["opik.moderation"]
        for _ in range(2):
            assert client.get(f"/runs/{run}/report").status_code == 200
        assert client.get("/healthz").status_code == 200
        resp = client.get("/-/metrics")
    finally:
        fake.stop()
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    types, samples = parse(resp.text)
    expected = {
        "ragmeta_http_requests_total": "counter",
        "ragmeta_http_request_duration_seconds": "histogram",
        "ragmeta_job_queue_depth": "gauge",
        "ragmeta_job_items_processed_total": "counter",
        "ragmeta_jobs": "gauge",
        "ragmeta_judge_in_flight": "gauge",
        "ragmeta_judge_requests_total": "counter",
        "ragmeta_judge_cache_hits_total": "counter",
        "ragmeta_judge_retries_total": "counter",
        "ragmeta_judge_upstream_calls_total": "counter",
        "ragmeta_report_cache_hits_total": "counter",
        "ragmeta_report_compute_seconds": "histogram",
        "ragmeta_db_pool_connections": "gauge",
    }
    assert {name: types.get(name) for name in expected} == expected

    # Requests by route template, not by path: the two scoring jobs are one series.
    jobs_route = {"method": "POST", "route": "/runs/{run_id}/scoring-jobs", "status": "202"}
    assert one(samples, "ragmeta_http_requests_total", **jobs_route) == 2
    assert one(samples, "ragmeta_http_requests_total", method="GET", route="/healthz", status="200") == 1
    routes = {dict(k).get("route", "") for k in samples["ragmeta_http_requests_total"]}
    assert not any(str(run) in r for r in routes), routes
    report = {"method": "GET", "route": "/runs/{run_id}/report"}
    assert one(samples, "ragmeta_http_request_duration_seconds_count", **report) == 2
    assert one(samples, "ragmeta_http_request_duration_seconds_bucket", **report, le="+Inf") == 2

    # Job items: the two jobs' items, all done, none waiting.
    done = sum(j["done"] for j in jobs)
    assert done > 0 and all(j["failed"] == 0 for j in jobs)
    assert one(samples, "ragmeta_job_items_processed_total", status="done") == done
    assert one(samples, "ragmeta_job_queue_depth") == 0
    assert one(samples, "ragmeta_jobs", status="done") == 2

    # The gateway's totals are what its ledger counted and what the judge received.
    assert (usage["calls"], usage["upstream_calls"], usage["upstream_retries"], usage["cache_hits"]) == (
        3,
        1,
        1,
        2,
    )
    assert len(fake.requests) == 2
    assert one(samples, "ragmeta_judge_requests_total") == 3
    assert one(samples, "ragmeta_judge_upstream_calls_total") == 1
    assert one(samples, "ragmeta_judge_retries_total") == 1
    assert one(samples, "ragmeta_judge_cache_hits_total") == 2
    assert one(samples, "ragmeta_judge_in_flight") == 0

    # The second report came from the cache; the first was computed (and timed) once.
    assert one(samples, "ragmeta_report_cache_hits_total", cache="report") == 1
    assert one(samples, "ragmeta_report_cache_misses_total", cache="report") == 1
    assert sum(samples["ragmeta_report_compute_seconds_count"].values()) >= 1
    assert samples["ragmeta_db_pool_connections"] and samples["ragmeta_db_slots"]
