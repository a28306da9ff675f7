"""In Chromium, with the network blocked: a signed-out browser opening a report lands on the login form and
comes back to the report; the landing page says who is signed in and signs out; no page asks for a missing
favicon; a task that cannot yield a report says so on its dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from app.main import create_app
from app.settings import Settings
from tests.browser.study import make_study
from tests.browser.test_rating_in_browser import _context
from tests.conftest import issue_key
from tests.live import serve


def _failures(page: Page) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


def test_sign_in_status_redirects_favicon_and_task_warnings(
    settings: Settings, engine: Any, tmp_path: Path
) -> None:
    app = create_app(settings)
    admin = issue_key(app, "admin")
    issue_key(app, "alice", "rater")
    issue_key(app, "bob", "rater")
    blocked: list[str] = []
    with serve(app) as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"}) as api:
        run, task = make_study(api, 4, ["alice", "bob"], per_output=1)
        with sync_playwright() as p:
            ctx = _context(p, base, tmp_path / "profile", blocked)
            page = ctx.new_page()
            failed = _failures(page)
            # signed out: the report page is the login form, then the report itself
            page.goto(f"{base}/runs/{run}/report.html?ci=fisher")
            assert "/login?next=" in page.url and page.locator('input[name="key"]').count() == 1
            page.fill('input[name="name"]', "admin")
            page.fill('input[name="key"]', admin)
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert page.url == f"{base}/runs/{run}/report.html?ci=fisher", page.url
            assert page.locator("h1").inner_text().startswith("Which metrics track your raters?")
            # the landing page: who is signed in, and a sign-out control that works
            page.goto(f"{base}/")
            who = page.locator("header.top .who")
            assert "admin" in who.inner_text() and "(admin)" in who.inner_text()
            assert page.locator("#datasets a", has_text="v1").count() == 1
            # the dashboard of a task giving each output one rater says it yields no report
            page.goto(f"{base}/tasks/{task}/dashboard.html")
            warning = page.locator("#task-warnings").inner_text()
            assert "per_output=1" in warning and "ratings.min_raters" in warning
            page.goto(f"{base}/")
            with page.expect_navigation():
                page.click("header.top button:has-text('Sign out')")
            assert page.url.endswith("/login")
            page.goto(f"{base}/runs/{run}/report.html")
            assert "/login?next=" in page.url
            # pages named their icon and got it: no 404 anywhere (favicon or otherwise)
            assert (
                page.evaluate("() => document.querySelector('link[rel=icon]').getAttribute('href')")
                == "/static/favicon.svg"
            )
            assert failed == [], failed
            ctx.close()
    assert blocked == [], blocked
