"""Every page works under the Content-Security-Policy the service sends: in Chromium, no page reports a
violation (an inline style or script the policy blocks), the progress bars still show progress and the
rating keys (app/static/rate.js) still save a rating."""

from __future__ import annotations

from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from tests.browser.study import make_study
from tests.conftest import issue_key
from tests.integration.test_reports import study
from tests.live import serve

# Installed before any script of the page runs: records what the policy blocked.
RECORD = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));
"""


def visit(b: Any, path: str) -> tuple[Any, list[str]]:
    page = b.context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script(RECORD)
    page.goto(b.base_url + path, wait_until="networkidle")
    return page, console


def violations(page: Any, console: list[str]) -> list[str]:
    return list(page.evaluate("() => window.__violations")) + console


def sign_in(b: Any, name: str, key: str) -> None:
    page, console = visit(b, "/login")
    page.fill('input[name="name"]', name)
    page.fill('input[name="key"]', key)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/login" not in page.url, page.url
    assert violations(page, console) == []
    page.close()


def test_pages_raise_no_policy_violation(settings: Settings, engine: Any, browser: Any) -> None:
    app = create_app(settings)
    admin, alice = issue_key(app, "admin"), issue_key(app, "alice", "rater")
    with serve(app) as url, httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}) as api:
        run, task = make_study(api, 4, ["alice"])
        _, report_run = study(api)  # type: ignore[arg-type]
        b = browser(url)

        sign_in(b, "alice", alice)
        for path in ("/rate", f"/rate/{task}"):
            page, console = visit(b, path)
            assert violations(page, console) == [], path
        page, console = visit(b, f"/rate/{task}/1")
        with page.expect_navigation():
            page.keyboard.press("4")  # rate.js: a number key saves and moves on
        assert page.url.endswith(f"/rate/{task}/2"), page.url
        bar = page.locator("progress.bar")
        assert bar.get_attribute("value") == "1" and bar.get_attribute("max") == "4"
        assert violations(page, console) == []
        assert api.get(f"/runs/{run}/ratings").json()[0]["score"] == 4

        b.context.clear_cookies()
        sign_in(b, "admin", admin)
        paths = [
            "/",
            "/tasks.html",
            f"/tasks/{task}/dashboard.html",
            f"/runs/{report_run}/report.html",
            f"/runs/{report_run}/metrics/external.a/items.html",
            "/docs",
            "/redoc",
        ]
        for path in paths:
            page, console = visit(b, path)
            if path == "/docs":
                page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
            # ReDoc's menu always asks its vendor's CDN for a logo: app.docs' policy is there to stop it.
            seen = [v for v in violations(page, console) if "cdn.redoc.ly" not in v]
            assert seen == [], path
        page, _ = visit(b, f"/tasks/{task}/dashboard.html")
        box = page.locator("progress.bar").first.bounding_box()
        assert box is not None and box["width"] >= 90
        assert b.external == []
