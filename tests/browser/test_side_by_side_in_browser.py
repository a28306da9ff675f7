"""Side by side in a real browser (Debian's chromium driven by Playwright, network blocked): the page carries
the versions of the two answers it shows, so a preference given while one of them is re-imported is recorded
on the text the rater read, and the pairwise report counts it stale; the next item, unchanged, is current.

Never skipped: without /usr/bin/chromium it fails (CI installs Debian's chromium package)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.main import create_app
from app.settings import Settings
from services.models import TaskItem
from tests.browser.conftest import CHROMIUM
from tests.browser.study import make_study
from tests.browser.test_rating_in_browser import _context, _sign_in
from tests.conftest import issue_key
from tests.live import serve

N = 3


def _answers(prefix: str, changed: str | None = None) -> list[dict[str, Any]]:
    return [
        {
            "question_id": f"q{i}",
            "answer": "Réponse corrigée après ouverture." if f"q{i}" == changed else f"{prefix} {i}.",
            "retrieved": [{"text": f"La règle {i} s'applique aux clients du forfait {i}."}],
        }
        for i in range(N)
    ]


def test_a_preference_is_recorded_on_the_answers_the_page_showed(
    settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    assert CHROMIUM.exists(), "Debian's chromium is required (apt-get install chromium); .ci/run installs it"
    app = create_app(settings)
    admin, alice = issue_key(app, "admin"), issue_key(app, "alice", "rater")
    blocked: list[str] = []
    with serve(app) as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"}) as api:
        run_a, _ = make_study(api, N, ["alice"])
        ds = api.get(f"/runs/{run_a}").json()["dataset_id"]
        run_b = api.post(f"/datasets/{ds}/runs", json={"name": "v2"}).json()["id"]
        assert api.post(f"/runs/{run_b}/outputs", json=_answers("Version B")).status_code == 200
        for run in (run_a, run_b):
            rows = [{"question_id": f"q{i}", "metric": "external.m", "value": i / N} for i in range(N)]
            assert api.post(f"/runs/{run}/scores", json=rows).status_code == 200
        body = {"name": "Côte à côte", "mode": "pairwise", "run_id": run_a, "run_b_id": run_b, "seed": 3}
        r = api.post("/tasks", json={**body, "raters": ["alice"]})
        assert r.status_code == 201, r.text
        task = r.json()["id"]
        queue = httpx.get(f"{base}/tasks/{task}/queue", headers={"Authorization": f"Bearer {alice}"}).json()
        first = queue["entries"][0]["question_id"]

        with sync_playwright() as p:
            ctx = _context(p, base, tmp_path / "alice-profile", blocked)
            page = ctx.new_page()
            script_errors: list[str] = []
            page.on("pageerror", lambda exc: script_errors.append(str(exc)))
            _sign_in(page, base, "alice", alice, f"/rate/{task}/1")
            shown = page.locator("section.answer > p.text").all_inner_texts()
            assert len(shown) == 2 and not any("corrigée" in t for t in shown)
            # run B's answer to this question is re-imported while the page is open
            assert api.post(f"/runs/{run_b}/outputs", json=_answers("Version B", first)).status_code == 200
            with page.expect_navigation():
                page.keyboard.press("2")
            # Saved on what alice read; the same item comes back, says so, and shows the answer as it is now.
            assert page.url.endswith(f"/rate/{task}/1")
            notice = page.locator("[role=status]").inner_text()
            assert "An answer changed while this page was open" in notice
            assert any("corrigée" in t for t in page.locator("section.answer > p.text").all_inner_texts())
            page.screenshot(path=str(tmp_path / "stale-notice.png"), full_page=True)
            with page.expect_navigation():
                page.keyboard.press("2")
            assert page.url.endswith(f"/rate/{task}/2")
            assert not any("corrigée" in t for t in page.locator("section.answer > p.text").all_inner_texts())
            with page.expect_navigation():
                page.keyboard.press("4")
            assert page.url.endswith(f"/rate/{task}/3")
            assert not script_errors, script_errors
            ctx.close()

        read = api.get("/reports/pairwise", params={"run_a": run_a, "run_b": run_b, "n_resamples": 200})
        assert read.status_code == 200, read.text
    with Session(engine) as s:
        items = {i.position: i for i in s.scalars(select(TaskItem).where(TaskItem.task_id == task))}
    # Rated again on the page that showed the new answer: the preference is on run B's version 2.
    assert (items[1].status, items[1].output_version, items[1].output_b_version) == ("rated", 1, 2)
    assert (items[2].status, items[2].output_version, items[2].output_b_version) == ("rated", 1, 1)
    assert items[3].status == "pending"
    assert read.json()["preferences"] == {"side_by_side": 2, "imported": 0, "stale": 0}
    assert not blocked, f"requests leaving the loopback server were blocked: {blocked[:5]}"
