"""A small team around one rated run: an account of every role and a rating task for two raters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run
from tests.conftest import issue_key

QUESTIONS = ["q1", "q2", "q3", "q4", "q5"]


def all_outputs(prefix: str = "Réponse") -> list[dict[str, Any]]:
    return [
        {
            "question_id": q,
            "answer": f"{prefix} à la question {q}.",
            "retrieved": [{"text": f"Premier contexte de {q}."}, {"text": f"Second contexte de {q}."}],
        }
        for q in QUESTIONS
    ]


@dataclass
class Team:
    client: TestClient
    dataset: int
    run: int
    task: int
    keys: dict[str, str] = field(default_factory=dict)

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"} if who != "anonymous" else {}

    def as_(self, who: str, method: str, url: str, **kw: Any) -> Any:
        """A request by ``who`` (an account name, or "anonymous"): the shared client carries the admin's
        key, so these go through a bare client on the same app that sends only the given credential."""
        headers = {**kw.pop("headers", {}), **self.auth(who)}
        return TestClient(self.client.app).request(method, url, headers=headers, **kw)


def make_team(client: TestClient, task: dict[str, Any] | None = None) -> Team:
    ds = load_mini(client)
    run = make_run(client, ds)
    r = client.post(f"/runs/{run}/outputs", json=all_outputs())
    assert r.status_code == 200, r.text
    app: Any = client.app
    keys = {"admin": client.headers["Authorization"].split()[1]}
    for name, role in [
        ("edith", "editor"),
        ("victor", "viewer"),
        ("alice", "rater"),
        ("bob", "rater"),
        ("carol", "rater"),
    ]:
        keys[name] = issue_key(app, name, role)
    body = {"name": "study", "run_id": run, "raters": ["alice", "bob"], "seed": 7, **(task or {})}
    r = client.post("/tasks", json=body)
    assert r.status_code == 201, r.text
    return Team(client=client, dataset=ds, run=run, task=r.json()["id"], keys=keys)
