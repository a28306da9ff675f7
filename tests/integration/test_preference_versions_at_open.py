"""A side-by-side preference is recorded on the answers the rater was shown: the item is served with each
answer's version, the client sends them back, and an answer that changed between opening and submitting
leaves the preference stale in the pairwise report (it was given on the earlier text). Without the versions
(older clients) the current ones are recorded, as before. Versions an answer never had are refused, naming
the field; so are malformed ones, through the API and through the rating page."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.models import Question, TaskItem
from tests.api.helpers import assert_envelope
from tests.api.team import QUESTIONS, Team, all_outputs, make_team
from tests.api.test_auth import login
from tests.api.test_outputs import make_run
from tests.integration.test_comparison_preferences import M_A, M_B, _change_answer, _report


@pytest.fixture
def pair(client: TestClient) -> tuple[Team, int, int]:
    """As in test_comparison_preferences: two runs of one dataset with external.m on both."""
    team = make_team(client)
    run_b = make_run(client, team.dataset, "r2")
    assert client.post(f"/runs/{run_b}/outputs", json=all_outputs("Autre réponse")).status_code == 200
    for run, values in ((team.run, M_A), (run_b, M_B)):
        pairs = zip(QUESTIONS, values, strict=True)
        rows = [{"question_id": q, "metric": "external.m", "value": v} for q, v in pairs]
        assert client.post(f"/runs/{run}/scores", json=rows).status_code == 200
    return team, team.run, run_b


def _task(client: TestClient, a: int, b: int, raters: list[str] | None = None) -> int:
    body = {"name": "pair", "mode": "pairwise", "run_id": a, "run_b_id": b, "raters": raters or ["alice"]}
    r = client.post("/tasks", json={**body, "seed": 3})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _position(team: Team, task: int, question: str, who: str = "alice") -> int:
    entries = team.as_(who, "GET", f"/tasks/{task}/queue").json()["entries"]
    return int(next(e["position"] for e in entries if e["question_id"] == question))


def _open(team: Team, task: int, position: int, who: str = "alice") -> dict[str, Any]:
    r = team.as_(who, "GET", f"/tasks/{task}/queue/{position}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def _served(view: dict[str, Any]) -> dict[str, int]:
    return {f"{a['side']}_version": a["version"] for a in view["answers"]}


def _stored(engine: Engine, task: int, question: str) -> TaskItem:
    with Session(engine) as s:
        item = s.scalar(
            select(TaskItem)
            .join(Question, Question.id == TaskItem.question_id)
            .where(TaskItem.task_id == task, Question.external_id == question)
        )
        assert item is not None
        s.expunge(item)
        return item


def _b_side(view: dict[str, Any]) -> str:
    """The side run B's answer (the one _change_answer edits) is shown on."""
    sides = [a["side"] for a in view["answers"] if a["answer"].startswith(("Autre", "Une réponse corrigée"))]
    assert len(sides) == 1
    return str(sides[0])


def test_opened_on_v1_submitted_after_the_edit_is_stored_on_v1_and_stale(
    client: TestClient, engine: Engine, pair: Any
) -> None:
    team, a, b = pair
    task = _task(client, a, b)
    pos = _position(team, task, "q3")
    opened = _open(team, task, pos)
    assert _served(opened) == {"left_version": 1, "right_version": 1}
    b_side = _b_side(opened)

    _change_answer(client, b, "q3")  # run B's answer to q3 moves to version 2 while the item is open
    url = f"/tasks/{task}/queue/{pos}"
    r = team.as_("alice", "PUT", url, json={"action": "rate", "score": 2, **_served(opened)})
    assert r.status_code == 200, r.text
    assert r.json()["stale"] is True  # the client is told its preference is on an answer since changed
    item = _stored(engine, task, "q3")
    assert (item.output_version, item.output_b_version) == (1, 1)  # what alice read, not what is there now
    read = _report(client, a, b)
    assert read["preferences"] == {"side_by_side": 0, "imported": 0, "stale": 1}

    # Opened again, the item shows the new answer and its version; rating it then is fresh.
    again = _open(team, task, pos)
    assert _served(again)[f"{b_side}_version"] == 2
    assert "corrigée" in next(x["answer"] for x in again["answers"] if x["side"] == b_side)
    r = team.as_("alice", "PUT", url, json={"action": "rate", "score": 2, **_served(again)})
    assert r.status_code == 200, r.text
    assert r.json()["stale"] is False
    item = _stored(engine, task, "q3")
    assert (item.output_version, item.output_b_version) == (1, 2)
    assert _report(client, a, b)["preferences"] == {"side_by_side": 1, "imported": 0, "stale": 0}


