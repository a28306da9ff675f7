from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "mini"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def create_dataset(client: TestClient, name: str = "mini", language: str = "fr") -> int:
    r = client.post("/datasets", json={"name": name, "language": language})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def upload(client: TestClient, path: str, filename: str, content: bytes) -> Any:
    return client.post(path, files={"file": (filename, content, "application/octet-stream")})


def load_mini(client: TestClient, name: str = "mini") -> int:
    ds = create_dataset(client, name)
    r = upload(client, f"/datasets/{ds}/documents", "d.jsonl", (MINI / "documents.jsonl").read_bytes())
    assert r.status_code == 200, r.text
    r = upload(client, f"/datasets/{ds}/questions", "q.jsonl", (MINI / "questions.jsonl").read_bytes())
    assert r.status_code == 200, r.text
    return ds


def assert_envelope(resp: Any, status: int, error: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error", "detail", "items"}, body
    assert isinstance(body["detail"], str) and body["detail"]
    if error:
        assert body["error"] == error, body
    return dict(body)


def get_pages(c: Any, path: str, params: dict[str, Any]) -> list[Any]:
    """Every page of a paged export (CSV, JSONL) in order, followed by their ``Link`` headers as a client
    without ours would (the Python client reads whole exports in one streamed response)."""
    pages = []
    resp = c.get(path, params=params)
    while True:
        assert resp.status_code == 200, resp.text
        pages.append(resp)
        following = resp.links.get("next", {}).get("url")
        if not following:
            return pages
        resp = c.get(following)
