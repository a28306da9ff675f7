"""Twenty raters working one active rating task at once on a served app (uvicorn on loopback, real
threadpool), on SQLite and on PostgreSQL: every request answered (no 5xx), no output served to or rated by
more raters than the task asks, every served item carrying the inclusion probability its draw recorded, and
the policy's refits recorded (run after the ratings' responses). Bounded: 40 outputs, 20 raters, a budget
of 16 outputs with 2 raters each. The timeouts only keep a deadlock from hanging the suite; nothing is
timed."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.accounts.repository import AccountRepository
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


async def _cycle(url: str, key: str, task: int) -> list[httpx.Response]:
    """One rater's single turn: the next item, opened and rated (or nothing left for them)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=HANG_GUARD_S) as c:
        r = await c.post(f"/tasks/{task}/next")
        if r.status_code != 200 or r.json()["position"] is None:
            return [r]
        pos = r.json()["position"]
        item = await c.get(f"/tasks/{task}/queue/{pos}")
        return [r, item, await c.put(f"/tasks/{task}/queue/{pos}", json={"action": "rate", "score": 3})]


async def _late_rating(url: str, key: str, task: int, position: int) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=HANG_GUARD_S) as c:
        return [await c.put(f"/tasks/{task}/queue/{position}", json={"action": "rate", "score": 5})]


def test_two_raters_race_for_a_released_slot(live_server: Live, engine: Engine) -> None:
    """Rounds of: a rater opens an item and leaves it past the lease; then two raters ask for the next item
    at once while the one who left comes back and rates the item she left. Whoever wins, the output is rated
    once (one rater per output asked), every answer is a 200 or a 409 naming the position, and the released
    item keeps its draw's probability. In the last round the rater who left does not come back: the two
    raters race for her released slot and one of them gets it. Bounded: 4 rounds, 6 raters, 40 outputs."""
    run = _seed(live_server)
    with httpx.Client(base_url=live_server.url, headers=live_server.headers, timeout=HANG_GUARD_S) as api:
        scores = [
            {"question_id": f"q{i}", "metric": "external.m", "value": i / 40} for i in range(N_QUESTIONS)
        ]
        assert api.post(f"/runs/{run}/scores", json=scores).status_code == 200
    leavers = [f"leaver-{k}" for k in range(4)]  # the last one never comes back
    racers = ["racer-a", "racer-b"]
    body = {
        "name": "lease-race",
        "run_id": run,
        "seed": 5,
        "policy": "active",
        "active": {"metric": "external.m", "budget": 20, "refit_every": 50, "lease_minutes": 30},
    }
    task, keys = rater_task(live_server, leavers + racers, body, HANG_GUARD_S)
    answers: list[httpx.Response] = []
    for leaver in leavers:
        with httpx.Client(
            base_url=live_server.url,
            headers={"Authorization": f"Bearer {keys[leaver]}"},
            timeout=HANG_GUARD_S,
        ) as c:
            r = c.post(f"/tasks/{task}/next")
            assert r.status_code == 200 and r.json()["position"] is not None, r.text
            position = r.json()["position"]
        with Session(engine) as s, s.begin():
            for it in s.scalars(
                select(TaskItem).where(TaskItem.task_id == task, TaskItem.status == "pending")
            ):
                assert it.served_at is not None
                it.served_at = it.served_at - timedelta(minutes=31)  # left past the lease

        async def race(who: str = leaver, pos: int = position) -> list[list[httpx.Response]]:
            late = [_late_rating(live_server.url, keys[who], task, pos)] if who != leavers[-1] else []
            return await asyncio.gather(*late, *(_cycle(live_server.url, keys[n], task) for n in racers))

        answers += [r for per in asyncio.run(race()) for r in per]
    assert not [r for r in answers if r.status_code >= 500], [r.text for r in answers if r.status_code >= 500]
    refused = [r for r in answers if r.status_code != 200]
    assert all(r.status_code == 409 and r.json()["items"][0]["field"] == "position" for r in refused), [
        r.text for r in refused
    ]
    with Session(engine) as s:
        draws = {d.id: d for d in s.scalars(select(TaskDraw).where(TaskDraw.task_id == task))}
        items = s.scalars(select(TaskItem).where(TaskItem.task_id == task)).all()
        users = AccountRepository(s).users_by_name(leavers)
    holding: dict[int, int] = {}
    rated: dict[int, int] = {}
    for i in items:
        assert i.draw_id is not None and i.inclusion_probability == draws[i.draw_id].pi
        holding[i.draw_id] = holding.get(i.draw_id, 0) + (i.status in ("pending", "rated"))
        rated[i.draw_id] = rated.get(i.draw_id, 0) + (i.status == "rated")
        assert i.status != "released" or i.released_at is not None
    assert max(rated.values()) == 1 and max(holding.values()) == 1, (rated, holding)
    # Each leaver's item was rated by her (she came back first) or released and rated by a racer; the last
    # leaver's was released, and exactly one racer got its output.
    left = {users[n].id: n for n in leavers}
    for i in items:
        if i.user_id in left:
            assert i.status in ("rated", "released")
            if i.status == "released":
                assert rated[i.draw_id] == 1
    last = next(i for i in items if left.get(i.user_id) == leavers[-1])
    assert last.status == "released"
    assert [i.status for i in items if i.draw_id == last.draw_id and i.id != last.id] == ["rated"]