def test_versions_are_kept_per_run_whichever_side_each_answer_is_on(
    client: TestClient, engine: Engine, pair: Any
) -> None:
    """Every item opened, run B's answer to q3 edited twice, then all rated with what was served: only q3's
    preference is stale, and each item stores run A's and run B's versions in their own columns."""
    team, a, b = pair
    task = _task(client, a, b)
    positions = {q: _position(team, task, q) for q in QUESTIONS}
    views = {q: _open(team, task, p) for q, p in positions.items()}
    sides = {_b_side(v) for v in views.values()}
    assert sides == {"left", "right"}  # the seed puts run B on both sides: the mapping is exercised
    _change_answer(client, b, "q3")
    views["q3"] = _open(team, task, positions["q3"])  # seen at version 2, then edited again: version 3
    outs = all_outputs("Autre réponse")
    outs[QUESTIONS.index("q3")]["answer"] = "Une réponse corrigée deux fois."
    assert client.post(f"/runs/{b}/outputs", json=outs).status_code == 200
    for q, p in positions.items():
        body = {"action": "rate", "score": 4, **_served(views[q])}
        assert team.as_("alice", "PUT", f"/tasks/{task}/queue/{p}", json=body).status_code == 200
    for q in QUESTIONS:
        item = _stored(engine, task, q)
        assert (item.output_version, item.output_b_version) == ((1, 2) if q == "q3" else (1, 1))
    assert _open(team, task, positions["q3"])["answers"] != views["q3"]["answers"]  # at version 3 by now
    read = _report(client, a, b)
    assert read["preferences"]["stale"] == 1 and read["preferences"]["side_by_side"] == 4


def test_without_versions_the_current_ones_are_recorded(
    client: TestClient, engine: Engine, pair: Any
) -> None:
    team, a, b = pair
    task = _task(client, a, b)
    pos = _position(team, task, "q3")
    _open(team, task, pos)
    _change_answer(client, b, "q3")
    r = team.as_("alice", "PUT", f"/tasks/{task}/queue/{pos}", json={"action": "rate", "score": 2})
    assert r.status_code == 200, r.text
    item = _stored(engine, task, "q3")
    assert (item.output_version, item.output_b_version) == (1, 2)
    assert _report(client, a, b)["preferences"] == {"side_by_side": 1, "imported": 0, "stale": 0}


@pytest.mark.parametrize(
    ("sent", "status", "field", "reason"),
    [
        ({"left_version": 2, "right_version": 1}, 409, "left_version", "never had version 2"),
        ({"left_version": 1, "right_version": 7}, 409, "right_version", "never had version 7"),
        ({"left_version": "abc", "right_version": 1}, 422, "left_version", "integer"),
        ({"left_version": 1, "right_version": 1.5}, 422, "right_version", "integer"),
        ({"left_version": -1, "right_version": 1}, 422, "left_version", "greater than or equal to 1"),
        ({"left_version": 1, "right_version": 0}, 422, "right_version", "greater than or equal to 1"),
        ({"left_version": 2**31, "right_version": 1}, 422, "left_version", "less than or equal to"),
        ({"left_version": 1}, 422, "right_version", "give both left_version and right_version"),
        ({"right_version": 1}, 422, "left_version", "give both left_version and right_version"),
    ],
    ids=[
        "unknown-left",
        "unknown-right",
        "text",
        "fraction",
        "negative",
        "zero",
        "too-large",
        "only-left",
        "only-right",
    ],
)
def test_bad_versions_are_refused_naming_the_field_and_store_nothing(
    client: TestClient, engine: Engine, pair: Any, sent: dict[str, Any], status: int, field: str, reason: str
) -> None:
    team, a, b = pair
    task = _task(client, a, b)
    pos = _position(team, task, "q1")
    assert _served(_open(team, task, pos)) == {"left_version": 1, "right_version": 1}
    r = team.as_("alice", "PUT", f"/tasks/{task}/queue/{pos}", json={"action": "rate", "score": 2, **sent})
    body = assert_envelope(r, status)
    assert [i["field"] for i in body["items"]] == [field], body
    assert reason in body["items"][0]["reason"], body
    item = _stored(engine, task, "q1")
    assert (item.status, item.preference, item.output_version) == ("pending", None, None)


