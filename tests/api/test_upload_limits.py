"""Batch uploads get the upload limit (RAGMETA_MAX_UPLOAD_BYTES, 50 MiB by default), not the plain-body one
(RAGMETA_MAX_REQUEST_BYTES, 1 MiB), at sizes between the two and with the service's own default limits: the
shared fixture lowers the upload limit below the plain-body one, where the two cannot be told apart."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.main import create_app
from app.middleware import upload_routes
from app.settings import Settings
from tests.api.helpers import assert_envelope, create_dataset
from tests.conftest import FAST_HASH, admin_client

MiB = 1024 * 1024

# Every route that reads a batch itself (app.uploads.batch_body / upload_body). A route added here or hidden
# from the walk (as included routers once were) changes this set.
EXPECTED_UPLOADS = {
    ("POST", "/datasets/{dataset_id}/documents"),
    ("POST", "/datasets/{dataset_id}/questions"),
    ("POST", "/runs/{run_id}/outputs"),
    ("POST", "/runs/{run_id}/scores"),
    ("POST", "/runs/{run_id}/ratings"),
    ("POST", "/raters"),
    ("POST", "/preferences"),
    ("POST", "/studies/import"),
    ("POST", "/runs/{run_id}/annotations"),
}


def default_limits(database_url: str, tmp_path: Path) -> Settings:
    """The test settings, except that both body limits keep the service's defaults."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        jobs={"embedded_worker": False},  # type: ignore[arg-type]
        report_processes=0,
        auth={"enabled": True, **FAST_HASH},  # type: ignore[arg-type]
    )


@pytest.fixture
def real_client(database_url: str, tmp_path: Path, engine: Engine) -> Iterator[TestClient]:
    s = default_limits(database_url, tmp_path)
    assert (s.max_request_bytes, s.max_upload_bytes) == (1 * MiB, 50 * MiB)
    with admin_client(create_app(s)) as c:
        yield c


def _words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(100_000)}" for _ in range(n))


def documents_jsonl(size: int) -> bytes:
    rng = random.Random(7)
    lines, total, i = [], 0, 0
    while total < size:
        line = json.dumps({"external_id": f"d{i}", "title": f"doc {i}", "text": _words(rng, 8000)})
        lines.append(line)
        total += len(line) + 1
        i += 1
    return ("\n".join(lines) + "\n").encode()


def ragas_study(size: int) -> bytes:
    rng = random.Random(11)
    rows, total, i = [], 0, 0
    while total < size:
        contexts = [_words(rng, 1500) for _ in range(3)]
        row = {
            "user_input": f"question {i}: {_words(rng, 8)}?",
            "response": contexts[0][:200],
            "retrieved_contexts": contexts,
            "reference": contexts[1][:200],
        }
        line = json.dumps(row)
        rows.append(line)
        total += len(line) + 1
        i += 1
    return ("\n".join(rows) + "\n").encode()


def test_the_upload_routes_are_the_declared_ones(real_client: TestClient) -> None:
    found = {(m, u.path) for u in upload_routes(real_client.app) for m in u.methods}  # type: ignore[arg-type]
    assert found == EXPECTED_UPLOADS


def test_documents_between_the_two_limits_as_a_file_and_as_a_body(real_client: TestClient) -> None:
    raw = documents_jsonl(int(1.9 * MiB))
    assert 1.85 * MiB < len(raw) < 2 * MiB
    ds = create_dataset(real_client, "big")
    r = real_client.post(
        f"/datasets/{ds}/documents", files={"file": ("docs.jsonl", raw, "application/x-ndjson")}
    )
    assert r.status_code == 200, r.text
    count = raw.count(b"\n")
    assert r.json()["received"] == count, r.json()
    ds2 = create_dataset(real_client, "big-body")
    r = real_client.post(
        f"/datasets/{ds2}/documents", content=raw, headers={"Content-Type": "application/x-ndjson"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["received"] == count, r.json()


def test_a_study_between_the_two_limits(real_client: TestClient) -> None:
    raw = ragas_study(int(3.1 * MiB))
    assert 3.05 * MiB < len(raw) < 3.3 * MiB
    r = real_client.post(
        "/studies/import", files={"file": ("ragas.jsonl", raw)}, data={"dataset": "big-study"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["outputs"] == raw.count(b"\n"), r.json()


def test_a_plain_body_over_its_limit_is_still_refused(real_client: TestClient) -> None:
    body = json.dumps({"name": "x", "description": "a" * (1 * MiB)})
    r = assert_envelope(
        real_client.post("/datasets", content=body, headers={"Content-Type": "application/json"}), 413
    )
    assert "RAGMETA_MAX_REQUEST_BYTES" in r["detail"]


def test_an_upload_over_the_upload_limit_is_refused_naming_its_setting(real_client: TestClient) -> None:
    ds = create_dataset(real_client, "too-big")
    line = json.dumps({"external_id": "d", "text": "x" * (50 * MiB)}).encode()
    assert len(line) > 50 * MiB
    r = real_client.post(
        f"/datasets/{ds}/documents", content=line, headers={"Content-Type": "application/x-ndjson"}
    )
    assert "RAGMETA_MAX_UPLOAD_BYTES" in assert_envelope(r, 413, "PayloadTooLarge")["detail"]


def test_preferences_beside_a_study_between_the_two_limits(real_client: TestClient) -> None:
    """A team's preference sheet over 1 MiB (40 raters x 150 questions, with comments) in the study import."""
    rng = random.Random(13)
    questions = [f"question {i}: {_words(rng, 8)}?" for i in range(150)]
    contexts = [_words(rng, 40) for _ in questions]

    def run_file(offset: int) -> bytes:
        rows = [
            {
                "user_input": q,
                "response": c[offset : offset + 80],
                "retrieved_contexts": [c],
                "reference": c[:80],
            }
            for q, c in zip(questions, contexts, strict=True)
        ]
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    lines = ["question,rater,preference,comment"]
    lines += [
        f'"{q}",rater{j},{rng.randrange(-2, 3)},"{_words(rng, 22)}"' for j in range(40) for q in questions
    ]
    sheet = ("\n".join(lines) + "\n").encode()
    assert 1.2 * MiB < len(sheet) < 2 * MiB
    files = [
        ("file", ("a.jsonl", run_file(0))),
        ("file", ("b.jsonl", run_file(40))),
        ("preferences", ("prefs.csv", sheet)),
    ]
    r = real_client.post("/studies/import", files=files, data={"dataset": "big-preferences"})
    assert r.status_code == 201, r.text
    info = r.json()["preferences"]
    assert info["received"] == info["created"] == 40 * 150, info
    assert len(info["raters_created"]) == 40
