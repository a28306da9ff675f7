"""Every operation of the OpenAPI document, called by every role and with no credential.

The expected policy is written out here, independently of the code, and every operation must be listed: a
new endpoint fails this test until someone decides who may call it.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from tests.api.team import Team, make_team

ADMIN = {"admin"}
WRITE = {"admin", "editor"}
READ = {"admin", "editor", "viewer"}
# alice is a rater of the team's task, carol a rater without any task.
ALL = {"admin", "editor", "viewer", "alice", "carol"}
MEMBER = {"alice"}
PUBLIC = {"public"}

POLICY: dict[str, set[str]] = {
    "healthz": PUBLIC,
    "livez": PUBLIC,
    "readyz": PUBLIC,
    "prometheus_metrics": PUBLIC,
    "list_datasets": READ,
    "create_dataset": WRITE,
    "get_dataset": READ,
    "import_documents": WRITE,
    "export_documents": READ,
    "import_questions": WRITE,
    "export_questions": READ,
    "index_dataset": WRITE,
    "retrieve": WRITE,
    "answer": WRITE,
    "generate": WRITE,
    "create_run": WRITE,
    "list_runs": READ,
    "get_run": READ,
    "import_outputs": WRITE,
    "export_traces": WRITE,
    "list_outputs": READ,
    "import_scores": WRITE,
    "import_run_annotations": WRITE,
    "get_scores": READ,
    "list_metrics": READ,
    "create_scoring": WRITE,
    "create_pair_judging": WRITE,
    "agreement": READ,
    "run_report": READ,
    "pooled_report": READ,
    "run_trust": READ,
    "run_stability": READ,
    "pooled_trust": READ,
    "report_svg": READ,
    "report_png": READ,
    "report_html": READ,
    "pooled_svg": READ,
    "pairwise_report": READ,
    "pairwise_svg": READ,
    "pairwise_png": READ,
    "systems_report": READ,
    "pooled_png": READ,
    "pooled_html": READ,
    "report_pdf": READ,
    "pooled_pdf": READ,
    "metric_items": READ,
    "metric_items_html": READ,
    "pooled_metric_items": READ,
    "pooled_metric_items_html": READ,
    "run_estimate": READ,
    "run_judge_configurations": READ,
    "run_judge_sensitivity": READ,
    "list_jobs": READ,
    "get_job": READ,
    "cancel_job": WRITE,
    "resume_job": WRITE,
    "me": ALL,
    "list_users": ADMIN,
    "create_user": ADMIN,
    "update_user": ADMIN,
    "list_keys": ADMIN,
    "create_key": ADMIN,
    "revoke_key": ADMIN,
    "list_raters": READ,
    "create_raters": WRITE,
    "list_rubrics": ALL,
    "create_rubric": WRITE,
    "import_ratings": WRITE | MEMBER,
    "import_preferences": WRITE,
    "list_preferences": READ,
    "list_ratings": READ | MEMBER,
    "list_tasks": READ,
    "create_task": WRITE,
    "get_task": READ,
    "dashboard": READ,
    "active_estimate": READ,
    "export": READ,
    "my_tasks": ALL,
    "my_queue": MEMBER,
    "my_item": MEMBER,
    "act": MEMBER,
    "next_item": MEMBER,
    # study import and undo: editors and admins; never raters (not even their own ratings: they change
    # them in their queue)
    "import_study": WRITE,
    "delete_dataset": WRITE,
    "delete_run": WRITE,
    "delete_ratings": WRITE,
    "delete_scores": WRITE,
    "delete_job_results": WRITE,
    # inline scoring spends judge calls: editors and admins, like scoring jobs
    "score_samples": WRITE,
}
CALLERS = ["anonymous", "admin", "editor", "viewer", "alice", "carol"]
ACCOUNT = {"editor": "edith", "viewer": "victor"}


def _world(client: TestClient) -> tuple[Team, dict[str, int]]:
    team = make_team(client)
    job = client.post(f"/datasets/{team.dataset}/index").json()["id"]
    spare = client.post("/keys", json={"name": "spare", "role": "viewer"}).json()["id"]
    victor = next(u["id"] for u in client.get("/users").json() if u["name"] == "victor")
    ids = {
        "dataset_id": team.dataset,
        "run_id": team.run,
        "task_id": team.task,
        "job_id": job,
        "key_id": spare,
        "user_id": victor,
        "position": 1,
        "metric": "classic.bleu",
    }
    return team, ids


def _body(op_id: str, caller: str) -> dict[str, Any]:
    if op_id == "import_ratings":
        # a valid row naming the caller, so that only the policy decides
        return {"json": [{"question_id": "q1", "rater": caller, "score": 3}]}
    if op_id == "act":
        return {"json": {"action": "skip"}}
    if op_id == "update_user":
        return {"json": {}}
    return {"json": {}}


def test_every_operation_for_every_role(client: TestClient) -> None:
    team, ids = _world(client)
    schema = client.get("/openapi.json").json()
    operations = [
        (method.upper(), path, op["operationId"])
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    ]
    assert {op for *_, op in operations} == set(POLICY), "classify every operation in POLICY"
    failures = []
    calls = 0
    for method, path, op_id in operations:
        url = re.sub(r"\{(\w+)\}", lambda m: str(ids[m.group(1)]), path)
        params = {"runs": str(team.run)} if path.startswith("/report") else None
        if op_id == "delete_ratings":
            params = {"rater": "bob"}  # another rater's ratings: alice must get 403 like every non-writer
        allowed = POLICY[op_id]
        for caller in CALLERS:
            who = ACCOUNT.get(caller, caller)
            kw = _body(op_id, who) if method in ("POST", "PUT", "PATCH") else {}
            r = team.as_(who, method, url, params=params, **kw)
            calls += 1
            if "public" in allowed:
                ok = r.status_code < 400
            elif caller == "anonymous":
                ok = r.status_code == 401 and r.json()["error"] == "Unauthorized"
            elif caller in allowed:
                ok = r.status_code not in (401, 403) and r.status_code < 500
            else:
                ok = r.status_code == 403 and r.json()["error"] == "Forbidden"
            if not ok:
                failures.append(f"{method} {path} as {caller}: {r.status_code} {r.text[:150]}")
    assert not failures, "\n".join(failures)
    assert calls == len(POLICY) * len(CALLERS)