def test_a_pointwise_item_refuses_side_versions(client: TestClient, pair: Any) -> None:
    team, *_ = pair
    view = _open(team, team.task, 1)
    assert [x["side"] for x in view["answers"]] == ["single"] and view["answers"][0]["version"] == 1
    r = team.as_(
        "alice", "PUT", f"/tasks/{team.task}/queue/1", json={"action": "rate", "score": 3, "left_version": 1}
    )
    body = assert_envelope(r, 422)
    assert body["items"][0]["field"] == "left_version" and "pointwise" in body["items"][0]["reason"]


def _form(html: str) -> dict[str, str]:
    rate_form = html.split('id="rate-form"')[1].split("</form>")[0]
    fields = {}
    for chunk in rate_form.split('type="hidden" name="')[1:]:
        name, rest = chunk.split('"', 1)
        fields[name] = rest.split('value="')[1].split('"')[0]
    return fields


def test_the_rating_page_sends_back_the_versions_it_showed(
    client: TestClient, engine: Engine, pair: Any
) -> None:
    team, a, b = pair
    task = _task(client, a, b)
    pos = _position(team, task, "q3")
    browser = TestClient(client.app)
    assert login(browser, "alice", team.keys["alice"]).status_code == 303
    page = browser.get(f"/rate/{task}/{pos}")
    assert page.status_code == 200
    form = _form(page.text)
    assert {k: form[k] for k in ("left_version", "right_version")} == {
        "left_version": "1",
        "right_version": "1",
    }

    # A malformed or never-served version comes back as the page, naming the field, and stores nothing.
    for bad, status, says in (
        ("x", 422, "left_version"),
        ("-3", 422, "left_version"),
        ("9", 409, "left_version"),
    ):
        r = browser.post(
            f"/rate/{task}/{pos}", data={**form, "left_version": bad, "action": "rate", "score": "2"}
        )
        assert r.status_code == status and says in r.text, r.text[:500]
        assert 'id="rate-form"' in r.text
    assert _stored(engine, task, "q3").status == "pending"

    _change_answer(client, b, "q3")  # the page is still showing version 1
    r = browser.post(
        f"/rate/{task}/{pos}", data={**form, "action": "rate", "score": "2"}, follow_redirects=False
    )
    # Saved on what alice read, and she is told so on the same item, which now shows the new answer.
    assert r.status_code == 200, r.text[:500]
    assert "An answer changed while this page was open" in r.text
    assert "2" in _form(r.text).values()
    item = _stored(engine, task, "q3")
    assert (item.status, item.output_version, item.output_b_version) == ("rated", 1, 1)
    assert _report(client, a, b)["preferences"] == {"side_by_side": 0, "imported": 0, "stale": 1}
    # Rated again from that page, the preference is on the current answers and the queue moves on.
    r = browser.post(
        f"/rate/{task}/{pos}", data={**_form(r.text), "action": "rate", "score": "2"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text[:500]
    assert _report(client, a, b)["preferences"] == {"side_by_side": 1, "imported": 0, "stale": 0}
