"""Every bad input is a 4xx envelope naming the row and the field, and nothing is written."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import MINI, assert_envelope, create_dataset, load_mini, read_jsonl, upload

QUESTIONS = read_jsonl(MINI / "questions.jsonl")


def _state(client: TestClient, ds: int) -> tuple[Any, Any]:
    return (
        client.get(f"/datasets/{ds}/documents").json(),
        client.get(f"/datasets/{ds}/questions").json(),
    )


def _bad_question(**changes: Any) -> dict[str, Any]:
    q = copy.deepcopy(QUESTIONS[0])
    q["external_id"] = "new"
    for key, value in changes.items():
        q[key] = value
    return q


@pytest.mark.parametrize(
    ("passage", "field", "reason_part"),
    [
        ({"document_id": "offres", "start": 10, "end": 10_000}, "passages[0].end", "beyond document length"),
        ({"document_id": "offres", "start": 30, "end": 30}, "passages[0].end", "greater than start"),
        ({"document_id": "offres", "start": 50, "end": 20}, "passages[0].end", "greater than start"),
        ({"document_id": "nope", "start": 0, "end": 5}, "passages[0].document_id", "unknown document"),
        ({"document_id": "offres", "start": -1, "end": 5}, "passages[0].start", "greater than or equal"),
        (
            {"document_id": "offres", "start": 0, "end": 5, "text": "autre"},
            "passages[0].text",
            "does not match",
        ),
        ({"document_id": "offres", "start": 16, "end": 18}, "passages[0]", "only whitespace"),
    ],
)
def test_bad_passage(client: TestClient, passage: dict[str, Any], field: str, reason_part: str) -> None:
    ds = load_mini(client)
    before = _state(client, ds)
    # a good row next to the bad one: the whole batch is refused
    good = _bad_question()
    good["external_id"] = "good"
    bad = _bad_question(passages=[passage])
    body = assert_envelope(client.post(f"/datasets/{ds}/questions", json=[good, bad]), 422, "InvalidItems")
    assert len(body["items"]) == 1
    item = body["items"][0]
    assert item["index"] == 1 and item["field"] == field and reason_part in item["reason"], item
    assert _state(client, ds) == before


def test_every_bad_row_is_listed(client: TestClient) -> None:
    ds = load_mini(client)
    rows = [
        _bad_question(external_id="a", question=""),
        _bad_question(external_id="b"),
        _bad_question(external_id="b"),
        _bad_question(external_id="c", answerable=False),
        _bad_question(external_id="d", types=["x", "x"]),
    ]
    body = assert_envelope(client.post(f"/datasets/{ds}/questions", json=rows), 422)
    got = {(i["index"], i["field"]) for i in body["items"]}
    assert got == {(0, "question"), (2, "external_id"), (3, "(row)"), (4, "types")}
    dup = [i for i in body["items"] if i["index"] == 2][0]
    assert "first at index 1" in dup["reason"]
    assert len(client.get(f"/datasets/{ds}/questions").json()) == len(QUESTIONS)


def test_unanswerable_carries_no_passage(client: TestClient) -> None:
    ds = load_mini(client)
    q = _bad_question(answerable=False, reference_answer=None)
    body = assert_envelope(client.post(f"/datasets/{ds}/questions", json=[q]), 422)
    assert "carries no passages" in body["items"][0]["reason"]


def test_duplicate_and_empty_documents(client: TestClient) -> None:
    ds = create_dataset(client)
    rows = [
        {"external_id": "a", "text": "un"},
        {"external_id": "a", "text": "deux"},
        {"external_id": "b", "text": "   \n"},
        {"external_id": "c", "text": "ok", "unknown_field": 1},
    ]
    body = assert_envelope(client.post(f"/datasets/{ds}/documents", json=rows), 422)
    got = {(i["index"], i["field"]) for i in body["items"]}
    assert got == {(1, "external_id"), (2, "text"), (3, "unknown_field")}
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


def test_shortening_a_document_under_a_passage_is_refused(client: TestClient) -> None:
    ds = load_mini(client)
    before = _state(client, ds)
    r = client.post(f"/datasets/{ds}/documents", json=[{"external_id": "offres", "text": "court"}])
    body = assert_envelope(r, 422)
    assert body["items"][0]["field"] == "text" and "q1" in body["items"][0]["reason"]
    assert _state(client, ds) == before


def test_malformed_jsonl_names_the_line(client: TestClient) -> None:
    ds = create_dataset(client)
    raw = b'{"external_id": "a", "text": "x"}\n\n{"external_id": "b", "text": \n{"external_id": "c"}}\n'
    body = assert_envelope(upload(client, f"/datasets/{ds}/documents", "d.jsonl", raw), 400, "MalformedInput")
    assert [i["line"] for i in body["items"]] == [3, 4]
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


def test_malformed_json_body(client: TestClient) -> None:
    ds = create_dataset(client)
    r = client.post(
        f"/datasets/{ds}/documents",
        content=b'[{"external_id": "a",',
        headers={"content-type": "application/json"},
    )
    body = assert_envelope(r, 400, "MalformedInput")
    assert body["items"][0]["line"] == 1
    r = client.post(f"/datasets/{ds}/documents", json={"external_id": "a", "text": "x"})
    assert_envelope(r, 400, "MalformedInput")


def test_non_utf8_is_rejected(client: TestClient) -> None:
    ds = create_dataset(client)
    raw = '{"external_id": "a", "text": "caf\u00e9"}\n'.encode("latin-1")
    body = assert_envelope(upload(client, f"/datasets/{ds}/documents", "d.jsonl", raw), 400, "MalformedInput")
    assert "UTF-8" in body["detail"] and body["items"][0]["line"] == 1
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


def test_oversized_upload_is_413(client: TestClient) -> None:
    ds = create_dataset(client)
    big = b'{"external_id": "a", "text": "' + b"x" * 300_000 + b'"}\n'
    assert_envelope(upload(client, f"/datasets/{ds}/documents", "d.jsonl", big), 413, "PayloadTooLarge")
    r = client.post(
        f"/datasets/{ds}/documents", content=big, headers={"content-type": "application/x-ndjson"}
    )
    assert_envelope(r, 413, "PayloadTooLarge")
    assert client.get(f"/datasets/{ds}").json()["documents"] == 0


def test_unsupported_content_type_is_415(client: TestClient) -> None:
    ds = create_dataset(client)
    r = client.post(f"/datasets/{ds}/documents", content=b"hello", headers={"content-type": "text/plain"})
    body = assert_envelope(r, 415, "UnsupportedMediaType")
    items = [(i["field"], i["reason"]) for i in body["items"]]
    assert items == [("content-type", "'text/plain' is not readable")]
    r = upload(client, f"/datasets/{ds}/documents", "d.txt", b"hello")
    body = assert_envelope(r, 415, "UnsupportedMediaType")
    assert [i["field"] for i in body["items"]] == ["file"] and "'d.txt'" in body["items"][0]["reason"]


def test_empty_and_missing_file(client: TestClient) -> None:
    ds = create_dataset(client)
    assert_envelope(upload(client, f"/datasets/{ds}/documents", "d.jsonl", b"\n\n"), 400)
    r = client.post(f"/datasets/{ds}/documents", files={"other": ("d.jsonl", b"{}")})
    assert_envelope(r, 400)
