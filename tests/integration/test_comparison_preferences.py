"""Preference ratings imported from a file (issue 16 item 1) and stale preferences (given on an answer that
has changed since): the pairwise report reads both sources, says which, leaves stale ones out and counts them.
Figures are checked against scipy on the preferences written out here."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats as sps

from app import client as cli
from app.cli import build_parser
from tests.api.helpers import assert_envelope
from tests.api.team import QUESTIONS, Team, all_outputs, make_team
from tests.api.test_outputs import make_run

# Metric values of run A and run B (external.m, higher is better) on q1..q5.
M_A = [0.2, 0.5, 0.6, 0.4, 0.9]
M_B = [0.8, 0.7, 0.3, 0.5, 0.2]
# Imported preferences for run B over run A on -2..2.
P1 = dict(zip(QUESTIONS, [2, 1, -1, 0, -2], strict=True))
P2 = dict(zip(QUESTIONS, [1, 2, -2, 1, -1], strict=True))


def _csv(rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def _rows(rater: str, prefs: dict[str, int], **extra: Any) -> list[dict[str, Any]]:
    return [{"question_id": q, "rater": rater, "preference": p, **extra} for q, p in prefs.items()]


def _post(client: TestClient, a: int, b: int, body: bytes | list[dict[str, Any]]) -> Any:
    params = {"run_a": a, "run_b": b}
    if isinstance(body, bytes):
        return client.post("/preferences", params=params, content=body, headers={"content-type": "text/csv"})
    return client.post("/preferences", params=params, json=body)


@pytest.fixture
def pair(client: TestClient) -> tuple[Team, int, int]:
    """Two runs of one dataset (A = the team's run, B a second one), external.m on both, raters p1..p3."""
    team = make_team(client)
    run_b = make_run(client, team.dataset, "r2")
    assert client.post(f"/runs/{run_b}/outputs", json=all_outputs("Autre réponse")).status_code == 200
    for run, values in ((team.run, M_A), (run_b, M_B)):
        rows = [
            {"question_id": q, "metric": "external.m", "value": v}
            for q, v in zip(QUESTIONS, values, strict=True)
        ]
        assert client.post(f"/runs/{run}/scores", json=rows).status_code == 200
    assert client.post("/raters", json=[{"name": n} for n in ("p1", "p2", "p3")]).status_code == 200
    return team, team.run, run_b


def _report(client: TestClient, a: int, b: int, **extra: Any) -> dict[str, Any]:
    r = client.get("/reports/pairwise", params={"run_a": a, "run_b": b, "n_resamples": 200, **extra})
    assert r.status_code == 200, r.text
    return dict(r.json())


def _pearson(read: dict[str, Any]) -> float:
    return float(next(m for m in read["metrics"] if m["metric"] == "external.m")["pearson"]["estimate"])


def _expected(prefs: list[dict[str, float]], questions: list[str] = QUESTIONS) -> float:
    """Pearson of B - A against the mean preference over raters, on these questions (sorted ids)."""
    qs = sorted(questions)
    mean = np.array([np.mean([p[q] for p in prefs if q in p]) for q in qs])
    delta = np.array([M_B[QUESTIONS.index(q)] - M_A[QUESTIONS.index(q)] for q in qs])
    return float(sps.pearsonr(delta, mean).statistic)


def test_imported_preferences_drive_the_pairwise_report(client: TestClient, pair: Any) -> None:
    _, a, b = pair
    r = _post(client, a, b, _csv(_rows("p1", P1)))
    assert r.status_code == 200, r.text
    assert r.json() | {"notes": []} == {
        "kind": "preferences",
        "received": 5,
        "created": 5,
        "updated": 0,
        "unchanged": 0,
        "invalidated_ratings": 0,
        "invalidated_scores": 0,
        "notes": [],
    }
    # p2 posted for the runs in the other order (JSON): stored mirrored, read back as given.
    mirrored = {q: -p for q, p in P2.items()}
    assert _post(client, b, a, _rows("p2", mirrored)).json()["created"] == 5
    listed = client.get("/preferences", params={"run_a": b, "run_b": a}).json()
    assert {(x["question_id"], x["preference"]) for x in listed if x["rater"] == "p2"} == set(
        mirrored.items()
    )
    assert {(x["question_id"], x["preference"]) for x in listed if x["rater"] == "p1"} == {
        (q, -p) for q, p in P1.items()
    }
    assert all(x["rubric"] == "preference-b-over-a" and not x["stale"] for x in listed)

    read = _report(client, a, b)
    assert read["source"] == "preference_ratings"
    assert read["preferences"] == {"side_by_side": 0, "imported": 10, "stale": 0}
    assert "10 imported from files" in read["source_detail"] and "side by side" not in read["source_detail"]
    assert _pearson(read) == pytest.approx(_expected([P1, P2]), abs=1e-12)
    mean = [np.mean([P1[q], P2[q]]) for q in QUESTIONS]
    assert read["human_prefers_b"] == sum(m > 0 for m in mean)
    assert read["human_prefers_a"] == sum(m < 0 for m in mean)
    flipped = _report(client, b, a)
    assert flipped["human_prefers_a"] == read["human_prefers_b"]
    assert _pearson(flipped) == pytest.approx(_pearson(read), abs=1e-12)


def test_both_sources_are_read_and_named(client: TestClient, pair: Any) -> None:
    team, a, b = pair
    assert _post(client, a, b, _rows("p1", P1)).status_code == 200
    body = {"name": "pair", "mode": "pairwise", "run_id": a, "run_b_id": b, "raters": ["alice"], "seed": 3}
    task = client.post("/tasks", json=body).json()["id"]
    side = dict(zip(QUESTIONS, [1, 0, -2, 2, -1], strict=True))
    for e in team.as_("alice", "GET", f"/tasks/{task}/queue").json()["entries"]:
        v = team.as_("alice", "GET", f"/tasks/{task}/queue/{e['position']}").json()
        # 1..5, 5 = the right answer much better; run B's answers start with "Autre".
        b_on_left = v["answers"][0]["answer"].startswith("Autre")
        label = side[v["question_id"]]
        score = 3 - label if b_on_left else 3 + label
        url = f"/tasks/{task}/queue/{e['position']}"
        assert team.as_("alice", "PUT", url, json={"action": "rate", "score": score}).status_code == 200
    read = _report(client, a, b)
    assert read["preferences"] == {"side_by_side": 5, "imported": 5, "stale": 0}
    assert "5 given side by side in 1 pairwise rating task(s); 5 imported from files" in read["source_detail"]
    assert "by 2 rater(s)" in read["source_detail"]
    assert _pearson(read) == pytest.approx(_expected([P1, side]), abs=1e-12)


def test_reimport_is_idempotent_and_updates_what_changed(client: TestClient, pair: Any) -> None:
    _, a, b = pair
    body = _csv(_rows("p1", P1, comment="vu"))
    assert _post(client, a, b, body).json()["created"] == 5
    again = _post(client, a, b, body).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 5)
    changed = _rows("p1", P1, comment="vu")
    changed[0]["preference"] = -2
    again = _post(client, a, b, changed).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 1, 4)
    stored = client.get("/preferences", params={"run_a": a, "run_b": b}).json()
    assert len(stored) == 5 and next(x for x in stored if x["question_id"] == "q1")["preference"] == -2
    # The same rows for the runs in the other order are the same preferences: mirrored, unchanged.
    mirrored = [{**row, "preference": -row["preference"]} for row in changed]
    again = _post(client, b, a, mirrored).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 5)


