"""The score memo (services/metrics/memo.py) against the loopback judge, through the scoring API: a
re-scoring takes every judge score from it without a judge or gateway call, and misses it (the library runs
again) as soon as anything the score rests on changed: one cached judge answer, the judge, the sample, the
judge cache itself; refresh_judge_cache bypasses it and failures are never memoized."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from services.config import JudgeSettings, Settings
from services.models import JudgeCall, ScoreMemo
from tests.integration.judges.test_opik import ANSWERS, judge, new_run, response_format, score, stored
from tests.integration.test_scoring import drain, rows_by_question
from tests.judgefake import Override

__all__ = ["judge"]  # the fixture, used by name

METRICS = ["opik.moderation", "opik.usefulness"]


def hits(job: dict[str, Any]) -> int:
    return int(job["summary"].get("score_memo_hits", 0))


def refreshed(client: TestClient, run: int) -> dict[str, Any]:
    body = {"metrics": METRICS, "recompute": True, "refresh_judge_cache": True}
    r = client.post(f"/runs/{run}/scoring-jobs", json=body)
    assert r.status_code == 202, r.text
    drain(client)
    job: dict[str, Any] = client.get(f"/jobs/{r.json()['id']}").json()
    return job


def change_cached_answer(engine: Engine, answer: str, score_value: float) -> None:
    """Rewrite the cached moderation answer for the output ``answer`` (as a refresh by another job would)."""
    with Session(engine) as s:
        rows = s.scalars(select(JudgeCall)).all()
        target = [
            r
            for r in rows
            if response_format(r.request) == "ModerationResponseFormat"
            and answer in json.dumps(r.request, ensure_ascii=False)
        ]
        assert len(target) == 1
        response = json.loads(json.dumps(target[0].response))
        message = response["choices"][0]["message"]
        content = json.loads(message["content"])
        content["score"] = score_value
        message["content"] = json.dumps(content)
        target[0].response = response
        s.commit()


def test_rescoring_reads_the_memo_and_misses_it_when_an_answer_the_judge_or_the_cache_changed(
    client: TestClient, judge: Any, engine: Engine, settings: Settings
) -> None:
    fake = judge()
    run = new_run(client)
    first = score(client, run, METRICS)
    assert (first["status"], first["failed"], hits(first)) == ("done", 0, 0)
    upstream = len(fake.requests)
    assert upstream == 10  # 5 outputs x 2 metrics, one call each
    table = rows_by_question(client, run)

    # 1. unchanged: every score from the memo, no judge or gateway call
    again = score(client, run, METRICS, recompute=True)
    assert (again["failed"], hits(again), len(fake.requests)) == (0, 10, upstream)
    assert "judge_usage" not in again["summary"]
    assert rows_by_question(client, run) == table
    for s in stored(engine, "opik.moderation").values():
        assert s.details["score_memo"] == {"computed_by_job": first["id"], "judge_answers": 1}
        assert s.details["judge_calls"] == 0 and s.details["explanation"]

    # 2. one cached answer changed: that score misses and is recomputed from the changed answer
    change_cached_answer(engine, ANSWERS["q2"], 0.75)
    changed = score(client, run, METRICS, recompute=True)
    assert (changed["failed"], hits(changed), len(fake.requests)) == (0, 9, upstream)
    assert changed["summary"]["judge_usage"]["opik.moderation"]["cache_hits"] == 1
    now = rows_by_question(client, run)
    assert now["q2"]["opik.moderation"] == 0.75 != table["q2"]["opik.moderation"]
    assert {q: r for q, r in now.items() if q != "q2"} == {q: r for q, r in table.items() if q != "q2"}
    # ... and memoized anew with it
    assert hits(score(client, run, METRICS, recompute=True)) == 10
    assert rows_by_question(client, run)["q2"]["opik.moderation"] == 0.75

    # 3. the judge cache emptied: nothing to vouch for the scores, the judge is asked again
    with Session(engine) as s:
        s.execute(delete(JudgeCall))
        s.commit()
    emptied = score(client, run, METRICS, recompute=True)
    assert (emptied["failed"], hits(emptied), len(fake.requests)) == (0, 0, 2 * upstream)
    assert rows_by_question(client, run) == table

    # 4. another judge model: another configuration, nothing reused
    settings.judge = JudgeSettings(
        base_url=fake.base_url, model="other-judge", timeout_s=5.0, retries=1, max_concurrency=4
    )
    other = score(client, run, METRICS, recompute=True)
    assert (other["failed"], hits(other), len(fake.requests)) == (0, 0, 3 * upstream)

    # 5. refresh_judge_cache never reads the memo
    fresh = refreshed(client, run)
    assert (fresh["failed"], hits(fresh), len(fake.requests)) == (0, 0, 4 * upstream)

    # 6. an output's answer changed: its scores miss, the others are reused
    out = [{"question_id": "q1", "answer": "19,99 € par mois.", "retrieved": [{"text": "Le forfait."}]}]
    assert client.post(f"/runs/{run}/outputs", json=out).status_code == 200
    edited = score(client, run, METRICS, recompute=True)
    assert (edited["failed"], hits(edited), len(fake.requests)) == (0, 8, 4 * upstream + 2)


def test_failures_are_never_memoized(client: TestClient, judge: Any, engine: Engine) -> None:
    def broken(body: dict[str, Any]) -> str | None:
        if response_format(body) == "ModerationResponseFormat":
            return "Je ne peux pas répondre en JSON."
        return None

    override: Override = broken
    fake = judge(override)
    run = new_run(client)
    first = score(client, run, METRICS)
    assert first["failed"] == 5
    assert all(s.error for s in stored(engine, "opik.moderation").values())
    with Session(engine) as s:
        assert {m.metric for m in s.scalars(select(ScoreMemo))} == {"opik.usefulness"}
    sent = len(fake.requests)
    # the failed scores are computed again by Opik (from the cached malformed answers), the others reused
    again = score(client, run, METRICS, recompute=True)
    assert (again["failed"], hits(again), len(fake.requests)) == (5, 5, sent)
    assert again["summary"]["judge_usage"]["opik.moderation"]["cache_hits"] == 5
    assert all(
        s.error.startswith("malformed_judge_output") for s in stored(engine, "opik.moderation").values()
    )
