"""A pointwise score is recorded on the answer the rater was shown: the item is served with the answer's
version, the client sends it back as ``version``, and an answer that changed between opening and submitting
leaves the score with the ratings of previous answers (kept at that version, counted in the report's notes,
left out of the report and of the rated run's ratings). Without a version (older clients) the score goes on
the current answer, as before. Versions the answer never had are refused, naming the field; so are malformed
ones, through the API and through the rating page; nothing is stored then."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.models import Output, Question, Rating, RatingHistory, TaskItem, User
from tests.api.helpers import assert_envelope
from tests.api.team import QUESTIONS, Team, all_outputs, make_team
from tests.api.test_auth import login
from tests.api.test_outputs import make_run
from tests.integration.test_preference_versions_at_open import _form, _task

EDITED = "Une réponse corrigée après l'ouverture de l'item."


@pytest.fixture
def team(client: TestClient) -> Team:
    """A run of five answers and a pointwise task for alice and bob (tests/api/team.py)."""
    return make_team(client)


def _position(team: Team, question: str, who: str = "alice") -> int:
    entries = team.as_(who, "GET", f"/tasks/{team.task}/queue").json()["entries"]
    return int(next(e["position"] for e in entries if e["question_id"] == question))


def _open(team: Team, position: int, who: str = "alice") -> dict[str, Any]:
    r = team.as_(who, "GET", f"/tasks/{team.task}/queue/{position}")
    assert r.status_code == 200, r.text
    view = dict(r.json())
    assert [a["side"] for a in view["answers"]] == ["single"]
    return view


def _served(view: dict[str, Any]) -> int:
    return int(view["answers"][0]["version"])


def _edit(client: TestClient, run: int, question: str, text: str = EDITED) -> None:
    """Re-import the run with a new answer to ``question``: its version moves on."""
    outs = all_outputs()
    outs[QUESTIONS.index(question)]["answer"] = text
    r = client.post(f"/runs/{run}/outputs", json=outs)
    assert r.status_code == 200, r.text


def _rate(team: Team, position: int, score: int, who: str = "alice", **versions: Any) -> Any:
    body = {"action": "rate", "score": score, **versions}
    return team.as_(who, "PUT", f"/tasks/{team.task}/queue/{position}", json=body)


def _stored(engine: Engine, question: str) -> tuple[int, list[int], list[tuple[int, int]], str]:
    """(the output's current version, current scores, (version, score) kept for previous answers, the
    item's status for alice) of the run's output to ``question``."""
    with Session(engine) as s:
        output_id, version = s.execute(
            select(Output.id, Output.version)
            .join(Question, Question.id == Output.question_id)
            .where(Question.external_id == question)
        ).one()
        current = sorted(s.scalars(select(Rating.score).where(Rating.output_id == output_id)))
        history = s.execute(
            select(RatingHistory.output_version, RatingHistory.score).where(
                RatingHistory.output_id == output_id
            )
        ).all()
        status = s.scalar(
            select(TaskItem.status)
            .join(User, User.id == TaskItem.user_id)
            .where(TaskItem.output_id == output_id, User.name == "alice")
        )
        return int(version), current, sorted((int(v), int(sc)) for v, sc in history), str(status)


def _previous_answer_notes(client: TestClient, run: int) -> list[str]:
    r = client.get(f"/runs/{run}/report")
    assert r.status_code == 200, r.text
    return [n for n in r.json()["notes"] if "rating(s) are for a previous answer" in n]


def _rated_questions(client: TestClient, run: int) -> list[tuple[str, str, int]]:
    return sorted(
        (x["question_id"], x["rater"], x["score"]) for x in client.get(f"/runs/{run}/ratings").json()
    )


def test_opened_on_v1_submitted_after_the_edit_is_kept_on_v1_out_of_the_report(
    client: TestClient, engine: Engine, team: Team
) -> None:
    pos = _position(team, "q3")
    opened = _open(team, pos)
    assert _served(opened) == 1
    assert _previous_answer_notes(client, team.run) == []

    _edit(client, team.run, "q3")  # the answer moves to version 2 while alice reads version 1
    r = _rate(team, pos, 2, version=_served(opened))
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["stale"]) == ("rated", True)
    # Kept at the version alice read; nothing on the current answer, which she has not seen.
    assert _stored(engine, "q3") == (2, [], [(1, 2)], "rated")
    assert _rated_questions(client, team.run) == []
    assert _previous_answer_notes(client, team.run) == [
        "1 rating(s) are for a previous answer of their output (kept in history, excluded from this report)"
    ]

    # Opened again, the item serves the new answer and its version; the score then goes on it.
    again = _open(team, pos)
    assert _served(again) == 2 and again["answers"][0]["answer"] == EDITED
    r = _rate(team, pos, 4, version=_served(again))
    assert r.status_code == 200, r.text
    assert r.json()["stale"] is False
    assert _stored(engine, "q3") == (2, [4], [(1, 2)], "rated")
    assert _rated_questions(client, team.run) == [("q3", "alice", 4)]

    # The old page sent again (another score): the score kept for version 1 is changed, not doubled, and
    # the score of the current answer stays (it was given on other text).
    r = _rate(team, pos, 5, version=_served(opened))
    assert r.status_code == 200, r.text
    assert _stored(engine, "q3") == (2, [4], [(1, 5)], "rated")
    assert len(_previous_answer_notes(client, team.run)) == 1
    assert "1 rating(s)" in _previous_answer_notes(client, team.run)[0]


def test_rated_before_the_edit_then_changed_on_the_old_page(
    client: TestClient, engine: Engine, team: Team
) -> None:
    """Rated on version 1 (the re-import retires that rating to version 1), then changed from the page
    still showing version 1: the retired rating is the one changed."""
    pos = _position(team, "q2")
    opened = _open(team, pos)
    assert _rate(team, pos, 3, version=1).status_code == 200
    assert _stored(engine, "q2") == (1, [3], [], "rated")
    _edit(client, team.run, "q2")
    assert _stored(engine, "q2") == (2, [], [(1, 3)], "rated")
    r = _rate(team, pos, 1, version=_served(opened))
    assert r.status_code == 200, r.text
    assert _stored(engine, "q2") == (2, [], [(1, 1)], "rated")


def test_without_a_version_the_score_goes_on_the_current_answer(
    client: TestClient, engine: Engine, team: Team
) -> None:
    """Older clients, which send no version, keep the previous behaviour: the current answer is rated."""
    pos = _position(team, "q3")
    assert _served(_open(team, pos)) == 1
    _edit(client, team.run, "q3")
    r = _rate(team, pos, 2)
    assert r.status_code == 200, r.text
    assert _stored(engine, "q3") == (2, [2], [], "rated")
    assert _rated_questions(client, team.run) == [("q3", "alice", 2)]
    assert _previous_answer_notes(client, team.run) == []


def test_the_current_version_sent_back_rates_the_current_answer(
    client: TestClient, engine: Engine, team: Team
) -> None:
    pos = _position(team, "q4")
    r = _rate(team, pos, 5, version=_served(_open(team, pos)))
    assert r.status_code == 200, r.text
    assert _stored(engine, "q4") == (1, [5], [], "rated")


@pytest.mark.parametrize(
    ("version", "status", "reason"),
    [
        (2, 409, "never had version 2"),
        (7, 409, "never had version 7"),
        ("abc", 422, "integer"),
        (1.5, 422, "integer"),
        (-1, 422, "greater than or equal to 1"),
        (0, 422, "greater than or equal to 1"),
        (2**31, 422, "less than or equal to"),
    ],
    ids=["next", "far-ahead", "text", "fraction", "negative", "zero", "too-large"],
)
def test_bad_versions_are_refused_naming_the_field_and_store_nothing(
    client: TestClient, engine: Engine, team: Team, version: Any, status: int, reason: str
) -> None:
    pos = _position(team, "q1")
    assert _served(_open(team, pos)) == 1
    body = assert_envelope(_rate(team, pos, 2, version=version), status)
    assert [i["field"] for i in body["items"]] == ["version"], body
    assert reason in body["items"][0]["reason"], body
    assert _stored(engine, "q1") == (1, [], [], "pending")


def test_a_refused_version_after_an_edit_stores_nothing(
    client: TestClient, engine: Engine, team: Team
) -> None:
    """At version 2, version 3 is still one the answer never had: refused, and neither the current answer nor
    the previous one gets a score."""
    pos = _position(team, "q5")
    _edit(client, team.run, "q5")
    body = assert_envelope(_rate(team, pos, 2, version=3), 409)
    assert body["items"][0]["field"] == "version" and "at version 2" in body["items"][0]["reason"]
    assert _stored(engine, "q5") == (2, [], [], "pending")


def test_a_side_by_side_item_refuses_a_single_version(client: TestClient, team: Team) -> None:
    run_b = make_run(client, team.dataset, "r2")
    assert client.post(f"/runs/{run_b}/outputs", json=all_outputs("Autre réponse")).status_code == 200
    task = _task(client, team.run, run_b)
    r = team.as_("alice", "PUT", f"/tasks/{task}/queue/1", json={"action": "rate", "score": 3, "version": 1})
    body = assert_envelope(r, 422)
    assert body["items"][0]["field"] == "version" and "left_version" in body["items"][0]["reason"]
    assert team.as_("alice", "GET", f"/tasks/{task}/queue/1").json()["status"] == "pending"


def test_the_rating_page_sends_back_the_version_it_showed(
    client: TestClient, engine: Engine, team: Team
) -> None:
    pos = _position(team, "q3")
    browser = TestClient(client.app)
    assert login(browser, "alice", team.keys["alice"]).status_code == 303
    page = browser.get(f"/rate/{team.task}/{pos}")
    assert page.status_code == 200
    form = _form(page.text)
    assert form["version"] == "1" and "left_version" not in form

    # A malformed or never-served version comes back as the page, naming the field, and stores nothing.
    for bad, status in (("x", 422), ("-3", 422), ("1.5", 422), ("9", 409)):
        r = browser.post(
            f"/rate/{team.task}/{pos}", data={**form, "version": bad, "action": "rate", "score": "2"}
        )
        assert r.status_code == status and "version" in r.text, r.text[:500]
        assert 'id="rate-form"' in r.text
    # So does a score that is no level of the scale, however large (up to the field's 10 characters).
    for bad, says in (("9999999999", "not a level of the scale"), ("9", "give a score in 1..5")):
        r = browser.post(f"/rate/{team.task}/{pos}", data={**form, "action": "rate", "score": bad})
        assert r.status_code == 422 and says in r.text, r.text[:500]
    assert _stored(engine, "q3") == (1, [], [], "pending")

    _edit(client, team.run, "q3")  # the page is still showing version 1
    r = browser.post(
        f"/rate/{team.task}/{pos}", data={**form, "action": "rate", "score": "2"}, follow_redirects=False
    )
    # Saved on what alice read; she is told so on the same item, which shows the new answer.
    assert r.status_code == 200, r.text[:500]
    assert "An answer changed while this page was open" in r.text and "corrigée" in r.text
    assert _stored(engine, "q3") == (2, [], [(1, 2)], "rated")
    assert len(_previous_answer_notes(client, team.run)) == 1
    # That page carries the new version, and a score sent from it rates the current answer.
    form = _form(r.text)
    assert form["version"] == "2"
    r = browser.post(
        f"/rate/{team.task}/{pos}", data={**form, "action": "rate", "score": "4"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text[:500]
    assert _stored(engine, "q3") == (2, [4], [(1, 2)], "rated")
