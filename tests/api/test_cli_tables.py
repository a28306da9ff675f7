"""CLI tables print a header row naming their columns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import client as cli
from app.cli import build_parser
from app.main import create_app
from app.settings import Settings
from tests.conftest import admin_client


@pytest.fixture
def admin(settings: Settings, engine: Any) -> Iterator[TestClient]:
    with admin_client(create_app(settings)) as c:
        yield c


def run(c: TestClient, *argv: str) -> int:
    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def test_keys_list_has_a_header_row(admin: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin.post("/keys", json={"name": "alice", "role": "rater", "label": "laptop"}).status_code == 201
    capsys.readouterr()
    assert run(admin, "keys", "list") == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "prefix", "user", "role", "state", "label"]
    alice = next(r for r in rows if " alice " in r)
    # the columns sit under their headings
    assert alice.index("alice") == header.index("user") and alice.index("rater") == header.index("role")
    assert alice.index("active") == header.index("state") and alice.index("laptop") == header.index("label")


def test_jobs_list_has_a_header_row(admin: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    ds = admin.post("/datasets", json={"name": "d", "language": "en"}).json()["id"]
    docs = [{"external_id": "a", "title": "A", "text": "Some words to index here."}]
    assert admin.post(f"/datasets/{ds}/documents", json=docs).status_code == 200
    assert admin.post(f"/datasets/{ds}/index").status_code == 202
    capsys.readouterr()
    assert run(admin, "jobs") == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "kind", "status", "done/total", "failed", "of"]
    assert row.split()[1] == "index" and row.index("dataset_id") == header.index("of")
