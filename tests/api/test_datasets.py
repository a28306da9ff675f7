from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.api.helpers import MINI, assert_envelope, create_dataset, load_mini, read_jsonl, upload


def test_create_list_get(client: TestClient) -> None:
    ds = create_dataset(client, "demo")
    got = client.get(f"/datasets/{ds}").json()
    assert got["name"] == "demo" and got["language"] == "fr"
    assert got["chunking"] == {"page_max_words": 1000, "max_words": 200, "overlap_words": 0}
    assert [d["id"] for d in client.get("/datasets").json()] == [ds]


def test_duplicate_dataset_name_is_409(client: TestClient) -> None:
    create_dataset(client, "same")
    body = assert_envelope(client.post("/datasets", json={"name": "same"}), 409, "Conflict")
    assert body["items"][0]["field"] == "name"
    assert len(client.get("/datasets").json()) == 1


def test_invalid_dataset_body_names_field(client: TestClient) -> None:
    r = client.post("/datasets", json={"name": "x", "chunking": {"max_words": 50, "overlap_words": 60}})
    body = assert_envelope(r, 422, "InvalidRequest")
    assert body["items"][0]["field"].startswith("chunking")
    body = assert_envelope(client.post("/datasets", json={"name": "  "}), 422)
    assert body["items"][0]["field"] == "name"


def test_unknown_dataset_is_404_everywhere(client: TestClient) -> None:
    assert_envelope(client.get("/datasets/999"), 404, "NotFound")
    assert_envelope(client.get("/datasets/999/questions"), 404, "NotFound")
    assert_envelope(client.get("/datasets/999/documents"), 404, "NotFound")
    r = client.post("/datasets/999/documents", json=[{"external_id": "a", "text": "x"}])
    assert_envelope(r, 404, "NotFound")


def test_round_trip_jsonl_twice_is_identical_and_unchanged(client: TestClient) -> None:
    ds = create_dataset(client)
    docs_raw = (MINI / "documents.jsonl").read_bytes()
    qs_raw = (MINI / "questions.jsonl").read_bytes()
    r1 = upload(client, f"/datasets/{ds}/documents", "d.jsonl", docs_raw).json()
    assert (r1["created"], r1["updated"], r1["unchanged"]) == (3, 0, 0)
    r2 = upload(client, f"/datasets/{ds}/questions", "q.jsonl", qs_raw).json()
    assert (r2["created"], r2["updated"], r2["unchanged"]) == (5, 0, 0)
    # second import: nothing new, nothing duplicated
    r3 = upload(client, f"/datasets/{ds}/documents", "d.jsonl", docs_raw).json()
    assert (r3["created"], r3["updated"], r3["unchanged"]) == (0, 0, 3)
    r4 = upload(client, f"/datasets/{ds}/questions", "q.jsonl", qs_raw).json()
    assert (r4["created"], r4["updated"], r4["unchanged"]) == (0, 0, 5)
    info = client.get(f"/datasets/{ds}").json()
    assert (info["documents"], info["questions"], info["unanswerable"]) == (3, 5, 1)

    exported = client.get(f"/datasets/{ds}/questions", params={"format": "jsonl"})
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    # the import form, each passage saying how it was obtained (offsets given here)
    expected = read_jsonl(MINI / "questions.jsonl")
    for q in expected:
        q["passages"] = [p | {"location": "given", "match_score": None} for p in q["passages"]]
    assert [json.loads(x) for x in exported.text.splitlines()] == expected
    docs = client.get(f"/datasets/{ds}/documents", params={"format": "jsonl"}).text
    assert [json.loads(x) for x in docs.splitlines()] == read_jsonl(MINI / "documents.jsonl")
    # the export re-imports as unchanged, and into a new dataset exports again byte for byte (CRLF, emoji,
    # accents)
    again = upload(client, f"/datasets/{ds}/questions", "q.jsonl", exported.content).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 5)
    ds2 = create_dataset(client, "copy")
    upload(client, f"/datasets/{ds2}/documents", "d.jsonl", docs_raw)
    upload(client, f"/datasets/{ds2}/questions", "q.jsonl", exported.content)
    assert client.get(f"/datasets/{ds2}/questions", params={"format": "jsonl"}).content == exported.content


def test_exported_passage_text_matches_document_span(client: TestClient) -> None:
    ds = load_mini(client)
    qs = client.get(f"/datasets/{ds}/questions", params={"include_text": "true"}).json()
    assert qs[4]["passages"][0]["text"] == "redémarrez la box et rapprochez-vous du routeur. 🚀"
    # exported with text, it re-imports as unchanged (the text is checked, not stored twice)
    r = client.post(f"/datasets/{ds}/questions", json=qs_without_ids(qs))
    assert r.json()["unchanged"] == 5


def qs_without_ids(qs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in q.items() if k != "id"} for q in qs]


def test_update_is_counted_and_replaces_passages(client: TestClient) -> None:
    ds = load_mini(client)
    q = read_jsonl(MINI / "questions.jsonl")[1]
    q["passages"] = q["passages"][:1]
    q["types"] = ["procedural"]
    r = client.post(f"/datasets/{ds}/questions", json=[q]).json()
    assert (r["created"], r["updated"], r["unchanged"]) == (0, 1, 0)
    stored = [x for x in client.get(f"/datasets/{ds}/questions").json() if x["external_id"] == "q2"][0]
    assert len(stored["passages"]) == 1 and stored["types"] == ["procedural"]


def test_json_body_with_items_key(client: TestClient) -> None:
    ds = create_dataset(client)
    r = client.post(f"/datasets/{ds}/documents", json={"items": [{"external_id": "a", "text": "du texte"}]})
    assert r.status_code == 200 and r.json()["created"] == 1


def test_jsonl_raw_body(client: TestClient) -> None:
    ds = create_dataset(client)
    r = client.post(
        f"/datasets/{ds}/documents",
        content=(MINI / "documents.jsonl").read_bytes(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert r.status_code == 200 and r.json()["created"] == 3
