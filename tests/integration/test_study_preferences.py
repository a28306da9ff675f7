"""Pairwise preferences in the one-step study import: two runs and the raters' preferences between their
answers in one command; what cannot be placed is refused naming the file, line and field, nothing written;
deleting the dataset takes the preferences with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from services.models import Preference
from tests import studydata
from tests.integration.test_study_ratings import cli


def ragas_jsonl(worse: bool = False) -> bytes:
    """Ragas rows (no ids) of the study's answers; ``worse``: every other answer replaced by a refusal."""
    rows = []
    for n, it in enumerate(studydata.items()):
        answer = "I do not know." if worse and n % 2 else it.answer
        rows.append(
            {
                "user_input": it.question,
                "response": answer,
                "retrieved_contexts": it.contexts,
                "reference": it.reference,
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def preference(rater: str, n: int) -> int:
    """The rater's preference for run B on the n-th question, on -2..2."""
    return (n % 5) - 2 if rater == "alice" else ((3 * n + 1) % 5) - 2


def preference_sheet(reverse_bob: bool = False) -> bytes:
    """The team's sheet, keyed by question text; bob's rows given for the pair (B, A) when ``reverse_bob``."""
    lines = ["question,rater,preference,run_a,run_b,comment"]
    for n, it in enumerate(studydata.items()):
        lines.append(f'"{it.question}",alice,{preference("alice", n)},sys_a,sys_b,')
        if reverse_bob:
            lines.append(f'"{it.question}",bob,{-preference("bob", n)},sys_b,sys_a,given reversed')
        else:
            lines.append(f'"{it.question}",bob,{preference("bob", n)},sys_a,sys_b,')
    return ("\n".join(lines) + "\n").encode()


def write_files(tmp_path: Path, sheet: bytes) -> tuple[Path, Path, Path, Path]:
    a, b = tmp_path / "sys_a.jsonl", tmp_path / "sys_b.jsonl"
    a.write_bytes(ragas_jsonl())
    b.write_bytes(ragas_jsonl(worse=True))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(studydata.corpus_jsonl())
    prefs = tmp_path / "prefs.csv"
    prefs.write_bytes(sheet)
    return a, b, corpus, prefs


def count_preferences(engine: Engine) -> int:
    with Session(engine) as s:
        return int(s.scalar(select(func.count()).select_from(Preference)) or 0)


def test_one_command_imports_two_runs_and_their_preferences_then_undo(
    client: TestClient, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, corpus, prefs = write_files(tmp_path, preference_sheet(reverse_bob=True))
    cli(client, "import-study", "shop", str(a), str(b), "--corpus", str(corpus), "--preferences", str(prefs))
    out = capsys.readouterr().out
    n_items = len(studydata.items())
    assert f"preferences: {2 * n_items} created ({2 * n_items} for 'sys_a' vs 'sys_b')" in out, out
    assert "2 rater(s) registered from the preferences: alice, bob" in out, out
    [dataset] = client.get("/datasets").json()
    runs = {r["name"]: r["id"] for r in client.get(f"/datasets/{dataset['id']}/runs").json()}
    questions = client.get(f"/datasets/{dataset['id']}/questions").json()
    by_text = {q["question"]: q["external_id"] for q in questions}
    listed = client.get("/preferences", params={"run_a": runs["sys_a"], "run_b": runs["sys_b"]})
    assert listed.status_code == 200, listed.text
    got = {(p["question_id"], p["rater"]): p["preference"] for p in listed.json()}
    # bob's rows were given for (B, A): stored mirrored, read back for (A, B) as the preference for B.
    want = {
        (by_text[it.question], rater): preference(rater, n)
        for n, it in enumerate(studydata.items())
        for rater in ("alice", "bob")
    }
    assert got == want
    assert all(p["rubric"] == "preference-b-over-a" and not p["stale"] for p in listed.json())
    assert {r["name"] for r in client.get("/raters").json()} == {"alice", "bob"}

    # The pairwise report reads them: per question the mean over the raters, 0 = no preference.
    report = client.get(
        "/reports/pairwise", params={"run_a": runs["sys_a"], "run_b": runs["sys_b"], "source": "preference"}
    )
    assert report.status_code == 200, report.text
    body = report.json()
    means = [(preference("alice", n) + preference("bob", n)) / 2 for n in range(n_items)]
    assert body["n_pairs"] == n_items
    assert body["human_prefers_b"] == sum(m > 0 for m in means)
    assert body["human_prefers_a"] == sum(m < 0 for m in means)
    assert body["n_human_ties"] == sum(m == 0 for m in means)

    # Undo: the dataset goes with its runs' preferences.
    assert count_preferences(engine) == 2 * n_items
    deleted = client.delete(f"/datasets/{dataset['id']}", params={"cascade": True})
    assert deleted.status_code == 200, deleted.text
    assert count_preferences(engine) == 0
    assert (
        client.get("/preferences", params={"run_a": runs["sys_a"], "run_b": runs["sys_b"]}).status_code == 404
    )


def _import(client: TestClient, tmp_path: Path, sheet: bytes, name: str = "prefs.csv", **data: Any) -> Any:
    a, b, corpus, _ = write_files(tmp_path, sheet)
    files = [
        ("file", ("sys_a.jsonl", a.read_bytes())),
        ("file", ("sys_b.jsonl", b.read_bytes())),
        ("corpus", ("corpus.jsonl", corpus.read_bytes())),
        ("preferences", (name, sheet)),
    ]
    return client.post("/studies/import", files=files, data={"dataset": "shop", **data})


Q1 = studydata.items()[0].question
BAD = {
    "unknown question": (
        f'question,rater,preference\n"{Q1}",alice,1\n"No such question?",bob,1\n',
        "question",
        3,
    ),
    "unknown run": (f'question,rater,preference,run_a,run_b\n"{Q1}",alice,1,sys_a,sys_c\n', "run_b", 2),
    "same run twice": (f'question,rater,preference,run_a,run_b\n"{Q1}",alice,1,sys_a,sys_a\n', "run_b", 2),
    "outside the scale": (f'question,rater,preference\n"{Q1}",alice,3\n', "preference", 2),
    "not a number": (f'question,rater,preference\n"{Q1}",alice,beaucoup\n', "preference", 2),
    "a row twice": (
        f'question,rater,preference,run_a,run_b\n"{Q1}",alice,1,sys_a,sys_b\n"{Q1}",alice,-1,sys_b,sys_a\n',
        "question_id",
        3,
    ),
    "unknown rubric": (f'question,rater,preference,rubric\n"{Q1}",alice,1,nope\n', "rubric", 2),
    "no preference column": (f'question,rater,choice\n"{Q1}",alice,1\n', "preference", None),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_preferences_name_the_file_line_and_field_and_nothing_is_written(
    client: TestClient, engine: Engine, tmp_path: Path, case: str
) -> None:
    sheet, field, line = BAD[case]
    r = _import(client, tmp_path, sheet.encode())
    assert r.status_code == 422, r.text
    items = r.json()["items"]
    assert any(i["field"] == f"preferences (prefs.csv).{field}" and i.get("line") == line for i in items), (
        items
    )
    assert client.get("/datasets").json() == [] and client.get("/raters").json() == []
    assert count_preferences(engine) == 0


def test_a_ratings_sheet_in_the_preferences_field_is_named_as_such(
    client: TestClient, tmp_path: Path
) -> None:
    r = _import(client, tmp_path, b"question_id,rater,score\nq01,alice,3\n", name="notes.csv")
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "WrongKind" and "notes.csv" in body["detail"], body
    assert "this looks like a ratings file" in body["detail"] and "not pairwise preferences" in body["detail"]
    assert "POST /runs/{id}/ratings" in body["detail"]
    assert body["items"][0]["field"] == "preferences (notes.csv).(file)"
    assert client.get("/datasets").json() == []


def test_preferences_need_two_runs_and_a_pair_when_there_are_more(client: TestClient, tmp_path: Path) -> None:
    a, _, corpus, _ = write_files(tmp_path, b"")
    sheet = f'question,rater,preference\n"{Q1}",alice,1\n'.encode()
    one = client.post(
        "/studies/import",
        files=[("file", ("sys_a.jsonl", a.read_bytes())), ("preferences", ("prefs.csv", sheet))],
        data={"dataset": "shop"},
    )
    assert one.status_code == 422 and one.json()["items"][0]["field"] == "preferences", one.text
    three = [("file", (f"sys_{x}.jsonl", a.read_bytes())) for x in "abc"]
    r = client.post(
        "/studies/import",
        files=[*three, ("corpus", ("c.jsonl", corpus.read_bytes())), ("preferences", ("prefs.csv", sheet))],
        data={"dataset": "shop"},
    )
    assert r.status_code == 422, r.text
    [item] = r.json()["items"]
    assert item["field"] == "preferences (prefs.csv).run_a" and item["line"] == 2
    assert "'sys_a', 'sys_b', 'sys_c'" in item["reason"]
    assert client.get("/datasets").json() == []


def test_mapped_columns_and_an_explicit_rubric(client: TestClient, tmp_path: Path) -> None:
    assert client.post("/rubrics", json={"name": "ab-7", "min": 1, "max": 7}).status_code in (200, 201)
    lines = ["Question;Évaluateur;Choix;Grille"] + [
        f"{it.question};claire;{1 + n % 7};ab-7" for n, it in enumerate(studydata.items())
    ]
    sheet = ("\r\n".join(lines) + "\r\n").encode("cp1252")
    mapping = {"question": "Question", "rater": "Évaluateur", "preference": "Choix", "rubric": "Grille"}
    r = _import(client, tmp_path, sheet, preferences_columns=json.dumps(mapping))
    assert r.status_code == 201, r.text
    info = r.json()["preferences"]
    assert info["created"] == len(studydata.items()) and info["raters_created"] == ["claire"]
    assert info["pairs"] == [
        {"run_a": "sys_a", "run_b": "sys_b", "rubric": "ab-7", "created": len(studydata.items())}
    ]
    runs = {x["name"]: x["id"] for x in r.json()["runs"]}
    # Read for (B, A), a preference p on 1..7 is 8 - p.
    back = client.get("/preferences", params={"run_a": runs["sys_b"], "run_b": runs["sys_a"]}).json()
    assert sorted(p["preference"] for p in back) == sorted(8 - (1 + n % 7) for n in range(len(back)))
