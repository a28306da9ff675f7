"""Every response tells browsers what the service never allows: being framed, content sniffed into another
type, scripts other than its own files, its URLs leaking as Referer; and the Markdown report, pasted into
wikis and pull requests that render HTML, carries user text as text."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.security import INLINE_STYLE_POLICY, PAGE_POLICY
from tests.integration.test_reports import study

SCRIPT = "<script>alert(1)</script>"


def assert_guarded(r: object, policy: str | None = PAGE_POLICY) -> None:
    headers = r.headers  # type: ignore[attr-defined]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    csp = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
    if policy is not None:
        assert csp == policy


def test_every_kind_of_response_carries_the_headers(client: TestClient) -> None:
    _, run = study(client)
    assert_guarded(client.get("/datasets"))
    assert_guarded(client.get("/datasets/999999"))  # an error envelope
    assert_guarded(client.get("/openapi.json"))
    assert_guarded(client.get("/static/ragmeta.css"))
    assert_guarded(client.get("/login"))
    assert_guarded(client.get("/"))
    assert_guarded(client.get("/healthz"))
    # refusals of the request guard, before any route
    assert_guarded(client.post("/datasets", json={"name": "x"}, headers={"Origin": "http://evil.example"}))
    assert_guarded(client.post("/datasets", content=b"{" * 10, headers={"Content-Type": "application/json"}))
    assert_guarded(client.get("/docs"), policy=None)
    assert_guarded(client.get("/redoc"), policy=None)
    for path in (
        f"/runs/{run}/report.html",
        f"/runs/{run}/report.svg",
        f"/runs/{run}/metrics/external.a/items.html",
    ):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text)
        assert_guarded(r, INLINE_STYLE_POLICY)
    assert "script-src 'self';" in INLINE_STYLE_POLICY and "'unsafe-inline'" not in PAGE_POLICY


def test_pages_under_the_strict_policy_have_no_inline_style_or_script(client: TestClient) -> None:
    study(client)
    for path in ("/", "/login", "/tasks.html", "/rate"):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text)
        assert r.headers["Content-Security-Policy"] == PAGE_POLICY
        html = r.text
        assert " style=" not in html and "<style" not in html, path
        assert not re.search(r"<script(?![^>]*\ssrc=)", html), path


@pytest.mark.parametrize("where", ["run", "pooled", "type"])
def test_markdown_report_escapes_user_text(client: TestClient, where: str) -> None:
    ds, run = study(client)
    params = {"format": "md"}
    path = f"/runs/{run}/report"
    if where == "type":
        params["types"] = SCRIPT
    else:
        other = client.post(f"/datasets/{ds}/runs", json={"name": SCRIPT}).json()["id"]
        outs = [{"question_id": f"q{i}", "answer": f"answer {i}"} for i in range(12)]
        assert client.post(f"/runs/{other}/outputs", json=outs).status_code == 200
        path = f"/runs/{other}/report" if where == "run" else "/report"
        if where == "pooled":
            params["runs"] = f"{run},{other}"
    r = client.get(path, params=params)
    assert r.status_code == 200, r.text
    md = r.text
    assert "<script" not in md.lower(), md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md, md
