"""A genuine overload on SQLite: another process holds the database's write lock for longer than the service
waits for it (``database_wait_s``, 1 s here), while 24 submits arrive at once on a served app. Each must
answer 503 with Retry-After naming the lock, and store nothing; once the lock is released, the same submits
are each stored exactly once. PostgreSQL waits for row locks without a timeout (a writer queues until the
holder commits), so this overload has no PostgreSQL counterpart; its pool timeout maps to 503 the same way
(tests/api/test_database_busy.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.main import create_app
from app.settings import Settings
from services.models import Rating, TaskItem, User
from tests.conftest import Live, issue_key
from tests.integration.test_concurrency import HANG_GUARD_S, _seed
from tests.live import Served, rater_task

N_RATERS, PER_RATER = 8, 3


@pytest.fixture
def impatient(settings: Settings, engine: Engine) -> Iterator[Live]:
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's write lock held by another process; see the module docstring")
    settings.database_wait_s = 1.0
    app = create_app(settings)
    headers = {"Authorization": f"Bearer {issue_key(app, 'live-admin')}"}
    served = Served(app).start()
    try:
        yield Live(served.url, headers)
    finally:
        served.stop()


def _submit_all(live: Live, task: int, keys: dict[str, str]) -> list[tuple[str, int, httpx.Response]]:
    async def burst() -> list[tuple[str, int, httpx.Response]]:
        async with httpx.AsyncClient(base_url=live.url, timeout=HANG_GUARD_S) as c:

            async def submit(name: str, position: int) -> tuple[str, int, httpx.Response]:
                r = await c.put(
                    f"/tasks/{task}/queue/{position}",
                    json={"action": "rate", "score": 1 + position % 5},
                    headers={"Authorization": f"Bearer {keys[name]}"},
                )
                return name, position, r

            return list(await asyncio.gather(*(submit(n, p) for n in keys for p in range(1, PER_RATER + 1))))

    return asyncio.run(burst())


def _rated(engine: Engine, task: int) -> tuple[int, list[str]]:
    with Session(engine) as s:
        statuses = list(
            s.scalars(
                select(TaskItem.status)
                .join(User, User.id == TaskItem.user_id)
                .where(TaskItem.task_id == task)
            )
        )
        return len(list(s.scalars(select(Rating.id)))), statuses


def test_submits_refused_while_the_write_lock_is_held_store_nothing(impatient: Live, engine: Engine) -> None:
    run = _seed(impatient)
    names = [f"held-{i}" for i in range(N_RATERS)]
    body = {"name": "held", "run_id": run, "per_output": 1, "seed": 3}
    task, keys = rater_task(impatient, names, body, HANG_GUARD_S)

    holder = sqlite3.connect(engine.url.database or "", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as a long write by another process holds it
        refused = _submit_all(impatient, task, keys)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [r.status_code for _, _, r in refused] == [503] * len(refused), [r.text for _, _, r in refused]
    for _, _, r in refused:
        assert r.headers["Retry-After"].isdigit()
        assert "database is locked" in r.json()["detail"] and "nothing was written" in r.json()["detail"]
    ratings, statuses = _rated(engine, task)
    assert ratings == 0 and "rated" not in statuses

    accepted = _submit_all(impatient, task, keys)
    assert [r.status_code for _, _, r in accepted] == [200] * len(accepted), [r.text for _, _, r in accepted]
    ratings, statuses = _rated(engine, task)
    assert ratings == len(accepted) == N_RATERS * PER_RATER
    assert statuses.count("rated") == len(accepted)
