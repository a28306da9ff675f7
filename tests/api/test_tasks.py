"""Rating tasks: assignment, per-rater order, the queue's actions, isolation between raters, pairwise
preferences, the dashboard and the export; the pages without JavaScript."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.tasks.service import assign
from tests.api.helpers import assert_envelope
from tests.api.team import QUESTIONS, Team, all_outputs, make_team
from tests.api.test_auth import login
from tests.api.test_outputs import make_run


def queue(team: Team, who: str, task: int | None = None) -> dict[str, Any]:
    r = team.as_(who, "GET", f"/tasks/{task or team.task}/queue")
    assert r.status_code == 200, r.text
    return dict(r.json())


def act(team: Team, who: str, position: int, task: int | None = None, **body: Any) -> Any:
    return team.as_(who, "PUT", f"/tasks/{task or team.task}/queue/{position}", json=body)


def ratings(team: Team, who: str = "admin") -> dict[tuple[str, str], dict[str, Any]]:
    r = team.as_(who, "GET", f"/runs/{team.run}/ratings")
    assert r.status_code == 200, r.text
    return {(x["question_id"], x["rater"]): x for x in r.json()}


@pytest.mark.parametrize(("n_units", "n_raters", "k"), [(50, 7, 2), (5, 2, 1), (10, 3, 3), (1, 4, 2)])
def test_balanced_assignment(n_units: int, n_raters: int, k: int) -> None:
    units, raters = list(range(100, 100 + n_units)), list(range(1, n_raters + 1))
    given, seeds = assign(units, raters, k, seed=11)
    per_unit = Counter(u for r in raters for u in given[r])
    assert per_unit == dict.fromkeys(units, k)  # every output gets exactly k distinct raters
    assert all(len(set(given[r])) == len(given[r]) for r in raters)
    loads = [len(given[r]) for r in raters]
    assert max(loads) - min(loads) <= 1
    assert assign(units, raters, k, seed=11) == (given, seeds)  # reproducible from the task's seed
    everyone, _ = assign(units, raters, None, seed=11)
    assert all(sorted(everyone[r]) == units for r in raters)


def test_each_rater_has_a_recorded_order_of_their_own(client: TestClient) -> None:
    team = make_team(client)
    a, b = queue(team, "alice"), queue(team, "bob")
    order_a = [e["question_id"] for e in a["entries"]]
    order_b = [e["question_id"] for e in b["entries"]]
    assert sorted(order_a) == sorted(order_b) == QUESTIONS
    assert order_a != order_b
    task = client.get(f"/tasks/{team.task}").json()
    assert task["seed"] == 7 and len({r["order_seed"] for r in task["raters"]}) == 2
    # the same seed gives the same orders again
    again = client.post(
        "/tasks", json={"name": "again", "run_id": team.run, "raters": ["alice", "bob"], "seed": 7}
    )
    assert [e["question_id"] for e in queue(team, "alice", again.json()["id"])["entries"]] == order_a
    # k per output
    k1 = client.post(
        "/tasks",
        json={"name": "k1", "run_id": team.run, "raters": ["alice", "bob", "carol"], "per_output": 1},
    ).json()
    assigned = [r["assigned"] for r in k1["raters"]]
    assert sum(assigned) == 5 and max(assigned) - min(assigned) <= 1 and k1["n_outputs"] == 5


def test_rate_skip_flag_and_go_back(client: TestClient) -> None:
    team = make_team(client)
    q = queue(team, "alice")
    assert (q["total"], q["done"], q["next_position"]) == (5, 0, 1)
    qid = {e["position"]: e["question_id"] for e in q["entries"]}
    r = act(team, "alice", 1, action="rate", score=4, comment="bien")
    assert r.json() == {"position": 1, "status": "rated", "next_position": 2, "stale": False}
    assert act(team, "alice", 2, action="skip").json()["next_position"] == 3
    assert act(team, "alice", 3, action="flag", reason="réponse coupée").json()["status"] == "flagged"
    before = ratings(team)[(qid[1], "alice")]
    assert (before["score"], before["comment"]) == (4, "bien")
    # back to the first one and change it
    view = team.as_("alice", "GET", f"/tasks/{team.task}/queue/1").json()
    assert (view["score"], view["comment"], view["status"], view["prev_position"]) == (
        4,
        "bien",
        "rated",
        None,
    )
    assert act(team, "alice", 1, action="rate", score=2).status_code == 200
    after = ratings(team)[(qid[1], "alice")]
    assert (
        after["score"] == 2
        and after["created_at"] == before["created_at"]
        and after["updated_at"] > before["updated_at"]
    )
    # flagging a rated item removes its rating; rating a flagged one clears the flag
    act(team, "alice", 4, action="rate", score=5)
    act(team, "alice", 4, action="flag", reason="hors sujet")
    assert (qid[4], "alice") not in ratings(team)
    q = queue(team, "alice")
    assert [e["status"] for e in q["entries"]] == ["rated", "skipped", "flagged", "flagged", "pending"]
    assert q["entries"][2]["flag_reason"] == "réponse coupée" and q["done"] == 3
    assert q["next_position"] == 5
    act(team, "alice", 5, action="rate", score=3)
    assert queue(team, "alice")["next_position"] == 2  # the skipped one comes back at the end
    act(team, "alice", 2, action="rate", score=1)
    assert queue(team, "alice")["next_position"] is None
    assert {k for k in ratings(team) if k[1] == "alice"} == {(qid[p], "alice") for p in (1, 2, 5)}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"action": "rate"}, 422, "score"),
        ({"action": "rate", "score": 6}, 422, "score"),
        ({"action": "rate", "score": 0}, 422, "score"),
        ({"action": "flag"}, 422, "reason"),
        ({"action": "flag", "reason": "   "}, 422, "reason"),
        ({"action": "dance"}, 422, "action"),
        ({"action": "rate", "score": 3, "rater": "bob"}, 422, "rater"),
        ({"action": "rate", "score": 3, "comment": "x" * 5001}, 422, "comment"),
    ],
)
def test_bad_actions(client: TestClient, body: dict[str, Any], status: int, field: str) -> None:
    team = make_team(client)
    r = act(team, "alice", 1, **body)
    items = assert_envelope(r, status)["items"]
    assert items[0]["field"] == field, items
    assert queue(team, "alice")["done"] == 0 and ratings(team) == {}


def test_positions_outside_the_queue(client: TestClient) -> None:
    team = make_team(client)
    for pos in (0, 6, 10**6, 2**70):
        r = team.as_("alice", "GET", f"/tasks/{team.task}/queue/{pos}")
        assert r.status_code in (404, 422), (pos, r.text)
        r = act(team, "alice", pos, action="skip")
        assert r.status_code in (404, 422), (pos, r.text)
    assert_envelope(team.as_("alice", "GET", "/tasks/999/queue"), 404)


def test_a_rater_cannot_read_or_change_another_raters_ratings(client: TestClient) -> None:
    team = make_team(client)
    for pos in range(1, 6):
        act(team, "alice", pos, action="rate", score=5, comment="alice's")
    alice_before = {k: v for k, v in ratings(team).items() if k[1] == "alice"}
    assert len(alice_before) == 5
    # bob's own queue shows his items and nothing of alice's
    q = queue(team, "bob")
    assert all(e["score"] is None and e["status"] == "pending" for e in q["entries"])
    view = team.as_("bob", "GET", f"/tasks/{team.task}/queue/1").json()
    assert view["score"] is None and view["comment"] is None and "alice" not in str(view)
    # rating lists: only his own, whatever query parameter he adds
    for params in ({}, {"rater": "alice"}, {"user": "alice"}, {"rater_id": 1}):
        r = team.as_("bob", "GET", f"/runs/{team.run}/ratings", params=params)
        assert r.status_code == 200 and r.json() == [], params
    # body fields naming alice
    rows = [{"question_id": "q1", "rater": "alice", "score": 1}]
    body = assert_envelope(team.as_("bob", "POST", f"/runs/{team.run}/ratings", json=rows), 403, "Forbidden")
    assert body["items"][0]["field"] == "rater"
    mixed = [{"question_id": "q2", "rater": "bob", "score": 1}, *rows]
    assert team.as_("bob", "POST", f"/runs/{team.run}/ratings", json=mixed).status_code == 403
    csv = b"question_id,rater,score\nq1,alice,1\n"
    r = team.as_("bob", "POST", f"/runs/{team.run}/ratings", files={"file": ("r.csv", csv, "text/csv")})
    assert r.status_code == 403
    assert (
        team.as_(
            "bob", "PUT", f"/tasks/{team.task}/queue/1", json={"action": "rate", "score": 1, "rater": "alice"}
        ).status_code
        == 422
    )
    # rating his own queue never touches alice's ratings (same outputs, own rater)
    for pos in range(1, 6):
        assert act(team, "bob", pos, action="rate", score=1).status_code == 200
    # editor views, exports, reports and rater lists are closed to him
    for url in (
        f"/tasks/{team.task}",
        f"/tasks/{team.task}/dashboard",
        f"/tasks/{team.task}/export",
        f"/tasks/{team.task}/dashboard.html",
        f"/runs/{team.run}/agreement",
        f"/runs/{team.run}/report",
        f"/runs/{team.run}/scores",
        f"/runs/{team.run}/outputs",
        "/raters",
        "/tasks",
        "/users",
    ):
        assert team.as_("bob", "GET", url).status_code == 403, url
    # a task he is not in (carol's), guessed by id
    other = client.post("/tasks", json={"name": "carol's", "run_id": team.run, "raters": ["carol"]}).json()[
        "id"
    ]
    for method, url, kw in (
        ("GET", f"/tasks/{other}/queue", {}),
        ("GET", f"/tasks/{other}/queue/1", {}),
        ("PUT", f"/tasks/{other}/queue/1", {"json": {"action": "rate", "score": 1}}),
        ("GET", f"/rate/{other}", {}),
        ("GET", f"/rate/{other}/1", {}),
    ):
        assert team.as_("bob", method, url, **kw).status_code == 403, url
    # the undo routes: deleting alice's ratings (or anything of the run) is not his to do
    for url, params in (
        (f"/runs/{team.run}/ratings", {"rater": "alice"}),
        (f"/runs/{team.run}", {"cascade": "true"}),
        (f"/datasets/{team.dataset}", {"cascade": "true"}),
    ):
        assert team.as_("bob", "DELETE", url, params=params).status_code == 403, url
    alice_after = {k: v for k, v in ratings(team).items() if k[1] == "alice"}
    assert alice_after == alice_before
    assert {k[1] for k in ratings(team)} == {"alice", "bob"}
    assert [x["rater"] for x in team.as_("bob", "GET", f"/runs/{team.run}/ratings").json()] == ["bob"] * 5


def test_raters_post_their_own_ratings_editors_import_anyones(client: TestClient) -> None:
    team = make_team(client)
    own = [{"question_id": "q1", "rater": "alice", "score": 4}]
    r = team.as_("alice", "POST", f"/runs/{team.run}/ratings", json=own)
    assert r.status_code == 200 and r.json()["created"] == 1
    # carol has no task on this run
    carol = [{"question_id": "q1", "rater": "carol", "score": 4}]
    assert_envelope(team.as_("carol", "POST", f"/runs/{team.run}/ratings", json=carol), 403)
    assert_envelope(team.as_("carol", "GET", f"/runs/{team.run}/ratings"), 403)
    # editors import files naming any registered rater
    client.post("/raters", json=[{"name": "external-1"}])
    rows = [
        {"question_id": "q2", "rater": "alice", "score": 2},
        {"question_id": "q2", "rater": "external-1", "score": 3},
    ]
    assert team.as_("edith", "POST", f"/runs/{team.run}/ratings", json=rows).json()["created"] == 2
    assert_envelope(team.as_("victor", "POST", f"/runs/{team.run}/ratings", json=rows), 403)


def test_what_raters_are_shown(client: TestClient) -> None:
    team = make_team(client)
    view = team.as_("alice", "GET", f"/tasks/{team.task}/queue/1").json()
    assert view["reference_answer"] is None  # hidden by default
    assert [c["text"] for c in view["answers"][0]["contexts"]][0].startswith("Premier contexte")
    assert set(view) == {
        "task_id",
        "task",
        "mode",
        "position",
        "total",
        "done",
        "status",
        "question_id",
        "question",
        "reference_answer",
        "answers",
        "rubric",
        "score",
        "comment",
        "flag_reason",
        "prev_position",
        "next_position",
    }  # no metric score, no other rater
    shown = client.post(
        "/tasks",
        json={
            "name": "shown",
            "run_id": team.run,
            "raters": ["alice"],
            "show_reference": True,
            "show_contexts": False,
        },
    ).json()["id"]
    views = [team.as_("alice", "GET", f"/tasks/{shown}/queue/{p}").json() for p in range(1, 6)]
    assert all(v["answers"][0]["contexts"] is None for v in views)
    by_q = {v["question_id"]: v for v in views}
    assert by_q["q1"]["reference_answer"] == "9,99 € par mois." and by_q["q4"]["reference_answer"] is None


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"raters": ["nobody"]}, 422, "raters"),
        ({"raters": ["victor"]}, 422, "raters"),
        ({"raters": ["alice", "alice"]}, 422, "raters"),
        ({"raters": []}, 422, "raters"),
        ({"per_output": 3}, 422, "per_output"),
        ({"per_output": 0}, 422, "per_output"),
        ({"mode": "pairwise"}, 422, "run_b_id"),
        ({"run_b_id": 1}, 422, "run_b_id"),
        ({"rubric": "nope"}, 422, "rubric"),
        ({"run_id": 999}, 404, None),
        ({"name": "study"}, 409, "name"),
        ({"seed": -1}, 422, "seed"),
        ({"mode": "triple"}, 422, "mode"),
    ],
)
def test_bad_tasks(client: TestClient, change: dict[str, Any], status: int, field: str | None) -> None:
    team = make_team(client)
    body = {"name": "other", "run_id": team.run, "raters": ["alice", "bob"], **change}
    r = client.post("/tasks", json=body)
    env = assert_envelope(r, status)
    if field:
        assert env["items"] and env["items"][0]["field"] == field, env
    assert len(client.get("/tasks").json()) == 1


def test_task_rubric_must_match_the_runs_ratings(client: TestClient) -> None:
    team = make_team(client)
    client.post("/rubrics", json={"name": "0-3", "min": 0, "max": 3})
    act(team, "alice", 1, action="rate", score=5)
    r = client.post("/tasks", json={"name": "x", "run_id": team.run, "raters": ["bob"], "rubric": "0-3"})
    assert assert_envelope(r, 409)["items"][0]["field"] == "rubric"
    # a run without ratings can be rated on another scale, and the task's range is what raters use
    run2 = make_run(client, team.dataset, "r2")
    client.post(f"/runs/{run2}/outputs", json=all_outputs())
    t = client.post("/tasks", json={"name": "x", "run_id": run2, "raters": ["bob"], "rubric": "0-3"}).json()[
        "id"
    ]
    assert act(team, "bob", 1, task=t, action="rate", score=0).status_code == 200
    assert act(team, "bob", 2, task=t, action="rate", score=4).status_code == 422


def _rate_all(team: Team, who: str, scores: dict[str, int], task: int | None = None) -> None:
    for e in queue(team, who, task)["entries"]:
        assert (
            act(
                team, who, e["position"], task=task, action="rate", score=scores[e["question_id"]]
            ).status_code
            == 200
        )


def test_dashboard_agreement_and_export(client: TestClient) -> None:
    team = make_team(client)
    empty = client.get(f"/tasks/{team.task}/dashboard").json()
    assert empty["agreement"]["n_items_used"] == 0 and "two" in empty["agreement"]["undefined_reason"]
    _rate_all(team, "alice", {"q1": 5, "q2": 4, "q3": 3, "q4": 2, "q5": 1})
    _rate_all(team, "bob", {"q1": 5, "q2": 4, "q3": 1, "q4": 2, "q5": 2})
    d = client.get(f"/tasks/{team.task}/dashboard", params={"threshold": 2}).json()
    assert [(x["question_id"], x["spread"], x["scores"]) for x in d["disagreements"]] == [
        ("q3", 2, {"alice": 3, "bob": 1})
    ]
    assert [r["rated"] for r in d["task"]["raters"]] == [5, 5]
    # the same figures as the run's agreement endpoint (the task holds all of the run's ratings here)
    run_alpha = client.get(f"/runs/{team.run}/agreement").json()["result"]["alpha"]["ordinal"]["estimate"]
    assert d["agreement"]["alpha_ordinal"]["estimate"] == pytest.approx(run_alpha)
    assert d["agreement"]["icc_a1"]["estimate"] is not None and d["agreement"]["n_items_used"] == 5
    assert (
        len(client.get(f"/tasks/{team.task}/dashboard", params={"threshold": 1}).json()["disagreements"]) == 2
    )
    assert_envelope(client.get(f"/tasks/{team.task}/dashboard", params={"threshold": 0}), 422)
    # the page prints no interval from 5 outputs (the JSON above has them), and says why
    page = client.get(f"/tasks/{team.task}/dashboard.html").text
    alpha_row = page.split("Krippendorff's α (ordinal)</th><td>")[1].split("</td>")[0]
    assert "[" not in alpha_row and "too few for a useful interval" in page
    assert d["agreement"]["alpha_ordinal"]["ci_low"] is not None
    # export: JSON and CSV in the import's format; importing it back changes nothing
    rows = client.get(f"/tasks/{team.task}/export").json()
    assert len(rows) == 10 and rows[0]["rubric"] == "default-1-5"
    csv = client.get(f"/tasks/{team.task}/export", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0] == "question_id,rater,score,rubric,comment"
    r = client.post(f"/runs/{team.run}/ratings", files={"file": ("r.csv", csv.content, "text/csv")})
    assert r.status_code == 200, r.text
    assert (r.json()["created"], r.json()["unchanged"]) == (0, 10)


def test_pairwise_preferences(client: TestClient) -> None:
    team = make_team(client)
    run_b = make_run(client, team.dataset, "r2")
    client.post(f"/runs/{run_b}/outputs", json=all_outputs("Autre réponse"))
    body = {
        "name": "pair",
        "mode": "pairwise",
        "run_id": team.run,
        "run_b_id": run_b,
        "raters": ["alice", "bob"],
        "seed": 3,
    }
    task = client.post("/tasks", json=body).json()
    assert task["rubric"]["name"] == "preference-1-5" and task["n_outputs"] == 5
    sides = []
    for e in queue(team, "alice", task["id"])["entries"]:
        v = team.as_("alice", "GET", f"/tasks/{task['id']}/queue/{e['position']}").json()
        left, right = v["answers"]
        assert (left["side"], right["side"]) == ("left", "right")
        a_on_left = left["answer"].startswith("Réponse")
        sides.append(a_on_left)
        # always prefer run A's answer, whichever side it is shown on
        act(team, "alice", e["position"], task=task["id"], action="rate", score=1 if a_on_left else 5)
        assert team.as_("alice", "GET", f"/tasks/{task['id']}/queue/{e['position']}").json()["score"] == (
            1 if a_on_left else 5
        )
    assert len(set(sides)) == 2  # the order is randomised per item
    rows = client.get(f"/tasks/{task['id']}/export").json()
    assert {(r["score"], r["run_a"], r["run_b"]) for r in rows} == {(1, team.run, run_b)}
    assert ratings(team) == {}  # preferences are not pointwise ratings
    _rate_all(team, "bob", dict.fromkeys(QUESTIONS, 3), task["id"])
    d = client.get(f"/tasks/{task['id']}/dashboard", params={"threshold": 2}).json()
    assert len(d["disagreements"]) == 5 and d["agreement"]["n_items_used"] == 5


def test_pages_work_without_javascript(client: TestClient) -> None:
    team = make_team(client)
    browser = TestClient(client.app)
    assert browser.get("/rate", follow_redirects=False).headers["location"] == "/login?next=/rate"
    r = login(browser, "alice", team.keys["alice"])
    assert r.headers["location"] == "/rate"
    tasks_page = browser.get("/rate").text
    assert "study" in tasks_page and "0 of 5 done" in tasks_page
    page = browser.get(f"/rate/{team.task}").text
    assert "Start rating" in page and page.count('class="status pending"') == 5
    item = browser.get(f"/rate/{team.task}/1")
    assert item.status_code == 200
    html = item.text
    assert html.count('type="radio" name="score"') == 5 and '<details class="contexts">' in html
    assert (
        'data-key="1"' in html
        and "/static/rate.js" in html
        and "http://" not in html
        and "https://" not in html
    )
    csrf = html.split('name="csrf" value="')[1].split('"')[0]
    # no score chosen: the page comes back with a message, nothing stored
    r = browser.post(f"/rate/{team.task}/1", data={"csrf": csrf, "action": "rate"})
    assert r.status_code == 422 and "give a score" in r.text
    r = browser.post(
        f"/rate/{team.task}/1",
        data={"csrf": csrf, "action": "rate", "score": "4", "comment": "ok"},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == f"/rate/{team.task}/2"
    r = browser.post(
        f"/rate/{team.task}/2",
        data={"csrf": csrf, "action": "flag", "reason": "illisible"},
        follow_redirects=False,
    )
    assert r.headers["location"] == f"/rate/{team.task}/3"
    back = browser.get(f"/rate/{team.task}/2").text
    assert "You flagged this one" in back and "illisible" in back and f'href="/rate/{team.task}/1"' in back
    assert (
        browser.get("/static/rate.js").status_code == 200
        and browser.get("/static/ragmeta.css").status_code == 200
    )
    assert [e["status"] for e in queue(team, "alice")["entries"]][:2] == ["rated", "flagged"]
    # the dashboard page is for editors and viewers
    assert browser.get(f"/tasks/{team.task}/dashboard.html").status_code == 403
    editor = TestClient(client.app)
    login(editor, "edith", team.keys["edith"])
    dash = editor.get(f"/tasks/{team.task}/dashboard.html").text
    assert "Agreement so far" in dash and "alice" in dash and "Export ratings (CSV)" in dash
