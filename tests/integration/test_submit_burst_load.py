"""A burst of rating submissions (PUT /tasks/{id}/queue/{position}) all at once on a served app (uvicorn on
loopback, real threadpool and connection pool), on SQLite and on PostgreSQL: 16 raters, 6 items each, the 96
submits sent together, each rater's first request in the burst (so credential look-ups race the writes).

More requests than the threadpool has threads and the pool has connections: before requests waited for a
database slot on the loop (app.deps.DbSlots), every thread ended up waiting for a connection or for SQLite's
write lock held by a request that needed a thread to commit, and most answers were 500s after the pool's 30 s
timeout. Every answer must be 200 or 503 (an overload, with Retry-After); every 200 stored exactly once
with its score, every 503 not at all. The timeouts only keep a deadlock from hanging the suite; nothing is
timed."""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from services.models import Rater, Rating, TaskItem, User
from tests.conftest import Live
from tests.integration.test_concurrency import HANG_GUARD_S, _seed
from tests.live import rater_task

N_RATERS = 16
PER_RATER = 6  # 16 x 6 = 96 items, over the 40 questions


def _score(name: str, position: int) -> int:
    return 1 + (int(name.split("-")[1]) + position) % 5


def test_ninety_six_submits_at_once_are_each_stored_once_or_refused(
    live_server: Live, engine: Engine
) -> None:
    run = _seed(live_server)
    names = [f"burst-{i}" for i in range(N_RATERS)]
    # 40 outputs, 16 raters: per_output=3 gives 120 items, 7 or 8 per rater; each submits its first 6.
    body = {"name": "burst", "run_id": run, "per_output": 3, "seed": 5}
    task, keys = rater_task(live_server, names, body, HANG_GUARD_S)

    async def burst() -> list[tuple[str, int, httpx.Response]]:
        async with httpx.AsyncClient(base_url=live_server.url, timeout=HANG_GUARD_S) as c:

            async def submit(name: str, position: int) -> tuple[str, int, httpx.Response]:
                r = await c.put(
                    f"/tasks/{task}/queue/{position}",
                    json={"action": "rate", "score": _score(name, position)},
                    headers={"Authorization": f"Bearer {keys[name]}"},
                )
                return name, position, r

            jobs = [submit(n, p) for n in names for p in range(1, PER_RATER + 1)]
            return list(await asyncio.gather(*jobs))

    answers = asyncio.run(burst())
    assert len(answers) == N_RATERS * PER_RATER
    codes = [r.status_code for _, _, r in answers]
    assert set(codes) <= {200, 503}, [r.text[:200] for _, _, r in answers if r.status_code not in (200, 503)]
    for _, _, r in answers:
        if r.status_code == 503:
            assert r.headers["Retry-After"].isdigit() and r.json()["error"] == "DatabaseBusy", r.text
    accepted = {(n, p) for n, p, r in answers if r.status_code == 200}

    with Session(engine) as s:
        items = {
            (name, pos): (output, status)
            for name, pos, output, status in s.execute(
                select(User.name, TaskItem.position, TaskItem.output_id, TaskItem.status)
                .join(User, User.id == TaskItem.user_id)
                .where(TaskItem.task_id == task)
            )
        }
        ratings = list(
            s.execute(
                select(Rater.name, Rating.output_id, Rating.score, func.count())
                .join(Rater, Rater.id == Rating.rater_id)
                .group_by(Rater.name, Rating.output_id, Rating.score)
            )
        )
    stored = {(name, output): (score, count) for name, output, score, count in ratings}
    expected = {(n, items[(n, p)][0]): (_score(n, p), 1) for n, p in accepted}
    assert stored == expected  # each accepted submit once, with its score; nothing of a refused one
    for (name, pos), (_, status) in items.items():
        assert status == ("rated" if (name, pos) in accepted else "pending"), (name, pos)
