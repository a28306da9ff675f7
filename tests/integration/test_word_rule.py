"""The word rule of the word-level reference metrics: documented in the catalogue, chosen per scoring job,
recorded with each score, and part of what makes a stored score "already computed"."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import create_dataset
from tests.integration.test_scoring import drain

TEXT = "Licence terms. The royalty-free licence means you're free to copy it. Nothing else applies."
PASSAGE = "The royalty-free licence means you're free to copy it."
CHUNK = "terms. The royalty-free licence"
METRICS = ["ref.word_recall", "ref.word_precision"]

# The two rules as a team would write them, independently of the service's code.
PLAIN = {"joined": r"\w+(?:['\u2019\-\u2010\u2011]\w+)*", "w_runs": r"\w+"}


def expected(rule: str) -> tuple[float, float]:
    """(recall, precision) recomputed with plain ``re``: words by position, a word counts when its span
    overlaps the other span."""
    p0, c0 = TEXT.index(PASSAGE), TEXT.index(CHUNK)
    p1, c1 = p0 + len(PASSAGE), c0 + len(CHUNK)

    def words(start: int, end: int) -> list[tuple[int, int]]:
        return [(start + m.start(), start + m.end()) for m in re.finditer(PLAIN[rule], TEXT[start:end])]

    passage_words, chunk_words = words(p0, p1), words(c0, c1)
    recall = sum(1 for s, e in passage_words if s < c1 and c0 < e) / len(passage_words)
    precision = sum(1 for s, e in chunk_words if s < p1 and p0 < e) / len(chunk_words)
    return recall, precision


def licence_run(client: TestClient) -> int:
    ds = create_dataset(client, "licences", language="en")
    r = client.post(f"/datasets/{ds}/documents", json=[{"external_id": "lic", "title": "L", "text": TEXT}])
    assert r.status_code == 200, r.text
    start = TEXT.index(PASSAGE)
    question = {
        "external_id": "L01",
        "question": "May I copy it?",
        "reference_answer": "Yes, it is royalty-free.",
        "types": [],
        "passages": [{"document_id": "lic", "start": start, "end": start + len(PASSAGE)}],
    }
    assert client.post(f"/datasets/{ds}/questions", json=[question]).status_code == 200
    r = client.post(f"/datasets/{ds}/runs", json={"name": "r", "system": {"retriever": "external"}})
    assert r.status_code == 201, r.text
    run = int(r.json()["id"])
    c = TEXT.index(CHUNK)
    output = {
        "question_id": "L01",
        "answer": "Yes.",
        "retrieved": [{"document_id": "lic", "start": c, "end": c + len(CHUNK)}],
    }
    assert client.post(f"/runs/{run}/outputs", json=[output]).status_code == 200
    return run


def score(client: TestClient, run: int, **body: Any) -> dict[str, Any]:
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS, **body})
    assert r.status_code == 202, r.text
    drain(client)
    return dict(client.get(f"/jobs/{r.json()['id']}").json())


def test_the_two_word_rules_give_their_documented_values_and_are_recorded(client: TestClient) -> None:
    joined, w_runs = expected("joined"), expected("w_runs")
    # the example is one where the rules disagree: "royalty-free" and "you're" are one word or two
    assert joined == (3 / 9, 3 / 4) and w_runs == (4 / 11, 4 / 5)
    run = licence_run(client)
    first = score(client, run)  # the default rule
    assert (first["done"], first["failed"]) == (2, 0)
    # the other rule is not "already computed": its scores are computed, not the stored ones reused
    again = score(client, run, word_rule="w_runs")
    assert again["total"] == 2 and again["summary"]["skipped_already_computed"] == 0
    # and the same rule again is
    same = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS, "word_rule": "w_runs"}).json()
    assert same["total"] == 0 and same["summary"]["skipped_already_computed"] == 2
    table = client.get(f"/runs/{run}/scores").json()
    (row,) = table["rows"]
    got: dict[str, dict[str, float]] = {}
    for column, config in table["configs"].items():
        metric = column.partition("[")[0]
        got.setdefault(config["word_rule"], {})[metric] = row[column]
        assert config["k"] == 5
    assert got["joined"]["ref.word_recall@5"] == joined[0]
    assert got["joined"]["ref.word_precision@5"] == joined[1]
    assert got["w_runs"]["ref.word_recall@5"] == w_runs[0]
    assert got["w_runs"]["ref.word_precision@5"] == w_runs[1]


def test_an_unknown_word_rule_is_refused_naming_the_field(client: TestClient) -> None:
    run = licence_run(client)
    r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": METRICS, "word_rule": "spaces"})
    assert r.status_code == 422
    assert any(item["field"].endswith("word_rule") for item in r.json()["items"]), r.text


def test_the_catalogue_describes_the_word_rule_with_examples(client: TestClient) -> None:
    cat = {m["name"]: m["description"] for m in client.get("/metrics").json()}
    for name in ("ref.word_recall", "ref.word_precision"):
        assert "royalty-free" in cat[name] and "you're" in cat[name], cat[name]
        assert "'joined' (default)" in cat[name] and "'w_runs'" in cat[name]
    assert "word_rule" not in cat["ref.doc_recall"]
