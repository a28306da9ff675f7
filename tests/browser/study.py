"""A study to rate: a dataset, a run answering every question, and a rating task."""

from __future__ import annotations

import httpx


def make_study(api: httpx.Client, n: int, raters: list[str], **task: object) -> tuple[int, int]:
    """A dataset of ``n`` questions, a run answering them all, and a rating task for ``raters``."""
    doc = " ".join(f"La règle {i} s'applique aux clients du forfait {i}." for i in range(n))
    ds = api.post("/datasets", json={"name": f"study-{n}", "language": "fr"}).json()["id"]
    assert api.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": doc}]).status_code == 200
    questions = []
    for i in range(n):
        sentence = f"La règle {i} s'applique aux clients du forfait {i}."
        start = doc.index(sentence)
        questions.append(
            {
                "external_id": f"q{i}",
                "question": f"À qui s'applique la règle {i} ?",
                "reference_answer": f"Aux clients du forfait {i}.",
                "passages": [{"document_id": "d", "start": start, "end": start + len(sentence)}],
            }
        )
    assert api.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    run = api.post(f"/datasets/{ds}/runs", json={"name": "v1"}).json()["id"]
    outputs = [
        {
            "question_id": f"q{i}",
            "answer": f"La règle {i} concerne le forfait {i}.",
            "retrieved": [
                {"text": f"La règle {i} s'applique aux clients du forfait {i}."},
                {"text": "Autre."},
            ],
        }
        for i in range(n)
    ]
    assert api.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    r = api.post("/tasks", json={"name": "Étude v1", "run_id": run, "raters": raters, **task})
    assert r.status_code == 201, r.text
    return run, r.json()["id"]