def test_a_custom_preference_rubric_is_mapped_to_minus_two_two(client: TestClient, pair: Any) -> None:
    _, a, b = pair
    r = client.post("/rubrics", json={"name": "pref-1-7", "min": 1, "max": 7})
    assert r.status_code == 201
    seven = {q: 4 + p for q, p in P1.items()}  # 1..7, 4 = no preference, 7 = B much better
    r = _post(client, a, b, _rows("p1", seven, rubric="pref-1-7"))
    assert r.status_code == 200, r.text
    # Later rows naming no rubric are on the pair's rubric.
    assert _post(client, a, b, _rows("p2", {q: 4 + p for q, p in P2.items()})).status_code == 200
    read = _report(client, a, b)
    mapped = [{q: 2 * (v - 4) / 3 for q, v in seven.items()}, {q: 2 * p / 3 for q, p in P2.items()}]
    assert _pearson(read) == pytest.approx(_expected(mapped), abs=1e-12)
    body = assert_envelope(_post(client, a, b, _rows("p3", P1, rubric="preference-b-over-a")), 422)
    assert body["items"][0]["field"] == "rubric" and "pref-1-7" in body["items"][0]["reason"]


def _change_answer(client: TestClient, run: int, question: str) -> None:
    outs = all_outputs("Autre réponse")
    for o in outs:
        if o["question_id"] == question:
            o["answer"] = "Une réponse corrigée."
    r = client.post(f"/runs/{run}/outputs", json=outs)
    assert r.status_code == 200, r.text
    rows = [
        {"question_id": q, "metric": "external.m", "value": v} for q, v in zip(QUESTIONS, M_B, strict=True)
    ]
    assert client.post(f"/runs/{run}/scores", json=rows).status_code == 200


