"""Rating tasks with the active policy: outputs drawn one at a time with their inclusion probability
recorded, never to more raters than asked, the policy and the metric hidden from raters, refits recorded off
the request path, bad settings named, the estimate with its design, and no orphaned draw counted."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from services.accounts.repository import AccountRepository
from services.db import session_scope
from services.models import TaskDraw, TaskFit, TaskItem
from services.tasks import service
from tests.api.helpers import assert_envelope, create_dataset, upload
from tests.api.team import Team
from tests.conftest import issue_key

N = 40


def _score(i: int) -> float:
    return round((i * 37 % 100) / 100, 2)


def active_team(client: TestClient, **policy: Any) -> Team:
    """A run of N outputs with an external metric on each, three raters and an active task on it."""
    ds = create_dataset(client, "active")
    questions = "\n".join(
        json.dumps({"external_id": f"q{i}", "question": f"Question {i} ?", "reference_answer": f"R {i}."})
        for i in range(N)
    )
    assert upload(client, f"/datasets/{ds}/questions", "q.jsonl", questions.encode()).status_code == 200
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r1"}).json()["id"]
    outputs = [{"question_id": f"q{i}", "answer": f"Réponse {i}.", "retrieved": []} for i in range(N)]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    scores = [{"question_id": f"q{i}", "metric": "external.m", "value": _score(i)} for i in range(N)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    app: Any = client.app
    keys = {"admin": client.headers["Authorization"].split()[1]}
    for name in ("alice", "bob", "carol"):
        keys[name] = issue_key(app, name, "rater")
    active = {"metric": "external.m", "budget": 12, "refit_every": 4, **policy.pop("active", {})}
    body = {
        "name": "active",
        "run_id": run,
        "raters": ["alice", "bob", "carol"],
        "seed": 11,
        "policy": "active",
        "active": active,
        **policy,
    }
    r = client.post("/tasks", json=body)
    assert r.status_code == 201, r.text
    return Team(client=client, dataset=ds, run=run, task=r.json()["id"], keys=keys)


def _next(team: Team, who: str) -> int | None:
    r = team.as_(who, "POST", f"/tasks/{team.task}/next")
    assert r.status_code == 200, r.text
    return r.json()["position"]


def _rate_all(team: Team, who: str, limit: int = 200) -> int:
    for done in range(limit):
        pos = _next(team, who)
        if pos is None:
            return done
        item = team.as_(who, "GET", f"/tasks/{team.task}/queue/{pos}").json()
        score = 1 + int(item["question_id"][1:]) % 5
        r = team.as_(who, "PUT", f"/tasks/{team.task}/queue/{pos}", json={"action": "rate", "score": score})
        assert r.status_code == 200, r.text
    raise AssertionError("the queue never ended")


def _factory(client: TestClient) -> Any:
    app: Any = client.app
    return app.state.resources.session_factory


def test_active_task_draws_each_output_for_as_many_raters_as_asked(client: TestClient) -> None:
    team = active_team(client, per_output=2, active={"budget": 8})
    task = client.get(f"/tasks/{team.task}").json()
    assert task["policy"] == "active" and task["active"]["metric"] == "external.m" and task["n_outputs"] == N
    assert all(r["assigned"] == 0 for r in task["raters"])  # nothing assigned up front
    # The raters' view of the task hides the policy and the metric.
    mine = team.as_("alice", "GET", "/me/tasks").json()
    assert mine[0]["policy"] is None and mine[0]["active"] is None
    pos = _next(team, "alice")
    assert pos == 1 and _next(team, "alice") == 1  # the open item again, not a second draw
    item = team.as_("alice", "GET", f"/tasks/{team.task}/queue/1").json()
    assert "external.m" not in json.dumps(item) and "probab" not in json.dumps(item)
    rated = sum(_rate_all(team, who) for who in ("alice", "bob", "carol"))
    with session_scope(_factory(client)) as s:
        draws = s.scalars(select(TaskDraw).where(TaskDraw.task_id == team.task)).all()
        items = s.scalars(select(TaskItem).where(TaskItem.task_id == team.task)).all()
        fits = s.scalars(select(TaskFit).where(TaskFit.task_id == team.task)).all()
        assert all(d.pi is not None and 0 < d.pi <= 1 for d in draws)  # the stream was used up
        by_draw: dict[int, list[TaskItem]] = {}
        for it in items:
            assert it.draw_id is not None
            by_draw.setdefault(it.draw_id, []).append(it)
        pis = {d.id: d.pi for d in draws}
        assert all(it.inclusion_probability == pis[it.draw_id] for it in items)
        included = {d.id for d in draws if d.included}
        assert set(by_draw) == included
        assert all(len(v) == 2 and len({i.user_id for i in v}) == 2 for v in by_draw.values())
        assert rated == len(items) == 2 * len(included)
        # Refits happened after the responses, each recorded with its ratings and parameters.
        assert len(fits) >= 2 and all(f.params["n"] >= 0 for f in fits)
        assert [f.n_ratings for f in fits] == sorted(f.n_ratings for f in fits)
    est = client.get(f"/tasks/{team.task}/estimate").json()
    assert est["n_rated"] == len(included) and est["n_open"] == 0 and est["n_decided"] == N
    assert "Poisson" in est["active"]["design"] and "uniform" in est["uniform_same_n"]["design"]
    assert est["active"]["ci_low"] < est["active"]["estimate"] < est["active"]["ci_high"]
    assert est["n_refits"] == len(fits)
    # The metric-human correlation under the same design: the 1/pi weighted Pearson r of the rated draws.
    with session_scope(_factory(client)) as s:
        rated_draws = s.scalars(select(TaskDraw).where(TaskDraw.task_id == team.task, TaskDraw.included))
        pairs = [(d.question_id, d.metric_value, d.pi) for d in rated_draws]
        from services.models import Question

        qids = {q.id: q.external_id for q in s.scalars(select(Question))}
    w = [1 / p for *_, p in pairs]
    ys = [1.0 + int(qids[q][1:]) % 5 for q, *_ in pairs]
    fs = [f for _, f, _ in pairs]
    my, mf = (sum(a * b for a, b in zip(w, v, strict=True)) / sum(w) for v in (ys, fs))
    cov, vy, vf = (
        sum(a * b * c for a, b, c in zip(w, u, v, strict=True)) / sum(w)
        for u, v in (
            ([y - my for y in ys], [f - mf for f in fs]),
            ([y - my for y in ys], [y - my for y in ys]),
            ([f - mf for f in fs], [f - mf for f in fs]),
        )
    )
    corr = est["correlation"]
    assert corr["metric"] == "external.m" and corr["active"]["n_rated"] == len(pairs)
    assert corr["active"]["estimate"] == pytest.approx(cov / (vy * vf) ** 0.5, rel=1e-9)
    assert corr["active"]["ci_low"] < corr["active"]["estimate"] < corr["active"]["ci_high"]
    assert "Poisson" in corr["active"]["design"] and "jackknife" in corr["active"]["method"]
    assert "Fisher" in corr["uniform_same_n"]["design"] and corr["uniform_same_n"]["estimate"] is None
    assert _next(team, "alice") is None
    # The run's uniform-design estimate says its design, and that these ratings were not drawn uniformly.
    run_est = client.get(f"/runs/{team.run}/estimate").json()
    assert run_est["design"].startswith("uniform")
    assert [w["code"] for w in run_est["warnings"] if w["code"] == "design"] == ["design"]


def test_a_draw_left_unrated_is_not_counted_and_a_failed_draw_leaves_no_trace(client: TestClient) -> None:
    team = active_team(client)
    for _ in range(5):  # bob rates five drawn outputs
        pos = _next(team, "bob")
        assert pos is not None
        r = team.as_("bob", "PUT", f"/tasks/{team.task}/queue/{pos}", json={"action": "rate", "score": 3})
        assert r.status_code == 200
    assert _next(team, "alice") is not None  # drawn and served to alice, who never rates it (she left)
    est = client.get(f"/tasks/{team.task}/estimate").json()
    assert (est["n_drawn"], est["n_rated"], est["n_open"]) == (6, 5, 1)
    with session_scope(_factory(client)) as s:
        decided = s.scalars(select(TaskDraw).where(TaskDraw.task_id == team.task, TaskDraw.pi.is_not(None)))
        before = len(decided.all())
    # A draw whose transaction fails before its commit (the process dies, the database connection drops):
    # nothing of it remains, neither the decision nor the item.
    factory = _factory(client)
    with pytest.raises(RuntimeError), session_scope(factory) as s:
        user = AccountRepository(s).users_by_name(["carol"])["carol"]
        assert service.next_item(s, team.task, user.id).position is not None
        raise RuntimeError("crash between the draw and the rating")
    with session_scope(factory) as s:
        after = s.scalars(select(TaskDraw).where(TaskDraw.task_id == team.task, TaskDraw.pi.is_not(None)))
        assert len(after.all()) == before
        user_items = s.scalars(select(TaskItem).where(TaskItem.task_id == team.task)).all()
        assert len(user_items) == 6
    assert client.get(f"/tasks/{team.task}/estimate").json()["n_rated"] == 5


def test_stopping_rule_closes_the_task_and_the_estimate_projects_the_ratings_left(client: TestClient) -> None:
    team = active_team(client, active={"target_width": 100.0, "refit_every": 3})
    for _ in range(3):
        pos = _next(team, "alice")
        assert pos is not None
        team.as_(
            "alice", "PUT", f"/tasks/{team.task}/queue/{pos}", json={"action": "rate", "score": 2 + pos % 3}
        )
    est = client.get(f"/tasks/{team.task}/estimate").json()
    assert est["reached"] and est["more_ratings"] == 0 and est["closed_at"] is not None
    task = client.get(f"/tasks/{team.task}").json()
    assert task["closed_reason"].startswith("target width 100 reached")
    assert team.as_("bob", "POST", f"/tasks/{team.task}/next").json()["position"] is None


BAD_SETTINGS = [
    ({"active": None}, "active"),
    ({"policy": "fixed"}, "active"),
    ({"active": {"metric": "external.nothing", "budget": 10}}, "active.metric"),
    ({"active": {"metric": "external.m", "budget": N}}, "active.budget"),
    ({"active": {"metric": "external.m", "budget": 10, "floor": 0}}, "floor"),
    ({"active": {"metric": "external.m", "budget": 2}}, "budget"),
    ({"active": {"metric": "external.m", "budget": 10, "target_width": -1}}, "target_width"),
    ({"active": {"metric": "external.m", "budget": 10, "extra": 1}}, "extra"),
    ({"active": {"metric": "external.m", "budget": 10, "lease_minutes": 0}}, "lease_minutes"),
    ({"policy": "sometimes"}, "policy"),
    ({"mode": "pairwise", "run_b_id": 1}, "policy"),
]


def test_bad_active_settings_are_refused_naming_the_field(client: TestClient) -> None:
    team = active_team(client)
    for change, field in BAD_SETTINGS:
        body = {
            "name": "second",
            "run_id": team.run,
            "raters": ["alice"],
            "policy": "active",
            "active": {"metric": "external.m", "budget": 10},
            **change,
        }
        body = {k: v for k, v in body.items() if v is not None}
        err = assert_envelope(client.post("/tasks", json=body), 422)
        fields = [str(item.get("field")) for item in err["items"]]
        assert any(field in f for f in fields), (change, err)


def test_a_fixed_task_has_no_active_estimate_and_next_gives_its_queue_order(client: TestClient) -> None:
    team = active_team(client)
    fixed = client.post("/tasks", json={"name": "fixed", "run_id": team.run, "raters": ["alice"]}).json()
    assert fixed["policy"] == "fixed" and fixed["active"] is None
    err = assert_envelope(client.get(f"/tasks/{fixed['id']}/estimate"), 422)
    assert err["items"][0]["field"] == "task_id"
    first = team.as_("alice", "GET", f"/tasks/{fixed['id']}/queue").json()["next_position"]
    assert team.as_("alice", "POST", f"/tasks/{fixed['id']}/next").json()["position"] == first
    assert_envelope(team.as_("bob", "POST", f"/tasks/{fixed['id']}/next"), 403)


def test_the_cli_creates_an_active_task_draws_and_shows_the_estimate(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    from app import client as cli
    from app.cli import build_parser
    from app.cli_common import UsageError

    def run(c: TestClient, *argv: str) -> int:
        return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]

    team = active_team(client)
    argv = ["task", "create", str(team.run), "--raters", "alice", "--name", "cli", "--seed", "5"]
    assert run(client, *argv, "--active", "external.m", "--budget", "8", "--target-width", "2.5") == 0
    out = capsys.readouterr().out
    task = int(out.split("task ", 1)[1].split()[0])
    assert "active policy on external.m: about 8 outputs drawn" in out and "stops at width 2.5" in out
    assert "items left unrated released after 30 min" in out
    leased = [
        "task",
        "create",
        str(team.run),
        "--raters",
        "alice",
        "--name",
        "cli-lease",
        "--active",
        "external.m",
    ]
    assert run(client, *leased, "--budget", "8", "--lease-minutes", "45") == 0
    assert "released after 45 min" in capsys.readouterr().out
    with pytest.raises(UsageError, match="--lease-minutes"):
        run(client, *argv, "--lease-minutes", "45")
    with pytest.raises(UsageError, match="--budget"):
        run(client, *argv, "--active", "external.m")
    with pytest.raises(UsageError, match="--active"):
        run(client, *argv, "--budget", "8")
    alice = TestClient(client.app, headers=team.auth("alice"))
    for _ in range(3):
        assert run(alice, "task", "next", str(task)) == 0
        position = capsys.readouterr().out.strip()
        assert run(alice, "task", "rate", str(task), position, "4") == 0
        capsys.readouterr()
    assert run(client, "task", "estimate", str(task)) == 0
    text = capsys.readouterr().out
    assert "3 rated of 3 drawn" in text and "design: sequential Poisson sampling" in text
    assert "uniform sampling of 3 outputs would give width" in text and "target width 2.5" in text
    assert "correlation of external.m with the human score: undefined (3 rated output(s)" in text
    assert run(client, "task", "estimate", str(task), "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["n_rated"] == 3


def test_the_dashboard_shows_the_run_mean_and_the_ratings_left_to_the_target(client: TestClient) -> None:
    team = active_team(client, active={"target_width": 0.01})
    for _ in range(4):
        pos = _next(team, "alice")
        assert pos is not None
        body = {"action": "rate", "score": 1 + pos % 5}
        assert team.as_("alice", "PUT", f"/tasks/{team.task}/queue/{pos}", json=body).status_code == 200
    d = client.get(f"/tasks/{team.task}/dashboard").json()
    e = d["active_estimate"]
    assert e["n_rated"] == 4 and not e["reached"] and e["target_width"] == 0.01
    page = client.get(f"/tasks/{team.task}/dashboard.html")
    assert page.status_code == 200 and 'id="active-estimate"' in page.text
    assert "Target width 0.01" in page.text and "not reachable on this run" in page.text
    c = e["correlation"]
    assert 'id="active-correlation"' in page.text and f"Correlation of {c['metric']}" in page.text
    if c["active"] is not None:
        assert f"{c['active']['estimate']:.2f} [" in page.text
    else:
        assert c["undefined_reason"] in page.text
    fixed = client.post("/tasks", json={"name": "fixed", "run_id": team.run, "raters": ["alice"]}).json()
    assert client.get(f"/tasks/{fixed['id']}/dashboard").json()["active_estimate"] is None


def test_the_rating_pages_draw_the_next_output_on_a_form_post(client: TestClient) -> None:
    from tests.api.test_auth import login

    team = active_team(client)
    browser = TestClient(client.app)
    assert login(browser, "alice", team.keys["alice"]).status_code == 303
    page = browser.get(f"/rate/{team.task}")
    assert page.status_code == 200 and f'action="/rate/{team.task}/next"' in page.text
    assert "external.m" not in page.text
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    assert browser.post(f"/rate/{team.task}/next", data={"csrf": ""}).status_code == 403
    for _ in range(4):  # refit_every 4: the fourth rating schedules a refit after its response
        r = browser.post(f"/rate/{team.task}/next", data={"csrf": csrf}, follow_redirects=False)
        assert r.status_code == 303
        item_url = r.headers["location"]
        item = browser.get(item_url)
        assert item.status_code == 200 and "external.m" not in item.text
        version = item.text.split('name="version" value="')[1].split('"')[0]
        done = browser.post(
            item_url,
            data={"csrf": csrf, "action": "rate", "score": "3", "version": version},
            follow_redirects=False,
        )
        assert done.status_code == 303 and done.headers["location"] == f"/rate/{team.task}"
    est = client.get(f"/tasks/{team.task}/estimate").json()
    assert est["n_rated"] == 4 and est["n_refits"] == 1


def test_deleting_the_run_removes_its_active_task_with_its_draws_and_fits(client: TestClient) -> None:
    team = active_team(client, active={"refit_every": 1})
    for _ in range(2):
        pos = _next(team, "alice")
        assert pos is not None
        body = {"action": "rate", "score": 2}
        assert team.as_("alice", "PUT", f"/tasks/{team.task}/queue/{pos}", json=body).status_code == 200
    r = client.delete(f"/runs/{team.run}", params={"cascade": True})
    assert r.status_code == 200, r.text
    assert_envelope(client.get(f"/tasks/{team.task}"), 404)
    with session_scope(_factory(client)) as s:
        for model in (TaskDraw, TaskFit, TaskItem):
            assert s.scalars(select(model).where(model.task_id == team.task)).all() == []


def _backdate(client: TestClient, task: int, who: str, minutes: float) -> None:
    """Move the serving time of ``who``'s open items back, as if they had been left that long."""
    with session_scope(_factory(client)) as s:
        user = AccountRepository(s).users_by_name([who])[who]
        for it in s.scalars(select(TaskItem).where(TaskItem.task_id == task, TaskItem.user_id == user.id)):
            if it.status == "pending":
                assert it.served_at is not None
                it.served_at = it.served_at - timedelta(minutes=minutes)


