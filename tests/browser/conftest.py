"""A real headless browser for the pages: Debian's chromium driven by Playwright (never a browser download),
with a fresh profile, and every request that is not to the test server refused and recorded.

A missing browser fails these tests (CI installs it: .ci/run); it is never a skip."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("RAGMETA_TEST_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class Browser:
    def __init__(self, context: Any, base_url: str) -> None:
        self.context = context
        self.base_url = base_url
        self.external: list[str] = []
        self.context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.base_url + "/") or url.startswith("data:") or url == "about:blank":
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def open(self, path: str) -> Any:
        page = self.context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(self.base_url + path, wait_until="networkidle")
        page.errors = errors
        return page


# Module scope, not session: Playwright's sync API keeps an event loop current in this thread while it runs,
# which would break asyncio.run() in the tests after these.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium (see .ci/run)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="ragmeta-chromium-") as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    def make(base_url: str) -> Browser:
        return Browser(chromium, base_url)

    yield make
    chromium.unroute("**/*")
    for page in chromium.pages:
        page.close()
