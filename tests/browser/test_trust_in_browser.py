"""The trust section of the report page in a real headless browser: one plain sentence per metric and use,
the rules behind a disclosure, nothing asked of the network."""

from __future__ import annotations

import os
from typing import Any

from app.main import create_app
from app.settings import Settings
from tests.api.test_trust import rated_study
from tests.conftest import open_mode
from tests.live import serve


def test_trust_section_reads_as_sentences(settings: Settings, engine: Any, browser: Any) -> None:
    app = create_app(open_mode(settings))
    with serve(app) as url:
        import httpx

        with httpx.Client(base_url=url, timeout=120) as http:
            run, _, _ = rated_study(http, seed=3)  # type: ignore[arg-type]
            body = http.get(f"/runs/{run}/trust").json()
        b = browser(url)
        page = b.open(f"/runs/{run}/report.html")
        section = page.locator("h2#trust")
        assert section.inner_text() == "May a metric replace the raters?"
        items = page.locator("ul.verdicts li")
        assert items.count() == 3 * len(body["metrics"])
        texts = items.all_inner_texts()
        follows = next(m for m in body["metrics"] if m["metric"] == "external.follows")
        item = next(v for v in follows["verdicts"] if v["use"] == "item")
        assert f"May external.follows replace a rater? {item['verdict'].capitalize()}: " in texts[0]
        assert any(t.startswith("May external.noise rank system versions? Not yet:") for t in texts)
        page.locator("details summary", has_text="How each verdict is decided").click()
        assert "Alternative Annotator Test" in page.locator("details").last.inner_text()
        shot = os.environ.get("RAGMETA_TRUST_SCREENSHOT")
        if shot:
            page.locator("#trust-section").screenshot(path=shot)
        assert not page.errors and b.external == []
