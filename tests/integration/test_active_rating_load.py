"""Twenty raters working one active rating task at once on a served app (uvicorn on loopback, real
threadpool), on SQLite and on PostgreSQL: every request answered (no 5xx), no output served to or rated by
more raters than the task asks, every served item carrying the inclusion probability its draw recorded, and
the policy's refits recorded (run after the ratings' responses). Bounded: 40 outputs, 20 raters, a budget
of 16 outputs with 2 raters each. The timeouts only keep a deadlock from hanging the suite; nothing is
timed."""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.models import TaskDraw, TaskFit, TaskItem
from tests.conftest import Live
from tests.integration.test_concurrency import HANG_GUARD_S, N_QUESTIONS, _seed
from tests.live import rater_task

N_RATERS = 20
PER_OUTPUT = 2


async def _work(url: str, key: str, task: int) -> list[httpx.Response]:
    """One rater: ask for the next item, open it, rate it, until nothing is left for them."""
    answers: list[httpx.Response] = []
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=HANG_GUARD_S) as c:
        for _ in range(N_QUESTIONS + 1):
            r = await c.post(f"/tasks/{task}/next")
            answers.append(r)
            if r.status_code != 200 or r.json()["position"] is None:
                return answers
            pos = r.json()["position"]
            item = await c.get(f"/tasks/{task}/queue/{pos}")
            answers.append(item)
            if item.status_code != 200:
                return answers
            score = 1 + int(item.json()["question_id"][1:]) % 5
            answers.append(await c.put(f"/tasks/{task}/queue/{pos}", json={"action": "rate", "score": score}))
    return answers


def test_twenty_raters_on_one_active_task(live_server: Live, engine: Engine) -> None:
    run = _seed(live_server)
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as api:
        scores = [
            {"question_id": f"q{i}", "metric": "external.m", "value": (i * 37 % 100) / 100}
            for i in range(N_QUESTIONS)
        ]
        assert api.post(f"/runs/{run}/scores", json=scores).status_code == 200
    names = [f"active-{i}" for i in range(N_RATERS)]
    body = {
        "name": "active-load",
        "run_id": run,
        "seed": 3,
        "per_output": PER_OUTPUT,
        "policy": "active",
        "active": {"metric": "external.m", "budget": 16, "refit_every": 5},
    }
    task, keys = rater_task(live_server, names, body, HANG_GUARD_S)

    async def everyone() -> list[list[httpx.Response]]:
        return await asyncio.gather(*(_work(live_server.url, keys[n], task) for n in names))

    answers = [r for per in asyncio.run(everyone()) for r in per]
    assert not [r for r in answers if r.status_code >= 500], [r.text for r in answers if r.status_code >= 500]
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers if r.status_code != 200]
    with Session(engine) as s:
        draws = s.scalars(select(TaskDraw).where(TaskDraw.task_id == task)).all()
        items = s.scalars(select(TaskItem).where(TaskItem.task_id == task)).all()
        fits = s.scalars(select(TaskFit).where(TaskFit.task_id == task)).all()
    pis = {d.id: d.pi for d in draws}
    assert len(draws) == N_QUESTIONS and all(p is not None and 0 < p <= 1 for p in pis.values())
    assert items and all(i.draw_id is not None and i.inclusion_probability == pis[i.draw_id] for i in items)
    per_draw: dict[int, list[TaskItem]] = {}
    for i in items:
        assert i.draw_id is not None
        per_draw.setdefault(i.draw_id, []).append(i)
    assert all(len(v) <= PER_OUTPUT and len({i.user_id for i in v}) == len(v) for v in per_draw.values())
    included = {d.id for d in draws if d.included}
    assert set(per_draw) == included
    # Every rater finished: each drawn output has its two raters, and all of them rated.
    assert all(len(v) == PER_OUTPUT for v in per_draw.values())
    assert all(i.status == "rated" for i in items)
    assert fits and fits[-1].n_ratings <= len(items)
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as api:
        est = api.get(f"/tasks/{task}/estimate").json()
    assert est["n_rated"] == len(included) and est["n_open"] == 0 and est["n_refits"] == len(fits)
