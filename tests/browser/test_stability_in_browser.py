"""The judge-stability section of a run's report page in a real headless browser: a judge metric asked
three times per output shows its test-retest ICC, corrected r and the links to the other formats; a judge
metric asked once says how to get the figures."""

from __future__ import annotations

import os
from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from tests.conftest import open_mode
from tests.integration.test_judge_retest import judged
from tests.integration.test_reports import study
from tests.live import serve


def test_stability_section_shows_the_repeated_judge_and_links_its_formats(
    settings: Settings, engine: Any, browser: Any
) -> None:
    app = create_app(open_mode(settings))
    with serve(app) as url:
        with httpx.Client(base_url=url) as http:
            _, run = study(http)  # type: ignore[arg-type]
        judged(engine, run, "opik.moderation", 3, 0.05)
        judged(engine, run, "opik.hallucination", 1, 0.0)
        b = browser(url)
        page = b.open(f"/runs/{run}/report.html")
        section = page.locator("#judge-stability")
        assert section.count() == 1
        table = page.locator("#table-stability")
        assert table.locator("tr").count() == 3  # header + two judge metrics
        moderation = table.locator("tr", has_text="opik.moderation")
        with httpx.Client(base_url=url) as http:
            stab = http.get(f"/runs/{run}/stability").json()
        m = next(x for x in stab["metrics"] if x["metric"] == "opik.moderation")
        icc = m["icc_a1"]
        assert f"{icc['estimate']:.2f} [{icc['ci_low']:.2f}, {icc['ci_high']:.2f}]" in moderation.inner_text()
        assert (
            "opik.moderation: model loopback-judge, temperature 0.7"
            in page.locator("#stability-judges").inner_text()
        )
        assert ("unstable" in moderation.inner_text()) is m["unstable"]
        once = table.locator("tr", has_text="opik.hallucination").inner_text()
        assert "one repeat only" in once
        # The table stays inside the page's column.
        widths = page.evaluate(
            "() => [...document.querySelectorAll('.wide')].map(e => [e.scrollWidth, e.clientWidth])"
        )
        assert widths and all(scroll <= client for scroll, client in widths), widths
        links = page.evaluate(
            "() => [...document.querySelectorAll('#stability-notes a')].map(a => a.getAttribute('href'))"
        )
        assert links == [f"/runs/{run}/stability", f"/runs/{run}/stability?format=csv",
                         f"/runs/{run}/stability?format=md"]  # fmt: skip
        with httpx.Client(base_url=url) as http:
            assert "| opik.moderation | 3 | 12 |" in http.get(links[2]).text
            assert http.get(links[1]).text.startswith("run_id,metric,figure,estimate")
        assert not page.errors and b.external == []
        if shot := os.environ.get("RAGMETA_TEST_SCREENSHOT"):  # a picture to look at, not an assertion
            page = b.open(f"/runs/{run}/report.html")
            page.locator("#judge-stability").scroll_into_view_if_needed()
            page.screenshot(path=shot, full_page=True)
