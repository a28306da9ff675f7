"""Concurrent writers on a served app (uvicorn, real threadpool), on SQLite and on PostgreSQL.

Every batch must be answered (no 5xx, no lock timeout), and every row must be stored exactly once. The
timeouts below only keep a deadlock from hanging the suite; they are not performance assertions.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Awaitable
from typing import Any

import httpx
import pytest

from tests.conftest import Live
from tests.live import concurrently

N_QUESTIONS = 40
N_CLIENTS = 8
HANG_GUARD_S = 120.0

DOC = " ".join(f"Phrase {i} du document de test avec quelques mots." for i in range(200))


def _seed(live: Live) -> int:
    """A dataset of N_QUESTIONS questions, a run with one output each; returns the run id."""
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=HANG_GUARD_S) as c:
        ds = c.post("/datasets", json={"name": "concurrency", "language": "fr"}).json()["id"]
        r = c.post(f"/datasets/{ds}/documents", json=[{"external_id": "d1", "title": "d", "text": DOC}])
        assert r.status_code == 200, r.text
        questions = [
            {"external_id": f"q{i}", "question": f"Question {i} ?", "reference_answer": f"Réponse {i}."}
            for i in range(N_QUESTIONS)
        ]
        assert c.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
        run = c.post(f"/datasets/{ds}/runs", json={"name": "r1"}).json()["id"]
        r = c.post(f"/runs/{run}/outputs", json=_outputs("v0"))
        assert r.status_code == 200, r.text
        raters = [{"name": f"rater-{i}"} for i in range(N_CLIENTS)]
        assert c.post("/raters", json=raters).status_code == 200
        return int(run)


def _outputs(tag: str) -> list[dict[str, Any]]:
    return [
        {
            "question_id": f"q{i}",
            "answer": f"Réponse {tag} à la question {i}.",
            "retrieved": [{"document_id": "d1", "start": 10 * i, "end": 10 * i + 40}],
        }
        for i in range(N_QUESTIONS)
    ]


def _ratings_csv(rater: str, score: int) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["question_id", "rater", "score"])
    for i in range(N_QUESTIONS):
        w.writerow([f"q{i}", rater, 1 + (score + i) % 5])
    return buf.getvalue().encode()


async def _post_all(live: Live, requests: list[tuple[str, dict[str, Any]]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=live.url, headers=live.headers, timeout=HANG_GUARD_S) as c:
        return await asyncio.gather(*(c.post(path, **kw) for path, kw in requests))


def _ratings(live: Live, run: int) -> list[dict[str, Any]]:
    r = httpx.get(f"{live.url}/runs/{run}/ratings?limit=1000", headers=live.headers, timeout=HANG_GUARD_S)
    assert r.status_code == 200, r.text
    return list(r.json())


def test_eight_rating_batches_into_one_run_each_row_once(live_server: Live) -> None:
    run = _seed(live_server)
    batches = [
        (
            f"/runs/{run}/ratings",
            {"content": _ratings_csv(f"rater-{i}", i), "headers": {"content-type": "text/csv"}},
        )
        for i in range(N_CLIENTS)
    ]
    answers = asyncio.run(_post_all(live_server, batches))
    assert [r.status_code for r in answers] == [200] * N_CLIENTS, [r.text for r in answers]
    stored = _ratings(live_server, run)
    keys = [(r["question_id"], r["rater"]) for r in stored]
    assert len(keys) == N_CLIENTS * N_QUESTIONS == len(set(keys))
    for r in stored:
        i, q = int(r["rater"].split("-")[1]), int(r["question_id"][1:])
        assert r["score"] == 1 + (i + q) % 5


def test_eight_identical_rating_batches_race_on_the_same_rows(live_server: Live) -> None:
    run = _seed(live_server)
    batches = [
        (
            f"/runs/{run}/ratings",
            {"content": _ratings_csv("rater-0", i), "headers": {"content-type": "text/csv"}},
        )
        for i in range(N_CLIENTS)
    ]
    answers = asyncio.run(_post_all(live_server, batches))
    assert [r.status_code for r in answers] == [200] * N_CLIENTS, [r.text for r in answers]
    stored = _ratings(live_server, run)
    assert len(stored) == N_QUESTIONS == len({r["question_id"] for r in stored})
    # Whichever batch committed last wrote every row: one batch's scores, never a mix of two.
    winners = {(int(r["score"]) - 1 - int(r["question_id"][1:])) % 5 for r in stored}
    assert len(winners) == 1


def test_eight_output_batches_of_the_same_run(live_server: Live) -> None:
    run = _seed(live_server)
    batches = [(f"/runs/{run}/outputs", {"json": _outputs(f"v{i + 1}")}) for i in range(N_CLIENTS)]
    answers = asyncio.run(_post_all(live_server, batches))
    assert [r.status_code for r in answers] == [200] * N_CLIENTS, [r.text for r in answers]
    outputs = httpx.get(
        f"{live_server.url}/runs/{run}/outputs", headers=live_server.headers, timeout=HANG_GUARD_S
    ).json()
    assert len(outputs) == N_QUESTIONS == len({o["question_id"] for o in outputs})
    tags = {o["answer"].split()[1] for o in outputs}
    assert len(tags) == 1  # one batch's answers, whole
    assert all([c["rank"] for c in o["retrieved"]] == [1] for o in outputs)


@pytest.mark.parametrize("writers", [N_CLIENTS])
def test_mixed_writers_and_health_stay_answered(live_server: Live, writers: int) -> None:
    run = _seed(live_server)

    def requests(client: httpx.AsyncClient) -> list[Awaitable[httpx.Response]]:
        jobs: list[Awaitable[httpx.Response]] = []
        for i in range(writers):
            jobs.append(
                client.post(
                    f"/runs/{run}/ratings",
                    content=_ratings_csv(f"rater-{i}", i),
                    headers={"content-type": "text/csv"},
                )
            )
            jobs.append(client.post(f"/runs/{run}/outputs", json=_outputs(f"m{i}")))
            jobs.append(client.get(f"/runs/{run}/report"))
        return jobs

    answers, probes = concurrently(live_server.url, live_server.headers, HANG_GUARD_S, requests)
    assert all(r.status_code == 200 for r in answers), [(r.request.url.path, r.text[:200]) for r in answers]
    assert probes and all(p.status_code == 200 for p in probes)
    # Outputs changed under the ratings: whatever ratings remain are on current answers, the others are in
    # history and the report counts them.
    report = httpx.get(
        f"{live_server.url}/runs/{run}/report", headers=live_server.headers, timeout=HANG_GUARD_S
    ).json()
    stored = _ratings(live_server, run)
    assert len({(r["question_id"], r["rater"]) for r in stored}) == len(stored)
    retired = [n for n in report["notes"] if "previous answer" in n]
    assert len(stored) == writers * N_QUESTIONS or retired


def test_reports_in_worker_processes_equal_reports_in_threads(live_server: Live, settings: Any) -> None:
    from app.main import create_app
    from tests.conftest import admin_client

    run = _seed(live_server)  # the served app computes reports in its threads (report_processes=0)
    threads = httpx.get(
        f"{live_server.url}/runs/{run}/report", headers=live_server.headers, timeout=HANG_GUARD_S
    )
    in_processes = settings.model_copy(update={"report_processes": 1})
    with admin_client(create_app(in_processes)) as c:
        # Started with the app and warming up before any report asks for it.
        started = c.app.state.resources.report_pool._executor  # type: ignore[attr-defined]
        assert started is not None and len(started._processes) == 1
        assert c.app.state.resources.report_pool.wait_warm(HANG_GUARD_S)
        processes = c.get(f"/runs/{run}/report")
        missing = c.get("/runs/999999/report")
        assert c.app.state.resources.report_pool._executor is not None  # type: ignore[attr-defined]
    assert processes.status_code == threads.status_code == 200
    # Equal but for when each was computed (``freshness``: the time each read its data).
    by_processes, by_threads = processes.json(), threads.json()
    assert by_processes.pop("freshness")["stale"] is by_threads.pop("freshness")["stale"] is False
    assert by_processes == by_threads
    # A NotFound raised in the worker process keeps its status and envelope.
    assert missing.status_code == 404 and missing.json()["error"] == "NotFound"
