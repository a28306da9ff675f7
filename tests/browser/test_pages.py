"""The report page and the API docs in a real headless browser, with the network blocked: they render (the
elements are there) and ask for nothing outside the service."""

from __future__ import annotations

from typing import Any

from app.main import create_app
from app.settings import Settings
from tests.conftest import open_mode
from tests.integration.test_report_honesty import two_item_run
from tests.integration.test_reports import study
from tests.live import serve


def test_report_page_and_api_docs_render_offline(settings: Settings, engine: Any, browser: Any) -> None:
    app = create_app(open_mode(settings))  # the open demo on loopback: the browser signs in nowhere
    with serve(app) as url:
        import httpx

        with httpx.Client(base_url=url) as http:
            _, run = study(http)  # type: ignore[arg-type]
            two = two_item_run(http)  # type: ignore[arg-type]
        b = browser(url)

        page = b.open(f"/runs/{run}/report.html")
        assert page.locator("h1").inner_text().startswith("Which metrics track your raters?")
        assert page.locator("#agreement tr").count() >= 6
        svg = page.locator("#figure svg")
        assert svg.count() == 1
        # The figure scales to its column (no fixed size), and its text is text.
        box = svg.bounding_box()
        column = page.locator("#figure").bounding_box()
        assert box is not None and column is not None and box["width"] >= column["width"] - 40
        assert page.locator("#figure svg text").filter(has_text="Verdict").count() == 3
        assert page.locator("#table-1 tr").count() == 4  # header + three metrics
        assert "no judge configured" in page.locator("#not-computed-1").inner_text()
        page.locator("#table-1 a", has_text="external.b").click()
        page.wait_for_load_state("networkidle")
        assert page.locator("#items tr").count() == 13

        page = b.open(f"/runs/{two}/report.html")
        assert "too few items for any correlation" in page.locator("#warnings").inner_text()
        # undefined rows do not push the analysis tables past the page's column (no sideways scrolling)
        widths = page.evaluate(
            "() => [...document.querySelectorAll('.wide')].map(e => [e.scrollWidth, e.clientWidth])"
        )
        assert widths and all(scroll <= client for scroll, client in widths), widths

        docs = b.open("/docs")
        docs.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
        assert docs.locator(".swagger-ui .opblock").count() > 20
        assert docs.locator(".swagger-ui .info .title").inner_text().startswith("ragmeta")
        redoc = b.open("/redoc")
        redoc.wait_for_selector("[role=menuitem], .menu-content", timeout=30_000)
        assert redoc.locator("h1").first.inner_text().startswith("ragmeta")
        assert not docs.errors and not redoc.errors and not page.errors
        assert b.external == [], f"pages asked for external resources: {b.external}"
