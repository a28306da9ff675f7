"""The `ragmeta` commands of a team's workflow (raters, rating tasks, the questions export, undo), parsed by
the real parser and dispatched on the app's test client; the CLI sends rating sheets as they are."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import client as cli
from app.cli import build_parser
from app.cli_common import ClientError
from tests.api.helpers import load_mini
from tests.api.team import all_outputs, make_team
from tests.api.test_outputs import make_run
from tests.conftest import issue_key

APP = Path(__file__).resolve().parents[2] / "app"
CLI_MODULES = ["cli", "cli_common", "client", "compare_client", "team_client", "trust_client", "gate"]


def run(c: TestClient, *argv: str) -> int:
    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def rated_run(client: TestClient) -> tuple[int, int]:
    ds = load_mini(client)
    run_id = make_run(client, ds)
    assert client.post(f"/runs/{run_id}/outputs", json=all_outputs()).status_code == 200
    return ds, run_id


def test_a_cp1252_semicolon_sheet_is_sent_as_is_and_its_raters_registered(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_id = rated_run(client)
    sheet = tmp_path / "notes.csv"
    # As a French spreadsheet saves it: Windows-1252, `;` separators, a name with an accent.
    sheet.write_bytes(
        "question_id;rater;score;comment\r\nq1;zoé;4;très bien\r\nq2;zoé;2;bof\r\n".encode("cp1252")
    )
    assert run(client, "rate", str(run_id), str(sheet)) == 0
    out = capsys.readouterr().out
    assert "ratings: 2 received, 2 created" in out
    assert "raters registered: zoé" in out and "cp1252" in out.lower().replace("windows-1252", "cp1252")
    ratings = client.get(f"/runs/{run_id}/ratings").json()
    assert sorted((r["rater"], r["score"], r["comment"]) for r in ratings) == [
        ("zoé", 2, "bof"),
        ("zoé", 4, "très bien"),
    ]
    assert "zoé" in [r["name"] for r in client.get("/raters").json()]


def test_without_registering_an_unknown_rater_is_the_service_s_refusal(
    client: TestClient, tmp_path: Path
) -> None:
    _, run_id = rated_run(client)
    sheet = tmp_path / "notes.csv"
    sheet.write_bytes(b"question_id;rater;score\nq1;yann;4\n")
    with pytest.raises(ClientError, match="unknown rater 'yann'"):
        run(client, "rate", str(run_id), str(sheet), "--no-register-raters")


def test_raters_register_and_list(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(client, "raters", "add", "ann", "ben") == 0
    assert run(client, "raters", "add", "ann") == 0
    assert "0 registered, 1 already registered" in capsys.readouterr().out
    assert run(client, "raters", "list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "name"]
    assert {line.split()[1] for line in lines[1:]} >= {"ann", "ben"}


def test_rating_task_create_list_rate_dashboard_export(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_id = rated_run(client)
    app: Any = client.app
    keys = {name: issue_key(app, name, "rater") for name in ("alice", "bob")}
    assert (
        run(client, "task", "create", str(run_id), "--raters", "alice,bob", "--name", "v1", "--seed", "3")
        == 0
    )
    out = capsys.readouterr().out
    task = int(out.split("task ", 1)[1].split()[0])
    assert "5 outputs" in out and "seed 3" in out
    assert run(client, "task", "list") == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split()[:3] == ["id", "name", "mode"]
    assert listing[1].split()[:2] == [str(task), "v1"] and listing[1].endswith("0/10")
    for name, key in keys.items():
        rater = TestClient(app, headers={"Authorization": f"Bearer {key}"})
        assert run(rater, "task", "queue", str(task)) == 0
        rows = capsys.readouterr().out.splitlines()[2:]
        assert len(rows) == 5
        for row in rows:
            position, qid = row.split()[0], row.split()[3]
            score = "5" if name == "alice" else ("1" if qid == "q3" else "4")
            assert (
                run(rater, "task", "rate", str(task), position, score, "--comment", f"{name} on {qid}") == 0
            )
        assert "queue done" in capsys.readouterr().out
        # a score outside the rubric is the service's 422, naming the field
        with pytest.raises(ClientError, match="score"):
            run(rater, "task", "rate", str(task), "1", "9")
    assert run(client, "task", "dashboard", str(task), "--threshold", "3") == 0
    dash = capsys.readouterr().out
    assert "alice" in dash and "bob" in dash and "agreement over 5 of 5 items" in dash
    assert "q3" in dash.split("spread by 3 or more", 1)[1]  # 5 vs 1
    assert run(client, "task", "dashboard", str(task), "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["task"]["id"] == task
    target = tmp_path / "ratings.csv"
    assert run(client, "task", "export", str(task), "-o", str(target)) == 0
    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert len(rows) == 10 and {r["rater"] for r in rows} == {"alice", "bob"}
    # the export is what `ragmeta rate` imports: back over the run it changes nothing
    assert run(client, "rate", str(run_id), str(target)) == 0
    assert "10 received, 0 created, 0 updated, 10 unchanged" in capsys.readouterr().out
    with pytest.raises(cli.UsageError, match=r"use \.csv, \.json"):
        run(client, "task", "export", str(task), "-o", str(tmp_path / "r.xlsx"))


def test_questions_export_to_json_jsonl_and_csv(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = load_mini(client)
    api = client.get(f"/datasets/{ds}/questions").json()
    for suffix in ("json", "jsonl", "csv"):
        target = tmp_path / f"q.{suffix}"
        assert run(client, "questions", str(ds), "-o", str(target)) == 0
        assert f"wrote {target}" in capsys.readouterr().out
        text = target.read_text(encoding="utf-8")
        if suffix == "json":
            assert json.loads(text) == api
        elif suffix == "jsonl":
            assert [json.loads(x) for x in text.splitlines()] == api
        else:
            rows = list(csv.DictReader(io.StringIO(text)))
            assert [r["question_id"] for r in rows] == [q["external_id"] for q in api]
            assert rows[0]["passages"].endswith("(given)")
    # the JSONL written re-imports as unchanged
    back = client.post(
        f"/datasets/{ds}/questions",
        content=(tmp_path / "q.jsonl").read_bytes(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert back.json()["unchanged"] == len(api)


def test_undo_every_delete_route_with_cascade(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = make_team(client)
    sheet = tmp_path / "r.csv"
    sheet.write_text("question_id,rater,score\nq1,alice,4\nq2,alice,3\nq1,bob,2\n")
    assert run(client, "rate", str(team.run), str(sheet)) == 0
    scores = tmp_path / "s.csv"
    scores.write_text("question_id,metric,value\nq1,external.mine,0.5\nq2,external.mine,0.7\n")
    assert (
        client.post(f"/runs/{team.run}/scores", files={"file": ("s.csv", scores.read_bytes())}).status_code
        == 200
    )
    capsys.readouterr()
    assert run(client, "delete", "ratings", str(team.run), "--rater", "alice") == 0
    assert "rating 2" in capsys.readouterr().out
    assert [r["rater"] for r in client.get(f"/runs/{team.run}/ratings").json()] == ["bob"]
    assert run(client, "delete", "scores", str(team.run), "external.mine") == 0
    assert "metric_score 2" in capsys.readouterr().out
    with pytest.raises(ClientError, match=r"409.*cascade"):
        run(client, "delete", "run", str(team.run))
    assert client.get(f"/runs/{team.run}").status_code == 200
    assert run(client, "delete", "run", str(team.run), "--cascade") == 0
    assert "deleted run" in capsys.readouterr().out
    assert client.get(f"/runs/{team.run}").status_code == 404
    with pytest.raises(ClientError, match="409"):
        run(client, "delete", "dataset", str(team.dataset))
    assert run(client, "delete", "dataset", str(team.dataset), "--cascade") == 0
    assert client.get(f"/datasets/{team.dataset}").status_code == 404
    with pytest.raises(ClientError, match="404"):
        run(client, "delete", "job-results", "999")


def _imports(module: str) -> list[tuple[str, list[str]]]:
    tree = ast.parse((APP / f"{module}.py").read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.module == "app":
            out += [(f"app.{a.name}", []) for a in node.names]
    return out


def test_the_cli_modules_import_no_private_names_and_form_no_circle() -> None:
    graph: dict[str, set[str]] = {}
    for m in CLI_MODULES:
        deps = set()
        for target, names in _imports(m):
            short = target.removeprefix("app.")
            if target.startswith("app.") and short in CLI_MODULES:
                deps.add(short)
                private = [n for n in names if n.startswith("_")]
                assert not private, f"app/{m}.py imports private names {private} from {target}"
        graph[m] = deps

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d})) for d in graph[start])

    circles = [m for m in CLI_MODULES if reaches(m, m, set())]
    assert not circles, graph


def test_the_cli_modules_hold_no_http_code_of_their_own() -> None:
    """Every request of a command goes through the Python client (app.sdk): no CLI module imports an HTTP
    library, and none builds a request by hand."""
    http = {"httpx", "requests", "urllib.request", "http.client", "aiohttp"}
    for m in CLI_MODULES:
        imported = {target for target, _ in _imports(m)}
        assert not imported & http, f"app/{m}.py imports {sorted(imported & http)}"
        tree = ast.parse((APP / f"{m}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "post", "put", "patch", "delete", "request", "stream")
                and any(_is_path(a) for a in node.args)
            ):
                raise AssertionError(f"app/{m}.py line {node.lineno} sends a request by hand")


def _is_path(arg: ast.expr) -> bool:
    """A URL path written out: "/runs", f"/runs/{run}"."""
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    return isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("/")
