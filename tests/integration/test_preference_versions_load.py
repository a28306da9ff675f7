"""Side-by-side preferences submitted all at once on a served app (uvicorn on loopback, real threadpool), on
SQLite and on PostgreSQL, while run B's answers are re-imported twice under them: every submission answered
(no 5xx, no lock timeout, no refusal), and each preference stored on exactly the versions its item was served
with, whenever the re-imports landed; so all of them are stale in the pairwise report, then none once the
items are opened again and re-rated. Bounded: 8 raters, 40 questions, 2 raters per question (80 items). The
timeouts only keep a deadlock from hanging the suite; nothing is timed.

Pointwise scores likewise (8 raters, 40 questions, 2 raters per question, the rated run re-imported twice
under them): every score answered and kept on the version it was served with, so all of them with the ratings
of previous answers, none on the current ones, until the items are opened again and re-rated."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.models import Output, Question, Rater, Rating, RatingHistory, TaskItem, User
from tests.conftest import Live
from tests.integration.test_comparison_preference_load import _pair
from tests.integration.test_concurrency import HANG_GUARD_S, N_CLIENTS, N_QUESTIONS, _outputs, _seed
from tests.live import rater_task

Served = dict[tuple[str, int], dict[str, Any]]  # (rater, position) -> the item as served


def _open_all(live: Live, task: int, keys: dict[str, str]) -> Served:
    served: Served = {}
    for name, key in keys.items():
        with httpx.Client(
            base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=HANG_GUARD_S
        ) as c:
            for e in c.get(f"/tasks/{task}/queue").json()["entries"]:
                r = c.get(f"/tasks/{task}/queue/{e['position']}")
                assert r.status_code == 200, r.text
                served[(name, e["position"])] = r.json()
    assert len(served) == 2 * N_QUESTIONS
    return served


def _versions(view: dict[str, Any]) -> dict[str, int]:
    """The versions sent back: pointwise ``version``, side by side ``left_version`` / ``right_version``."""
    if [a["side"] for a in view["answers"]] == ["single"]:
        return {"version": view["answers"][0]["version"]}
    return {f"{a['side']}_version": a["version"] for a in view["answers"]}


def _submit_all(
    live: Live, task: int, keys: dict[str, str], served: Served, reimport_b: int | None
) -> list[Any]:
    """Every served item rated with the versions it was served with: the raters all at once, each through
    their items one after another (as at a keyboard); with ``reimport_b``, that run's answers are re-imported
    twice while they rate (once a third, then two thirds, of the ratings are in)."""

    async def scenario() -> list[httpx.Response]:
        done = 0
        thirds = [asyncio.Event(), asyncio.Event()]

        async def rater(c: httpx.AsyncClient, name: str) -> list[httpx.Response]:
            nonlocal done
            out = []
            for (who, position), view in sorted(served.items()):
                if who != name:
                    continue
                body = {"action": "rate", "score": 1 + position % 5, **_versions(view)}
                headers = {"Authorization": f"Bearer {keys[name]}"}
                out.append(await c.put(f"/tasks/{task}/queue/{position}", json=body, headers=headers))
                done += 1
                for k, event in enumerate(thirds, start=1):
                    if done >= k * len(served) // 3:
                        event.set()
            return out

        async def reimports(c: httpx.AsyncClient, run: int) -> list[httpx.Response]:
            out = []
            for k, event in enumerate(thirds, start=1):
                await event.wait()
                out.append(await c.post(f"/runs/{run}/outputs", json=_outputs(f"b{k}"), headers=live.headers))
            return out

        async with httpx.AsyncClient(base_url=live.url, timeout=HANG_GUARD_S) as c:
            jobs = [rater(c, name) for name in keys]
            if reimport_b is not None:
                jobs.append(reimports(c, reimport_b))
            return [r for rs in await asyncio.gather(*jobs) for r in rs]

    return asyncio.run(scenario())


def _stored(engine: Engine, task: int) -> dict[tuple[str, int], tuple[int | None, int | None, int | None]]:
    """(run A's version, run B's version, the score as the rater gave it, left vs right) of every item."""
    with Session(engine) as s:
        rows = s.execute(
            select(
                User.name,
                TaskItem.position,
                TaskItem.output_version,
                TaskItem.output_b_version,
                TaskItem.preference,
                TaskItem.b_on_left,
            )
            .join(User, User.id == TaskItem.user_id)
            .where(TaskItem.task_id == task)
        )
        # Stored for run A vs run B on 1..5: flipped back when run B was shown on the left.
        return {
            (n, p): (va, vb, 6 - pref if b_left and pref is not None else pref)
            for n, p, va, vb, pref, b_left in rows
        }


def _report(live: Live, a: int, b: int) -> dict[str, Any]:
    r = httpx.get(
        f"{live.url}/reports/pairwise",
        params={"run_a": a, "run_b": b, "source": "absolute"},
        headers=live.headers,
        timeout=HANG_GUARD_S,
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_eighty_preferences_racing_two_reimports_keep_the_versions_served(
    live_server: Live, engine: Engine
) -> None:
    a, b = _pair(live_server)
    names = [f"sbs-{i}" for i in range(N_CLIENTS)]
    body = {"name": "sbs", "mode": "pairwise", "run_id": a, "run_b_id": b, "per_output": 2, "seed": 11}
    task, keys = rater_task(live_server, names, body, HANG_GUARD_S)

    served = _open_all(live_server, task, keys)
    assert {v for view in served.values() for v in _versions(view).values()} == {1}
    answers = _submit_all(live_server, task, keys, served, b)
    assert len(answers) == 2 * N_QUESTIONS + 2
    assert [r.status_code for r in answers] == [200] * len(answers), [
        r.text[:200] for r in answers if r.status_code != 200
    ]
    with Session(engine) as s:  # both re-imports changed every answer of run B
        assert set(s.scalars(select(Output.version).where(Output.run_id == b))) == {3}
    stored = _stored(engine, task)
    assert stored == {k: (1, 1, 1 + k[1] % 5) for k in served}  # what was served, whenever it was submitted
    read = _report(live_server, a, b)
    assert read["preferences"] == {"side_by_side": 0, "imported": 0, "stale": 2 * N_QUESTIONS}

    # Opened again: run B's answers at version 3 are served, and the preferences given on them are current.
    served = _open_all(live_server, task, keys)
    answers = _submit_all(live_server, task, keys, served, None)
    assert [r.status_code for r in answers] == [200] * 2 * N_QUESTIONS
    assert set(_stored(engine, task).values()) <= {(1, 3, s) for s in range(1, 6)}
    read = _report(live_server, a, b)
    assert read["preferences"] == {"side_by_side": 2 * N_QUESTIONS, "imported": 0, "stale": 0}


def _scores(engine: Engine, run: int) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str, int], int]]:
    """The run's current ratings by (rater, question), and those kept for previous answers by (rater,
    question, version); a rater's user and rater records share the name."""
    with Session(engine) as s:
        current = {
            (r, q): sc
            for r, q, sc in s.execute(
                select(Rater.name, Question.external_id, Rating.score)
                .join(Rater, Rater.id == Rating.rater_id)
                .join(Output, Output.id == Rating.output_id)
                .join(Question, Question.id == Output.question_id)
                .where(Output.run_id == run)
            )
        }
        kept = {}
        for r, q, v, sc in s.execute(
            select(Rater.name, Question.external_id, RatingHistory.output_version, RatingHistory.score)
            .join(Rater, Rater.id == RatingHistory.rater_id)
            .join(Output, Output.id == RatingHistory.output_id)
            .join(Question, Question.id == Output.question_id)
            .where(Output.run_id == run)
        ):
            assert (r, q, v) not in kept, "one kept rating per rater, question and version"
            kept[(r, q, v)] = sc
        return current, kept