def _items(client: TestClient, task: int) -> dict[str, list[TaskItem]]:
    with session_scope(_factory(client)) as s:
        users = {u.id: u.name for u in AccountRepository(s).users_by_name(["alice", "bob", "carol"]).values()}
        out: dict[str, list[TaskItem]] = {}
        for it in s.scalars(select(TaskItem).where(TaskItem.task_id == task).order_by(TaskItem.id)):
            s.expunge(it)
            out.setdefault(users[it.user_id], []).append(it)
        return out


def test_an_item_left_past_its_lease_is_released_and_its_output_served_again(client: TestClient) -> None:
    team = active_team(client, active={"lease_minutes": 30})
    assert client.get(f"/tasks/{team.task}").json()["active"]["lease_minutes"] == 30
    assert _next(team, "alice") == 1
    _backdate(client, team.task, "alice", 29)  # within the lease: bob gets another output
    assert _next(team, "bob") == 1
    first = _items(client, team.task)
    assert first["alice"][0].output_id != first["bob"][0].output_id
    assert first["alice"][0].status == "pending"
    # Alice comes back after 40 minutes, before anyone needed her slot: her item again, its lease renewed.
    _backdate(client, team.task, "alice", 40)
    assert _next(team, "alice") == 1
    assert _items(client, team.task)["alice"][0].status == "pending"
    # She leaves it for 31 minutes: the next rater who needs an item releases it and gets its output.
    _backdate(client, team.task, "alice", 31)
    assert _next(team, "carol") == 1
    after = _items(client, team.task)
    left, carol = after["alice"][0], after["carol"][0]
    assert left.status == "released" and left.released_at is not None
    assert carol.output_id == left.output_id and carol.draw_id == left.draw_id
    with session_scope(_factory(client)) as s:
        draw = s.get(TaskDraw, left.draw_id)
        assert draw is not None and draw.included
        assert left.inclusion_probability == draw.pi == carol.inclusion_probability  # kept on the release
    # The released rater cannot rate an output another rater now holds (409 naming the position)...
    r = team.as_("alice", "PUT", f"/tasks/{team.task}/queue/1", json={"action": "rate", "score": 4})
    body = assert_envelope(r, 409, "Conflict")
    assert body["items"][0]["field"] == "position" and "released item" in body["detail"]
    # ...and her page says what happened instead of failing.
    assert team.as_("alice", "GET", f"/tasks/{team.task}/queue/1").json()["status"] == "released"
    # Carol skips it: the slot is free again and alice may take it back; carol then cannot.
    body = {"action": "skip"}
    assert team.as_("carol", "PUT", f"/tasks/{team.task}/queue/1", json=body).status_code == 200
    r = team.as_("alice", "PUT", f"/tasks/{team.task}/queue/1", json={"action": "rate", "score": 4})
    assert r.status_code == 200, r.text
    r = team.as_("carol", "PUT", f"/tasks/{team.task}/queue/1", json={"action": "rate", "score": 2})
    assert assert_envelope(r, 409, "Conflict")["items"][0]["field"] == "position"
    final = _items(client, team.task)
    rated = [i.draw_id for v in final.values() for i in v if i.status == "rated"]
    assert len(rated) == len(set(rated)) == 1  # never more ratings of an output than asked
    est = client.get(f"/tasks/{team.task}/estimate").json()
    assert (est["n_drawn"], est["n_rated"]) == (2, 1)  # the released item is not counted


def test_a_released_item_is_shown_on_the_rating_page(client: TestClient) -> None:
    from tests.api.test_auth import login

    team = active_team(client)
    assert _next(team, "alice") == 1
    _backdate(client, team.task, "alice", 31)
    assert _next(team, "bob") == 1
    browser = TestClient(client.app)
    assert login(browser, "alice", team.keys["alice"]).status_code == 303
    page = browser.get(f"/rate/{team.task}/1")
    assert page.status_code == 200 and "was released" in page.text