def test_preferences_on_a_changed_answer_are_left_out_and_counted(client: TestClient, pair: Any) -> None:
    team, a, b = pair
    assert _post(client, a, b, _rows("p1", P1)).status_code == 200
    assert _post(client, a, b, _rows("p2", P2)).status_code == 200
    body = {"name": "pair", "mode": "pairwise", "run_id": a, "run_b_id": b, "raters": ["alice"], "seed": 3}
    task = client.post("/tasks", json=body).json()["id"]
    for e in team.as_("alice", "GET", f"/tasks/{task}/queue").json()["entries"]:
        url = f"/tasks/{task}/queue/{e['position']}"
        assert team.as_("alice", "PUT", url, json={"action": "rate", "score": 3}).status_code == 200
    assert _report(client, a, b)["preferences"] == {"side_by_side": 5, "imported": 10, "stale": 0}

    _change_answer(client, b, "q3")  # run B's answer to q3 changes: its version moves on
    read = _report(client, a, b)
    assert read["preferences"] == {"side_by_side": 4, "imported": 8, "stale": 3}
    assert read["n_pairs"] == 4
    assert any(
        "3 preference rating(s) were given on an answer that has changed since" in n for n in read["notes"]
    )
    assert "3 given on an answer that has changed since are left out" in read["source_detail"]
    tie = dict.fromkeys(QUESTIONS, 0)
    others = [q for q in QUESTIONS if q != "q3"]
    assert _pearson(read) == pytest.approx(_expected([P1, P2, tie], others), abs=1e-12)
    listed = client.get("/preferences", params={"run_a": a, "run_b": b}).json()
    assert {x["question_id"] for x in listed if x["stale"]} == {"q3"}
    stale = next(x for x in listed if x["stale"])
    assert (stale["output_a_version"], stale["output_b_version"]) == (1, 1)

    # Re-importing restates the file's preferences for the current answers, and says so.
    r = _post(client, a, b, _rows("p1", P1)).json()
    assert (r["updated"], r["unchanged"]) == (1, 4)
    assert r["notes"] == [
        "1 preference(s) were stored for an earlier answer of either run and now apply to the current answers"
    ]
    assert _report(client, a, b)["preferences"] == {"side_by_side": 4, "imported": 9, "stale": 2}
    # Rating the pair again side by side records the new version.
    q3 = next(
        e
        for e in team.as_("alice", "GET", f"/tasks/{task}/queue").json()["entries"]
        if e["question_id"] == "q3"
    )
    url = f"/tasks/{task}/queue/{q3['position']}"
    assert team.as_("alice", "PUT", url, json={"action": "rate", "score": 3}).status_code == 200
    assert _report(client, a, b)["preferences"] == {"side_by_side": 5, "imported": 9, "stale": 1}


def test_only_stale_preferences_fall_back_to_absolute_ratings_and_say_why(
    client: TestClient, pair: Any
) -> None:
    _, a, b = pair
    assert _post(client, a, b, _rows("p1", {"q3": 2})).status_code == 200
    _change_answer(client, b, "q3")
    read = _report(client, a, b)
    assert read["source"] == "absolute_ratings" and read["preferences"]["stale"] == 1
    assert "were all given on an answer that has changed since" in read["source_detail"]
    r = client.get("/reports/pairwise", params={"run_a": a, "run_b": b, "source": "preference"})
    body = assert_envelope(r, 422)
    assert (
        body["items"][0]["field"] == "source"
        and "1 given on answers that changed" in body["items"][0]["reason"]
    )


