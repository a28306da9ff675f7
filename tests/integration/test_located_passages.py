"""Gold passages given as text: how each was located is returned by question, and a fuzzy match that changes
a word is named (a warning the runs' reports repeat, or with fuzzy_word_changes=error a refusal)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests import studydata

ITEMS = studydata.items()[:4]


def _changed(text: str) -> tuple[str, str, str]:
    """The text with one word changed (a change of meaning), the word and its replacement."""
    assert " thirty " in text
    return text.replace(" thirty ", " forty "), "thirty", "forty"


CHANGED, OLD_WORD, NEW_WORD = _changed(ITEMS[2].gold)
GOLD = {
    ITEMS[0].question_id: ITEMS[0].gold,  # verbatim: exact
    ITEMS[1].question_id: ITEMS[1].gold.lower(),  # case only: fuzzy, no word changed
    ITEMS[2].question_id: CHANGED,  # one word changed: fuzzy, the word named
    ITEMS[3].question_id: ITEMS[3].gold.replace(" ", "\u00a0 ", 1),  # spacing only: normalised
}


def study_file() -> bytes:
    rows = [
        {
            "question_id": it.question_id,
            "question": it.question,
            "reference_answer": it.reference,
            "answer": it.answer,
            "retrieved_contexts": it.contexts,
            "gold_passages": [GOLD[it.question_id]],
        }
        for it in ITEMS
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def post(client: TestClient, **data: Any) -> Any:
    files = {"file": ("study.jsonl", study_file()), "corpus": ("corpus.jsonl", studydata.corpus_jsonl())}
    return client.post(
        "/studies/import", files=files, data={"dataset": "located", "format": "mapped", **data}
    )


def test_the_import_lists_each_passage_not_found_verbatim_with_the_words_that_differ(
    client: TestClient,
) -> None:
    r = post(client)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["fuzzy_word_changes"] == "warn"
    assert (body["passages"]["exact"], body["passages"]["fuzzy"], body["passages"]["normalized"]) == (1, 2, 1)
    listed = {lp["question_id"]: lp for lp in body["located_passages"]}
    assert set(listed) == {ITEMS[1].question_id, ITEMS[2].question_id, ITEMS[3].question_id}
    case_only, changed, spacing = (listed[it.question_id] for it in ITEMS[1:])
    assert case_only["location"] == "fuzzy" and case_only["word_changes"] == []
    assert spacing["location"] == "normalized" and spacing["word_changes"] == []
    assert changed["location"] == "fuzzy" and changed["match_score"] >= 90
    assert changed["word_changes"] == [{"given": NEW_WORD, "corpus": OLD_WORD}]
    assert changed["passage"] == 0 and changed["document_id"]
    [note] = [n for n in body["notes"] if "changes words" in n]
    assert ITEMS[2].question_id in note and OLD_WORD in note and NEW_WORD in note
    # the report of the run repeats it
    report = client.get(f"/runs/{body['run']['id']}/report").json()
    assert note in report["agreement"]["notes"]


def test_fuzzy_word_changes_error_refuses_naming_the_question_and_the_words(client: TestClient) -> None:
    r = post(client, fuzzy_word_changes="error")
    assert r.status_code == 422, r.text
    items = r.json()["items"]
    assert len(items) == 1, items
    [item] = items
    assert item["field"] == "gold_passages[0]"
    assert ITEMS[2].question_id in item["reason"] and repr(OLD_WORD) in item["reason"]
    assert repr(NEW_WORD) in item["reason"]
    # nothing was written
    assert [d for d in client.get("/datasets").json() if d["name"] == "located"] == []
    bad = post(client, fuzzy_word_changes="maybe")
    assert bad.status_code == 422 and bad.json()["items"][0]["field"] == "fuzzy_word_changes"


def test_the_questions_api_returns_how_each_passage_was_located_and_takes_it_back(
    client: TestClient,
) -> None:
    body = post(client).json()
    ds = body["dataset"]["id"]
    exported = client.get(f"/datasets/{ds}/questions").json()
    how = {
        q["external_id"]: (q["passages"][0]["location"], q["passages"][0]["match_score"]) for q in exported
    }
    assert how[ITEMS[0].question_id] == ("exact", 100.0)
    assert how[ITEMS[3].question_id] == ("normalized", 100.0)
    assert how[ITEMS[1].question_id][0] == "fuzzy" and how[ITEMS[2].question_id][0] == "fuzzy"
    score = next(
        lp["match_score"] for lp in body["located_passages"] if lp["question_id"] == ITEMS[2].question_id
    )
    assert how[ITEMS[2].question_id][1] == score
    lines = client.get(f"/datasets/{ds}/questions", params={"format": "jsonl"}).text.splitlines()
    assert [json.loads(x) for x in lines] == exported
    # the export is an import: unchanged over itself, and a copy keeps how the passages were located
    back = client.post(f"/datasets/{ds}/questions", json=exported)
    assert back.status_code == 200, back.text
    assert back.json()["unchanged"] == 4
    copy = client.post("/datasets", json={"name": "copy", "language": "en"}).json()["id"]
    docs = client.get(f"/datasets/{ds}/documents").json()
    assert client.post(f"/datasets/{copy}/documents", json=docs).status_code == 200
    assert client.post(f"/datasets/{copy}/questions", json=exported).status_code == 200
    assert client.get(f"/datasets/{copy}/questions").json() == exported


def test_a_match_score_without_a_located_passage_is_refused_naming_the_field(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "d", "language": "en"}).json()["id"]
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "a", "text": "some words here"}])
    q = {
        "external_id": "q",
        "question": "what?",
        "passages": [{"document_id": "a", "start": 0, "end": 4, "match_score": 95.0}],
    }
    r = client.post(f"/datasets/{ds}/questions", json=[q])
    assert r.status_code == 422
    assert r.json()["items"][0]["field"].startswith("passages[0]")
    q["passages"][0]["location"] = "telepathy"  # type: ignore[index]
    r = client.post(f"/datasets/{ds}/questions", json=[q])
    assert r.status_code == 422 and "passages[0].location" in r.text
