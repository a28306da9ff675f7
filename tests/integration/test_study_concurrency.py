"""Concurrent study imports on a served app (uvicorn, real threadpool), on SQLite and on PostgreSQL.

Every import is answered (no 5xx, no lock timeout), the dataset and its questions, documents and gold
passages exist once whatever the interleaving, and every run holds its own outputs exactly once. The
timeouts only keep a deadlock from hanging the suite; they are not performance assertions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import httpx

from tests import studydata
from tests.conftest import Live
from tests.live import concurrently

N_CLIENTS = 8
HANG_GUARD_S = 120.0


def _ragas_rows(tag: str) -> bytes:
    """The study as Ragas rows (JSON), with this client's answers."""
    rows = [
        {
            "user_input": it.question,
            "response": f"{it.answer} ({tag})",
            "reference": it.reference,
            "retrieved_contexts": it.contexts,
            "reference_contexts": [it.gold],
        }
        for it in studydata.items()
    ]
    return json.dumps(rows).encode()


def _import(run: str, dataset: str = "shop") -> tuple[str, dict[str, Any]]:
    files = {
        "file": ("ragas.json", _ragas_rows(run)),
        "corpus": ("corpus.jsonl", studydata.corpus_jsonl()),
    }
    return "/studies/import", {"files": files, "data": {"dataset": dataset, "run": run}}


async def _post_all(live: Live, requests: list[tuple[str, dict[str, Any]]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=live.url, headers=live.headers, timeout=HANG_GUARD_S) as c:
        return await asyncio.gather(*(c.post(path, **kw) for path, kw in requests))


def _get(live: Live, path: str) -> Any:
    r = httpx.get(
        f"{live.url}{path}", params={"include_text": True}, headers=live.headers, timeout=HANG_GUARD_S
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_eight_imports_into_one_new_dataset(live_server: Live) -> None:
    answers = asyncio.run(_post_all(live_server, [_import(f"run-{i}") for i in range(N_CLIENTS)]))
    assert [r.status_code for r in answers] == [201] * N_CLIENTS, [r.text for r in answers]
    bodies = [r.json() for r in answers]
    # one import created the dataset, the others added to it
    assert sorted(b["dataset"]["created"] for b in bodies) == [False] * (N_CLIENTS - 1) + [True]
    [dataset] = _get(live_server, "/datasets")
    assert {b["dataset"]["id"] for b in bodies} == {dataset["id"]}
    n = len(studydata.items())
    assert dataset["questions"] == n and dataset["documents"] == len(studydata.documents())
    questions = _get(live_server, f"/datasets/{dataset['id']}/questions")
    assert sorted(len(q["passages"]) for q in questions) == [1] * n
    runs = _get(live_server, f"/datasets/{dataset['id']}/runs")
    assert sorted(r["name"] for r in runs) == sorted(f"run-{i}" for i in range(N_CLIENTS))
    for body in bodies:
        outputs = _get(live_server, f"/runs/{body['run']['id']}/outputs")
        assert len(outputs) == n == len({o["question_id"] for o in outputs})
        # each run holds its own client's answers, whole
        assert {o["answer"].rsplit("(", 1)[1] for o in outputs} == {body["run"]["name"] + ")"}


def test_eight_imports_racing_for_one_run_name(live_server: Live) -> None:
    # the dataset exists: the race is on the run's name only
    first = asyncio.run(_post_all(live_server, [_import("seed")]))[0]
    assert first.status_code == 201, first.text
    answers = asyncio.run(_post_all(live_server, [_import("same")] * N_CLIENTS))
    codes = sorted(r.status_code for r in answers)
    assert codes == [201] + [409] * (N_CLIENTS - 1), [r.text for r in answers]
    [winner] = [r.json() for r in answers if r.status_code == 201]
    for r in answers:
        if r.status_code == 409:
            assert f"(id {winner['run']['id']})" in r.json()["detail"], r.text
    runs = _get(live_server, f"/datasets/{winner['dataset']['id']}/runs")
    assert sorted(r["name"] for r in runs) == ["same", "seed"]


def test_imports_ratings_and_health_stay_answered(live_server: Live) -> None:
    seed = asyncio.run(_post_all(live_server, [_import("seed")]))[0]
    assert seed.status_code == 201, seed.text
    run = seed.json()["run"]["id"]
    dataset = seed.json()["dataset"]["id"]
    by_text = {q["question"]: q["external_id"] for q in _get(live_server, f"/datasets/{dataset}/questions")}
    ids = {it.question_id: by_text[it.question] for it in studydata.items()}
    ratings = [{**r, "question_id": ids[r["question_id"]]} for r in studydata.ratings()]
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as c:
        assert c.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200

    def requests(client: httpx.AsyncClient) -> list[Awaitable[httpx.Response]]:
        jobs: list[Awaitable[httpx.Response]] = []
        for i in range(N_CLIENTS):
            path, kw = _import(f"mixed-{i}")
            jobs.append(client.post(path, **kw))
            jobs.append(client.post(f"/runs/{run}/ratings", json=ratings))
        return jobs

    answers, probes = concurrently(live_server.url, live_server.headers, HANG_GUARD_S, requests)
    assert all(r.status_code in (200, 201) for r in answers), [
        (r.request.url.path, r.text[:200]) for r in answers
    ]
    assert probes and all(p.status_code == 200 for p in probes)
    stored = _get(live_server, f"/runs/{run}/ratings")
    assert len(stored) == len(ratings) == len({(r["question_id"], r["rater"]) for r in stored})


def _import_with_preferences(i: int) -> tuple[str, dict[str, Any]]:
    """Two runs and the raters' preferences between them (raters new to the service: every import would
    register them)."""
    lines = ["question,rater,preference"]
    for n, it in enumerate(studydata.items()):
        lines += [f'"{it.question}",alice,{n % 5 - 2}', f'"{it.question}",bob,{(n + i) % 5 - 2}']
    files = [
        ("file", (f"a{i}.json", _ragas_rows(f"a{i}"))),
        ("file", (f"b{i}.json", _ragas_rows(f"b{i}"))),
        ("corpus", ("corpus.jsonl", studydata.corpus_jsonl())),
        ("preferences", ("prefs.csv", ("\n".join(lines) + "\n").encode())),
    ]
    return "/studies/import", {"files": files, "data": {"dataset": "shop"}}


def test_eight_imports_with_preferences_register_their_raters_once(live_server: Live) -> None:
    answers = asyncio.run(_post_all(live_server, [_import_with_preferences(i) for i in range(N_CLIENTS)]))
    assert [r.status_code for r in answers] == [201] * N_CLIENTS, [r.text[:300] for r in answers]
    n = len(studydata.items())
    assert sorted(r["name"] for r in _get(live_server, "/raters")) == ["alice", "bob"]
    created = sorted(len(r.json()["preferences"]["raters_created"]) for r in answers)
    assert sum(created) == 2, created
    for i, r in enumerate(answers):
        runs = {x["name"]: x["id"] for x in r.json()["runs"]}
        listed = httpx.get(
            f"{live_server.url}/preferences",
            params={"run_a": runs[f"a{i}"], "run_b": runs[f"b{i}"]},
            headers=live_server.headers,
            timeout=HANG_GUARD_S,
        )
        assert listed.status_code == 200, listed.text
        got = listed.json()
        assert len(got) == 2 * n
        assert sorted(p["preference"] for p in got if p["rater"] == "bob") == sorted(
            (k + i) % 5 - 2 for k in range(n)
        )