def _notes(live: Live, run: int) -> list[str]:
    r = httpx.get(f"{live.url}/runs/{run}/report", headers=live.headers, timeout=HANG_GUARD_S)
    assert r.status_code == 200, r.text
    return [n for n in r.json()["notes"] if "previous answer" in n]


def test_eighty_scores_racing_two_reimports_keep_the_version_served(
    live_server: Live, engine: Engine
) -> None:
    run = _seed(live_server)
    names = [f"pw-{i}" for i in range(N_CLIENTS)]
    task, keys = rater_task(
        live_server, names, {"name": "pw", "run_id": run, "per_output": 2, "seed": 13}, HANG_GUARD_S
    )

    served = _open_all(live_server, task, keys)
    assert {tuple(_versions(view).items()) for view in served.values()} == {(("version", 1),)}
    # The score each rater gives each question: whose item it was, as served.
    given = {(n, view["question_id"]): 1 + p % 5 for (n, p), view in served.items()}
    answers = _submit_all(live_server, task, keys, served, run)
    assert len(answers) == 2 * N_QUESTIONS + 2
    assert [r.status_code for r in answers] == [200] * len(answers), [
        r.text[:200] for r in answers if r.status_code != 200
    ]
    with Session(engine) as s:  # both re-imports changed every answer
        assert set(s.scalars(select(Output.version).where(Output.run_id == run))) == {3}
    current, kept = _scores(engine, run)
    # All given on version 1, whenever they were submitted: before the first re-import (retired by it) or
    # after (kept directly); none is on the current answers, which no rater has seen.
    assert current == {}
    assert kept == {(n, q, 1): sc for (n, q), sc in given.items()}
    assert _notes(live_server, run) == [
        f"{2 * N_QUESTIONS} rating(s) are for a previous answer of their output "
        "(kept in history, excluded from this report)"
    ]

    # Opened again: version 3 is served, and the scores given on it are current ones.
    served = _open_all(live_server, task, keys)
    assert {v for view in served.values() for v in _versions(view).values()} == {3}
    answers = _submit_all(live_server, task, keys, served, None)
    assert [r.status_code for r in answers] == [200] * 2 * N_QUESTIONS
    current, kept_after = _scores(engine, run)
    assert current == {(n, view["question_id"]): 1 + p % 5 for (n, p), view in served.items()}
    assert kept_after == kept
