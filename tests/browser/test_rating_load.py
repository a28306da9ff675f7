"""Many raters at once on a real server (loopback, bounded): sign-ins, ratings through the pages and the API,
key issuing and task creation all concurrent; every write lands once, under its own rater. No timing is
asserted (bench/ratings_load.py measures)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from tests.browser.study import make_study
from tests.conftest import issue_key
from tests.live import serve

RATERS = 12
ITEMS = 10


def sign_in(base: str, name: str, key: str) -> httpx.Client:
    c = httpx.Client(base_url=base, timeout=60)
    page = c.get("/login")
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    wrong = c.post("/login", data={"name": name, "key": key + "x", "csrf": csrf})
    assert wrong.status_code == 401  # a failed sign-in is a write too (the rate limit's record)
    r = c.post("/login", data={"name": name, "key": key, "csrf": csrf})
    assert r.status_code == 303, r.text
    return c


def rate_queue(base: str, name: str, key: str, task: int, via_pages: bool) -> list[int]:
    statuses = []
    c = sign_in(base, name, key)
    try:
        if via_pages:
            page = c.get(f"/rate/{task}/1").text
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            for pos in range(1, ITEMS + 1):
                r = c.post(
                    f"/rate/{task}/{pos}", data={"csrf": csrf, "action": "rate", "score": str(1 + pos % 5)}
                )
                statuses.append(r.status_code)
        else:
            token = c.get("/me").json()["csrf_token"]
            for pos in range(1, ITEMS + 1):
                r = c.put(
                    f"/tasks/{task}/queue/{pos}",
                    json={"action": "rate", "score": 1 + pos % 5, "comment": f"{name} {pos}"},
                    headers={"X-CSRF-Token": token},
                )
                statuses.append(r.status_code)
    finally:
        c.close()
    return statuses


def test_many_raters_at_once(settings: Settings, engine: Any) -> None:
    app = create_app(settings)
    admin = issue_key(app, "admin")
    names = [f"rater{i:02d}" for i in range(RATERS)]
    with (
        serve(app) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"}, timeout=60) as api,
    ):
        with ThreadPoolExecutor(8) as pool:  # keys issued concurrently (accounts created on the way)
            issued = list(
                pool.map(lambda n: api.post("/keys", json={"name": n, "role": "rater"}).json()["key"], names)
            )
        run, task = make_study(api, ITEMS, names)
        with ThreadPoolExecutor(RATERS) as pool:
            ratings = pool.map(
                lambda i: rate_queue(base, names[i], issued[i], task, via_pages=i % 2 == 0), range(RATERS)
            )
            extra_tasks = [
                pool.submit(
                    api.post, "/tasks", json={"name": f"extra {i}", "run_id": run, "raters": names[:3]}
                )
                for i in range(4)
            ]
            statuses = [s for per_rater in ratings for s in per_rater]
            created = [f.result().status_code for f in extra_tasks]
        assert created == [201] * 4
        assert statuses.count(303) == RATERS // 2 * ITEMS and statuses.count(200) == RATERS // 2 * ITEMS
        stored = api.get(f"/runs/{run}/ratings", params={"limit": 1000}).json()
        dashboard = api.get(f"/tasks/{task}/dashboard").json()
        keys = api.get("/keys").json()
    assert len(stored) == RATERS * ITEMS
    by_rater: dict[str, int] = {}
    for r in stored:
        by_rater[r["rater"]] = by_rater.get(r["rater"], 0) + 1
        # pages send no comment; API raters wrote their own name into theirs: no rating landed under another
        via_pages = names.index(r["rater"]) % 2 == 0
        assert r["comment"] is None if via_pages else r["comment"].split()[0] == r["rater"]
    assert by_rater == dict.fromkeys(names, ITEMS)
    assert all((x["rated"], x["pending"]) == (ITEMS, 0) for x in dashboard["task"]["raters"])
    assert len({k["prefix"] for k in keys}) == RATERS + 1
