"""Concurrent preference imports on a served app (uvicorn on loopback, real threadpool), on SQLite and on
PostgreSQL: every batch answered (no 5xx, no lock timeout), every row stored once, the runs' orientation kept,
and the answers changing under the imports leave every preference on a recorded version. Bounded: 8 clients,
40 questions. The timeouts only keep a deadlock from hanging the suite; nothing is timed."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Awaitable

import httpx

import ragmeta
from tests.conftest import Live
from tests.integration.test_concurrency import HANG_GUARD_S, N_CLIENTS, N_QUESTIONS, _outputs, _seed
from tests.live import concurrently


def _pair(live: Live) -> tuple[int, int]:
    run_a = _seed(live)
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=HANG_GUARD_S) as c:
        ds = c.get(f"/runs/{run_a}").json()["dataset_id"]
        run_b = c.post(f"/datasets/{ds}/runs", json={"name": "r2"}).json()["id"]
        r = c.post(f"/runs/{run_b}/outputs", json=_outputs("b0"))
        assert r.status_code == 200, r.text
    return run_a, int(run_b)


def _value(rater: int, question: int) -> int:
    return (rater + question) % 5 - 2


def _csv(rater: str, values: list[int]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["question_id", "rater", "preference"])
    for i, v in enumerate(values):
        w.writerow([f"q{i}", rater, v])
    return buf.getvalue().encode()


def _batch(a: int, b: int, rater: int, mirrored: bool) -> tuple[dict[str, int], bytes]:
    values = [_value(rater, q) for q in range(N_QUESTIONS)]
    if mirrored:  # the same preferences posted for (B, A): the sign flips
        return {"run_a": b, "run_b": a}, _csv(f"rater-{rater}", [-v for v in values])
    return {"run_a": a, "run_b": b}, _csv(f"rater-{rater}", values)


def _stored(live: Live, a: int, b: int) -> list[dict[str, object]]:
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=HANG_GUARD_S) as c:
        api = ragmeta.Client(http=c)
        return [p.model_dump(mode="json") for p in api.all(api.list_preferences, a, b)]


def test_eight_preference_batches_both_orientations_each_row_once(live_server: Live) -> None:
    a, b = _pair(live_server)

    def requests(client: httpx.AsyncClient) -> list[Awaitable[httpx.Response]]:
        jobs: list[Awaitable[httpx.Response]] = []
        for i in range(N_CLIENTS):
            params, body = _batch(a, b, i, mirrored=i % 2 == 1)
            jobs.append(
                client.post("/preferences", params=params, content=body, headers={"content-type": "text/csv"})
            )
        return jobs

    answers, probes = concurrently(live_server.url, live_server.headers, HANG_GUARD_S, requests)
    assert [r.status_code for r in answers] == [200] * N_CLIENTS, [r.text[:200] for r in answers]
    assert [r.json()["created"] for r in answers] == [N_QUESTIONS] * N_CLIENTS
    assert probes and all(p.status_code == 200 for p in probes)
    stored = _stored(live_server, a, b)
    keys = [(p["question_id"], p["rater"]) for p in stored]
    assert len(keys) == N_CLIENTS * N_QUESTIONS == len(set(keys))
    for p in stored:
        rater, q = int(str(p["rater"]).split("-")[1]), int(str(p["question_id"])[1:])
        assert p["preference"] == _value(rater, q) and not p["stale"]


def test_identical_batches_race_and_answers_change_under_them(live_server: Live) -> None:
    """Eight batches of one rater on the same rows (half mirrored), racing with re-imports of run B's
    answers: one batch's values whole, and each preference stale exactly when its answer moved on since."""
    a, b = _pair(live_server)

    async def scenario() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S
        ) as c:
            jobs = []
            for i in range(N_CLIENTS):
                values = [_value(i, q) for q in range(N_QUESTIONS)]
                mirrored = i % 2 == 1
                params = {"run_a": b, "run_b": a} if mirrored else {"run_a": a, "run_b": b}
                body = _csv("rater-0", [-v for v in values] if mirrored else values)
                jobs.append(
                    c.post("/preferences", params=params, content=body, headers={"content-type": "text/csv"})
                )
                if i % 4 == 0:
                    jobs.append(c.post(f"/runs/{b}/outputs", json=_outputs(f"b{i + 1}")))
            return list(await asyncio.gather(*jobs))

    answers = asyncio.run(scenario())
    assert all(r.status_code == 200 for r in answers), [r.text[:200] for r in answers]
    stored = _stored(live_server, a, b)
    assert len(stored) == N_QUESTIONS == len({p["question_id"] for p in stored})
    winners = {(int(str(p["question_id"])[1:]), p["preference"]) for p in stored}
    assert len({(v - q) % 5 for q, v in winners}) == 1  # one batch's values, never a mix
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as c:
        api = ragmeta.Client(http=c)
        outputs = [o.model_dump(mode="json") for o in api.all(api.list_outputs, b)]
        read = c.get("/reports/pairwise", params={"run_a": a, "run_b": b, "source": "absolute"}).json()
    # All of run B's answers changed together in each output batch: the preferences are all current or all
    # stale, and the report's count says the same as the listing.
    stale = [p["stale"] for p in stored]
    assert len(set(stale)) == 1 and len(outputs) == N_QUESTIONS
    assert read["preferences"]["stale"] == sum(stale)