BAD = {
    # case: (query override, rows, status, field)
    "same run": ({"run_b": "A"}, [{"question_id": "q1", "rater": "p1", "preference": 1}], 422, "run_b"),
    "unknown run a": (
        {"run_a": 999_999},
        [{"question_id": "q1", "rater": "p1", "preference": 1}],
        404,
        "run_a",
    ),
    "unknown run b": (
        {"run_b": 999_999},
        [{"question_id": "q1", "rater": "p1", "preference": 1}],
        404,
        "run_b",
    ),
    "run id out of range": (
        {"run_b": 0},
        [{"question_id": "q1", "rater": "p1", "preference": 1}],
        422,
        "run_b",
    ),
    "run b missing": ({"run_b": None}, [{"question_id": "q1", "rater": "p1", "preference": 1}], 422, "run_b"),
    "other dataset": (
        {"run_b": "OTHER"},
        [{"question_id": "q1", "rater": "p1", "preference": 1}],
        422,
        "run_b",
    ),
    "unknown rater": ({}, [{"question_id": "q1", "rater": "zed", "preference": 1}], 422, "rater"),
    "unknown question": ({}, [{"question_id": "q99", "rater": "p1", "preference": 1}], 422, "question_id"),
    "unanswered question": (
        {"run_b": "PARTIAL"},
        [{"question_id": "q5", "rater": "p1", "preference": 1}],
        422,
        "question_id",
    ),
    "out of scale": ({}, [{"question_id": "q1", "rater": "p1", "preference": 3}], 422, "preference"),
    "not an integer": ({}, [{"question_id": "q1", "rater": "p1", "preference": 1.5}], 422, "preference"),
    "a boolean": ({}, [{"question_id": "q1", "rater": "p1", "preference": True}], 422, "preference"),
    "missing preference": ({}, [{"question_id": "q1", "rater": "p1"}], 422, "preference"),
    "unknown rubric": (
        {},
        [{"question_id": "q1", "rater": "p1", "preference": 1, "rubric": "nope"}],
        422,
        "rubric",
    ),
    "unknown field": ({}, [{"question_id": "q1", "rater": "p1", "preference": 1, "score": 2}], 422, "score"),
    "duplicate row": ({}, [{"question_id": "q1", "rater": "p1", "preference": 1}] * 2, 422, "question_id"),
    "two rubrics": (
        {},
        [
            {"question_id": "q1", "rater": "p1", "preference": 1, "rubric": "preference-b-over-a"},
            {"question_id": "q2", "rater": "p1", "preference": 1, "rubric": "pref-0-4"},
        ],
        422,
        "rubric",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_preference_batches_name_the_field_and_write_nothing(
    client: TestClient, pair: Any, case: str
) -> None:
    team, a, b = pair
    assert client.post("/rubrics", json={"name": "pref-0-4", "min": 0, "max": 4}).status_code == 201
    override, rows, status, field = BAD[case]
    params: dict[str, Any] = {"run_a": a, "run_b": b, **override}
    if params["run_b"] == "A":
        params["run_b"] = a
    elif params["run_b"] == "OTHER":
        ds = client.post("/datasets", json={"name": "other", "language": "fr"}).json()["id"]
        params["run_b"] = make_run(client, ds, "elsewhere")
    elif params["run_b"] == "PARTIAL":
        params["run_b"] = make_run(client, team.dataset, "partial")
        assert client.post(f"/runs/{params['run_b']}/outputs", json=all_outputs()[:4]).status_code == 200
    params = {k: v for k, v in params.items() if v is not None}
    good = [{"question_id": "q4", "rater": "p2", "preference": 0}]  # a good row beside: nothing is written
    r = client.post("/preferences", params=params, json=good + rows)
    body = assert_envelope(r, status)
    assert field in {i["field"].split(".")[-1] for i in body["items"]}, body
    listed = client.get("/preferences", params={"run_a": a, "run_b": b}).json()
    assert listed == []


@pytest.mark.parametrize(
    "case", ["empty body", "whitespace body", "unsupported type", "malformed csv row", "not utf-8"]
)
def test_bad_preference_files(client: TestClient, pair: Any, case: str) -> None:
    _, a, b = pair
    content, ctype, status, field = {
        "empty body": (b"", "application/json", 400, "body"),
        "whitespace body": (b"  \n", "text/csv", 400, "body"),
        "unsupported type": (b"<x/>", "application/xml", 415, "content-type"),
        "malformed csv row": (b"question_id,rater,preference\nq1,p1\n", "text/csv", 422, "preference"),
        "not utf-8": (
            "question_id,rater,preference\nq1,p1,é\n".encode("latin-1"),
            "text/csv",
            422,
            "preference",
        ),
    }[case]
    r = client.post(
        "/preferences", params={"run_a": a, "run_b": b}, content=content, headers={"content-type": ctype}
    )
    body = assert_envelope(r, status)
    if status == 415:  # the reader names the content type it cannot read, and those it can
        assert "application/xml" in body["detail"] and "text/csv" in body["detail"]
    assert field in {i["field"].split(".")[-1] for i in body["items"]}, body


def test_cli_imports_preferences(
    client: TestClient, pair: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = pair
    target = tmp_path / "prefs.csv"
    target.write_bytes(_csv(_rows("newcomer", P1)))

    def run(*argv: str) -> int:
        return cli._dispatch(client, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]

    assert run("prefer", str(a), str(b), str(target)) == 0
    assert "preferences: 5 received, 5 created, 0 updated, 0 unchanged" in capsys.readouterr().out
    assert run("prefer", str(a), str(b), str(target)) == 0
    assert "0 created, 0 updated, 5 unchanged" in capsys.readouterr().out
    assert {x["rater"] for x in client.get("/preferences", params={"run_a": a, "run_b": b}).json()} == {
        "newcomer"
    }
