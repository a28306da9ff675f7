"""A rater rates in a real browser: Debian's chromium driven by Playwright, with the network blocked.

Alice signs in, rates five outputs with the keyboard, goes back and changes one, flags one; the stored
ratings, their rater and timestamps are then read through the API; Bob's queue has its own order.
Screenshots of the queue, a rating page and the dashboard go to $RAGMETA_SCREENSHOT_DIR when it is set.

This test is never skipped: without /usr/bin/chromium it fails (CI installs Debian's chromium package).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, Route, sync_playwright

from app.main import create_app
from app.settings import Settings
from tests.browser.conftest import CHROMIUM
from tests.browser.conftest import FLAGS as BROWSER_FLAGS
from tests.browser.study import make_study
from tests.conftest import issue_key
from tests.live import serve

FLAGS = [
    *BROWSER_FLAGS,
    # Names other than 127.0.0.1 do not resolve: nothing can leave the machine even if a page asked.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
N = 8


@pytest.fixture
def shots(tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "screenshots"
    out.mkdir()
    yield out
    keep = os.environ.get("RAGMETA_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for f in out.iterdir():
            shutil.copy(f, Path(keep) / f.name)


def _context(p: Any, base: str, profile: Path, blocked: list[str]) -> BrowserContext:
    ctx: BrowserContext = p.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        args=FLAGS,
        headless=True,
        viewport={"width": 1200, "height": 900},
    )

    def guard(route: Route) -> None:
        if route.request.url.startswith(base):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    return ctx


def _sign_in(page: Page, base: str, name: str, key: str, then: str) -> None:
    page.goto(f"{base}{then}")
    assert "/login" in page.url
    page.fill('input[name="name"]', name)
    page.fill('input[name="key"]', key)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{base}{then}", page.url


def _queue_order(page: Page) -> list[str]:
    return [t.strip() for t in page.locator("table.queue tbody tr td:nth-child(2)").all_inner_texts()]


def test_rater_rates_with_the_keyboard_in_chromium(
    settings: Settings, engine: Any, tmp_path: Path, shots: Path
) -> None:
    assert CHROMIUM.exists(), "Debian's chromium is required (apt-get install chromium); .ci/run installs it"
    app = create_app(settings)
    admin, alice, bob, edith = (
        issue_key(app, "admin"),
        issue_key(app, "alice", "rater"),
        issue_key(app, "bob", "rater"),
        issue_key(app, "edith", "editor"),
    )
    blocked: list[str] = []
    started = datetime.now(UTC)
    with serve(app) as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"}) as api:
        run, task = make_study(api, N, ["alice", "bob"], show_reference=True)
        with sync_playwright() as p:
            ctx = _context(p, base, tmp_path / "alice-profile", blocked)
            page = ctx.new_page()
            _sign_in(page, base, "alice", alice, "/rate")
            assert "Étude v1" in page.content()
            page.click("text=Étude v1")
            order_alice = _queue_order(page)
            page.click("text=Start rating")
            assert page.url.endswith(f"/rate/{task}/1")
            assert page.locator("details.contexts").count() == 1
            assert not page.locator("details.contexts").get_attribute("open")  # collapsed until asked
            page.screenshot(path=str(shots / "rating-page.png"), full_page=True)
            # five ratings with the number keys; each key saves and moves on
            scores = [4, 2, 5, 3, 1]
            for position, score in enumerate(scores, start=1):
                assert page.url.endswith(f"/rate/{task}/{position}")
                assert f"Item {position} of {N}" in page.inner_text(".itemhead")
                with page.expect_navigation():
                    page.keyboard.press(str(score))
            assert page.url.endswith(f"/rate/{task}/6")
            # back twice (B) to the fourth one and change it from 3 to 5
            for expected in (5, 4):
                with page.expect_navigation():
                    page.keyboard.press("b")
                assert page.url.endswith(f"/rate/{task}/{expected}")
            assert page.locator('input[name="score"][value="3"]').is_checked()
            with page.expect_navigation():
                page.keyboard.press("5")
            assert page.url.endswith(f"/rate/{task}/6")
            # flag the sixth as unratable (F opens the box and focuses the reason)
            page.keyboard.press("f")
            page.keyboard.type("La réponse est coupée")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert page.url.endswith(f"/rate/{task}/7")
            page.goto(f"{base}/rate/{task}")
            statuses = page.locator("table.queue tbody .status").all_inner_texts()
            assert statuses == ["rated"] * 5 + ["flagged", "pending", "pending"]
            assert "6 of 8 done" in page.inner_text(".progress")
            page.screenshot(path=str(shots / "queue-page.png"), full_page=True)
            ctx.close()

            # Bob: his own order
            ctx = _context(p, base, tmp_path / "bob-profile", blocked)
            page = ctx.new_page()
            _sign_in(page, base, "bob", bob, f"/rate/{task}")
            order_bob = _queue_order(page)
            assert sorted(order_bob) == sorted(order_alice) and order_bob != order_alice
            ctx.close()

            # Bob rates through the API so that the dashboard has agreement to show
            bob_api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {bob}"})
            for e in bob_api.get(f"/tasks/{task}/queue").json()["entries"][:6]:
                r = bob_api.put(
                    f"/tasks/{task}/queue/{e['position']}",
                    json={"action": "rate", "score": 1 + len(e["question_id"]) % 5},
                )
                assert r.status_code == 200
            bob_api.close()

            ctx = _context(p, base, tmp_path / "edith-profile", blocked)
            page = ctx.new_page()
            _sign_in(page, base, "edith", edith, f"/tasks/{task}/dashboard.html")
            assert "Agreement so far" in page.content() and "alice" in page.content()
            page.screenshot(path=str(shots / "dashboard.png"), full_page=True)
            ctx.close()

        # what was stored, read through the API
        alice_queue = httpx.get(
            f"{base}/tasks/{task}/queue", headers={"Authorization": f"Bearer {alice}"}
        ).json()
        qid = {e["position"]: e["question_id"] for e in alice_queue["entries"]}
        stored = {
            r["question_id"]: r for r in api.get(f"/runs/{run}/ratings").json() if r["rater"] == "alice"
        }
    finished = datetime.now(UTC)
    assert {q: r["score"] for q, r in stored.items()} == {
        qid[1]: 4,
        qid[2]: 2,
        qid[3]: 5,
        qid[4]: 5,
        qid[5]: 1,
    }

    def at(q: str, field: str) -> datetime:
        t = datetime.fromisoformat(stored[q][field].replace("Z", "+00:00"))
        return t if t.tzinfo else t.replace(tzinfo=UTC)

    for pos in range(1, 6):
        assert started <= at(qid[pos], "created_at") <= at(qid[pos], "updated_at") <= finished
    # created in queue order; only the fourth was changed, after the fifth was created
    assert [at(qid[p], "created_at") for p in range(1, 6)] == sorted(
        at(qid[p], "created_at") for p in range(1, 6)
    )
    assert at(qid[4], "updated_at") > at(qid[5], "created_at")
    for pos in (1, 2, 3):
        assert at(qid[pos], "updated_at") < at(qid[pos + 1], "created_at")
    assert alice_queue["entries"][5]["status"] == "flagged"
    assert alice_queue["entries"][5]["flag_reason"] == "La réponse est coupée"
    assert qid[6] not in stored
    assert not blocked, f"requests leaving the loopback server were blocked: {blocked[:5]}"
    assert {f.name for f in shots.iterdir()} == {"queue-page.png", "rating-page.png", "dashboard.png"}
