from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

import ragmeta
from tests.api.helpers import MINI, assert_envelope, create_dataset, load_mini, read_jsonl, upload

DOCS = {d["external_id"]: d["text"] for d in read_jsonl(MINI / "documents.jsonl")}


def make_run(client: TestClient, ds: int, name: str = "r1") -> int:
    r = client.post(f"/datasets/{ds}/runs", json={"name": name, "system": {"retriever": "external", "k": 5}})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def native_outputs() -> list[dict[str, Any]]:
    i = DOCS["offres"].index("Le forfait Essentiel")
    return [
        {
            "question_id": "q1",
            "answer": "9,99 € par mois.",
            "retrieved": [
                {"document_id": "offres", "start": i, "end": i + 40, "score": 3.5},
                {"text": "La résiliation prend effet sous 10 jours."},
            ],
        },
        {"question_id": "q4", "answer": "Je ne sais pas.", "retrieved": []},
    ]


def test_run_create_list_get_and_duplicate(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    got = client.get(f"/runs/{run}").json()
    assert got["system"] == {"retriever": "external", "k": 5} and got["outputs"] == 0
    assert [r["id"] for r in client.get(f"/datasets/{ds}/runs").json()] == [run]
    assert_envelope(client.post(f"/datasets/{ds}/runs", json={"name": "r1"}), 409, "Conflict")
    assert_envelope(client.post("/datasets/77/runs", json={"name": "r1"}), 404)
    assert_envelope(client.get("/runs/77/outputs"), 404)


def test_native_outputs_round_trip_and_idempotence(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = client.post(f"/runs/{run}/outputs", json=native_outputs()).json()
    assert (r["created"], r["updated"], r["unchanged"]) == (2, 0, 0)
    r = client.post(f"/runs/{run}/outputs", json=native_outputs()).json()
    assert (r["created"], r["updated"], r["unchanged"]) == (0, 0, 2)
    outs = {o["question_id"]: o for o in client.get(f"/runs/{run}/outputs").json()}
    c1, c2 = outs["q1"]["retrieved"]
    assert (c1["rank"], c1["document_id"], c1["location"], c1["score"]) == (1, "offres", "given", 3.5)
    assert c1["text"] == DOCS["offres"][c1["start"] : c1["end"]]
    # a text-only chunk found in another document than the question's
    assert (c2["document_id"], c2["location"]) == ("resiliation", "exact")
    assert DOCS["resiliation"][c2["start"] : c2["end"]] == c2["text"]
    changed = native_outputs()
    changed[1]["answer"] = "Non, pas d'offre satellite."
    r = client.post(f"/runs/{run}/outputs", json=changed).json()
    assert (r["created"], r["updated"], r["unchanged"]) == (0, 1, 1)


def test_ragas_file_locates_contexts(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = upload(client, f"/runs/{run}/outputs", "ragas.json", (MINI / "outputs_ragas.json").read_bytes())
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 3
    outs = {o["question_id"]: o for o in client.get(f"/runs/{run}/outputs").json()}
    assert [c["location"] for c in outs["q1"]["retrieved"]] == ["exact", "exact"]
    norm = outs["q2"]["retrieved"][0]
    assert norm["location"] == "normalized" and norm["document_id"] == "resiliation"
    span = DOCS["resiliation"][norm["start"] : norm["end"]]
    assert span.startswith("# Résilier un contrat\r\n\r\nPour") and span.endswith("le service client")
    lost = outs["q4"]["retrieved"][0]
    assert (lost["location"], lost["start"], lost["document_id"]) == ("unlocated", None, None)


def test_ragchecker_file_matches_query_ids(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    raw = (MINI / "outputs_ragchecker.json").read_bytes()
    r = upload(client, f"/runs/{run}/outputs", "rc.json", raw)
    assert r.status_code == 200, r.text
    assert r.json()["created"] == 2
    outs = {o["question_id"]: o for o in client.get(f"/runs/{run}/outputs").json()}
    # doc_id "0042" is not a document of the dataset: the text is still found, in "wifi"
    assert [(c["document_id"], c["location"]) for c in outs["q1"]["retrieved"]] == [
        ("offres", "exact"),
        ("wifi", "exact"),
    ]
    assert outs["q5"]["retrieved"][0]["start"] == 0


def test_csv_ragas_rows(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    q = read_jsonl(MINI / "questions.jsonl")[0]["question"]
    ctx = json.dumps(["Le forfait Essentiel coûte 9,99 €"], ensure_ascii=False).replace('"', '""')
    csv = f'user_input,response,retrieved_contexts,reference\r\n"{q}",9.99,"{ctx}",x\r\n'
    r = client.post(f"/runs/{run}/outputs", content=csv.encode(), headers={"content-type": "text/csv"})
    assert r.status_code == 200, r.text
    out = client.get(f"/runs/{run}/outputs").json()[0]
    assert out["retrieved"][0]["location"] == "exact"


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda o: o[0].update(question_id="zz"), "question_id", "unknown question"),
        (lambda o: o[1].update(question_id="q1"), "question_id", "second output"),
        (lambda o: o[0]["retrieved"][0].update(end=10_000), "retrieved[0].end", "beyond document length"),
        (lambda o: o[0]["retrieved"][0].update(end=0, start=5), "retrieved[0].end", "greater than start"),
        (
            lambda o: o[0]["retrieved"][0].update(document_id="nope"),
            "retrieved[0].document_id",
            "unknown document",
        ),
        (lambda o: o[0]["retrieved"][0].update(text="autre"), "retrieved[0].text", "does not match"),
        (lambda o: o[0]["retrieved"].append({"score": 1.0}), "retrieved[2]", "needs document_id"),
        (lambda o: o[0].pop("answer"), "answer", "Field required"),
    ],
)
def test_bad_outputs_write_nothing(client: TestClient, mutate: Any, field: str, reason: str) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    rows = copy.deepcopy(native_outputs())
    mutate(rows)
    body = assert_envelope(client.post(f"/runs/{run}/outputs", json=rows), 422, "InvalidItems")
    assert any(i["field"] == field and reason in i["reason"] for i in body["items"]), body
    assert client.get(f"/runs/{run}/outputs").json() == []


def test_ambiguous_question_text(client: TestClient) -> None:
    ds = load_mini(client)
    text = read_jsonl(MINI / "questions.jsonl")[0]["question"]
    client.post(f"/datasets/{ds}/questions", json=[{"external_id": "twin", "question": text}])
    run = make_run(client, ds)
    rows = [{"user_input": text, "response": "x", "retrieved_contexts": []}]
    body = assert_envelope(client.post(f"/runs/{run}/outputs", json=rows), 422)
    assert "ambiguous" in body["items"][0]["reason"] and body["items"][0]["field"] == "user_input"
    rows[0]["question_id"] = "twin"
    assert client.post(f"/runs/{run}/outputs", json=rows).status_code == 200


def test_outputs_bad_bytes(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert_envelope(upload(client, f"/runs/{run}/outputs", "o.jsonl", b"\xff\xfe{"), 400, "MalformedInput")
    body = assert_envelope(upload(client, f"/runs/{run}/outputs", "o.jsonl", b'{"a": 1}\n{oops\n'), 400)
    assert body["items"][0]["line"] == 2
    assert_envelope(upload(client, f"/runs/{run}/outputs", "o.jsonl", b"x" * 300_000), 413)


def test_large_batches_are_stored_exactly(client: TestClient) -> None:
    """Batches above the size where PostgreSQL switches to COPY (services.repository.COPY_MIN_ROWS) store
    every row once, with its own values, ids matched to the right question, defaults filled in."""
    n = 260
    ds = create_dataset(client, "big")
    text = " ".join(f"mot{i}" for i in range(2000))
    docs = [{"external_id": "d1", "text": text}]
    r = client.post(f"/datasets/{ds}/documents", json=docs)
    assert r.status_code == 200, r.text
    questions = [{"external_id": f"q{i:03d}", "question": f"Question {i} ?"} for i in range(n)]
    assert client.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    run = make_run(client, ds)
    # Shuffled so that input order, question id order and output id order all differ.
    order = [(i * 97) % n for i in range(n)]
    outputs = [
        {
            "question_id": f"q{i:03d}",
            "answer": f"réponse {i} « n°{i} »\ttab",
            "generator": {"kind": "external", "model": f"m{i % 3}"},
            "retrieved": [
                {"document_id": "d1", "start": 5 * i, "end": 5 * i + 30, "score": i / 7},
                {"text": f"mot{i + 1} mot{i + 2}"},
            ],
        }
        for i in order
    ]
    r = client.post(f"/runs/{run}/outputs", json=outputs)
    assert r.status_code == 200, r.text
    assert r.json()["created"] == n
    api = ragmeta.Client(http=client)
    stored = {o.question_id: o.model_dump(mode="json") for o in api.all(api.list_outputs, run)}
    assert len(stored) == n
    for i in range(n):
        o = stored[f"q{i:03d}"]
        assert o["answer"] == f"réponse {i} « n°{i} »\ttab"
        assert o["generator"] == {"kind": "external", "model": f"m{i % 3}"}
        c1, c2 = o["retrieved"]
        assert (c1["rank"], c1["document_id"], c1["start"], c1["end"]) == (1, "d1", 5 * i, 5 * i + 30)
        assert c1["score"] == pytest.approx(i / 7) and c1["location"] == "given"
        assert c1["text"] == text[5 * i : 5 * i + 30]
        assert (c2["rank"], c2["text"], c2["location"]) == (2, f"mot{i + 1} mot{i + 2}", "exact")
    assert client.post("/raters", json=[{"name": "alice"}]).status_code in (200, 201)
    ratings = [{"question_id": f"q{i:03d}", "rater": "alice", "score": 1 + i % 5} for i in order]
    r = client.post(f"/runs/{run}/ratings", json=ratings)
    assert r.status_code == 200, r.text
    api = ragmeta.Client(http=client)
    got = {x.question_id: x.score for x in api.all(api.list_ratings, run)}
    assert got == {f"q{i:03d}": 1 + i % 5 for i in range(n)}
    scores = [{"question_id": f"q{i:03d}", "metric": "external.m", "value": i / 3} for i in order]
    r = client.post(f"/runs/{run}/scores", json=scores)
    assert r.status_code == 200, r.text
    table = client.get(f"/runs/{run}/scores").json()
    values = {row["question_id"]: row["external.m"] for row in table["rows"]}
    assert values == pytest.approx({f"q{i:03d}": i / 3 for i in range(n)})
