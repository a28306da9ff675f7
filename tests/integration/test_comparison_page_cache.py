"""The sections beside the report on its HTML page (comparisons of pooled runs, estimates of one run) are
cached like the report: reused while nothing they read changes, recomputed after new preferences, ratings,
scores or answers; computed off the event loop; identical requests arriving together share one computation.
Pages are compared without their figures (matplotlib names the SVG's paths at random)."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from services.reports import comparisons, render
from tests.conftest import issue_key
from tests.integration.test_comparison_preferences import P1, _change_answer, _post, _rows
from tests.integration.test_comparison_preferences import pair as pair
from tests.live import serve


def _text(page: str) -> str:
    return re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.DOTALL)


def _page(client: TestClient, runs: str) -> str:
    r = client.get("/report.html", params={"runs": runs, "n_resamples": 200})
    assert r.status_code == 200, r.text
    return _text(r.text)


def test_pooled_sections_are_cached_and_invalidated(client: TestClient, pair: Any) -> None:
    _, a, b = pair
    cache = client.app.state.resources.section_cache  # type: ignore[attr-defined]
    runs = f"{a},{b}"
    first = _page(client, runs)
    assert (cache.misses, cache.hits) == (1, 0)
    assert "Pairwise preference" in first and "derived from the absolute ratings" in first
    assert _page(client, runs) == first
    assert (cache.misses, cache.hits) == (1, 1)
    # Another resampling is another entry.
    assert client.get("/report.html", params={"runs": runs, "n_resamples": 300}).status_code == 200
    assert cache.misses == 2

    writes = [
        ("imported preferences", lambda: _post(client, a, b, _rows("p1", P1)), "5 imported from files"),
        (
            "a rating",
            lambda: client.post(
                f"/runs/{a}/ratings", json=[{"question_id": "q1", "rater": "p3", "score": 2}]
            ),
            None,
        ),
        (
            "a score",
            lambda: client.post(
                f"/runs/{b}/scores", json=[{"question_id": "q1", "metric": "external.n", "value": 1}]
            ),
            "external.n",
        ),
        ("an answer", lambda: _change_answer(client, b, "q3"), "changed since"),
    ]
    misses = cache.misses
    for what, write, shown in writes:
        r = write()
        assert r is None or r.status_code == 200, (what, r.text)
        page = _page(client, runs)
        misses += 1
        assert cache.misses == misses, what
        if shown:
            assert shown in page, what
        assert _page(client, runs) == page and cache.misses == misses, what  # cached again


def test_a_side_by_side_preference_invalidates_the_sections(client: TestClient, pair: Any) -> None:
    team, a, b = pair
    cache = client.app.state.resources.section_cache  # type: ignore[attr-defined]
    body = {"name": "pair", "mode": "pairwise", "run_id": a, "run_b_id": b, "raters": ["alice"], "seed": 3}
    task = client.post("/tasks", json=body).json()["id"]
    runs = f"{a},{b}"
    _page(client, runs)
    misses = cache.misses
    url = f"/tasks/{task}/queue/1"
    assert team.as_("alice", "PUT", url, json={"action": "rate", "score": 5}).status_code == 200
    assert "given side by side" in _page(client, runs)
    assert cache.misses == misses + 1


def test_single_run_sections_are_cached(client: TestClient, pair: Any) -> None:
    _, a, _ = pair
    cache = client.app.state.resources.section_cache  # type: ignore[attr-defined]
    first = _text(client.get(f"/runs/{a}/report.html").text)
    assert _text(client.get(f"/runs/{a}/report.html").text) == first
    assert (cache.misses, cache.hits) == (1, 1)
    assert (
        client.post(f"/runs/{a}/ratings", json=[{"question_id": "q1", "rater": "p3", "score": 2}]).status_code
        == 200
    )
    client.get(f"/runs/{a}/report.html")
    assert cache.misses == 2


def test_page_work_runs_off_the_event_loop_and_is_shared(
    settings: Settings, engine: Any, pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served for real: every piece of the page's work runs in a thread without an event loop, and four
    identical cold requests compute the sections once."""
    _, a, b = pair
    on_loop: list[str] = []
    calls: list[str] = []

    def watched(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append(name)
            except RuntimeError:
                pass
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    for name in ("sections", "sections_version", "page", "report"):
        monkeypatch.setattr(render, name, watched(name, getattr(render, name)))
    monkeypatch.setattr(comparisons, "page_sections", watched("comparisons", comparisons.page_sections))
    app = create_app(settings)
    headers = {"Authorization": f"Bearer {issue_key(app, 'page-admin')}"}
    with (
        serve(app) as base,
        httpx.Client(base_url=base, headers=headers, timeout=120) as c,
        ThreadPoolExecutor(4) as pool,
    ):
        pages = list(
            pool.map(
                lambda _: c.get("/report.html", params={"runs": f"{a},{b}", "n_resamples": 200}), range(4)
            )
        )
    assert [p.status_code for p in pages] == [200] * 4
    assert len({_text(p.text) for p in pages}) == 1
    assert on_loop == []
    assert calls.count("comparisons") == 1 and calls.count("report") == 1
    assert calls.count("page") == 4 and calls.count("sections_version") == 4
