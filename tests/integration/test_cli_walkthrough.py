"""The README's team walkthrough (study import -> rating task -> raters rate -> report) run line by line as
`python -m app.cli ...` processes against a served app with authentication on: the admin's key for the
editor's lines, each rater's own key (printed by `keys create`) for theirs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests import studydata
from tests.conftest import issue_key
from tests.live import Served

ROOT = Path(__file__).resolve().parents[2]
QUALITY = {it.question: it.quality for it in studydata.items()}


def walkthrough() -> list[str]:
    """The command lines of the README's team walkthrough, comments dropped."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = (
        readme.split("### A team's study from the terminal", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    )
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith(("#", "export "))]


@pytest.fixture
def served(settings: Settings, engine: Any) -> Iterator[tuple[str, str]]:
    s = settings.model_copy(deep=True)
    s.jobs.embedded_worker = True
    s.jobs.poll_interval_s = 0.05
    app = create_app(s)
    key = issue_key(app, "admin")
    server = Served(app, lifespan="on").start()
    try:
        yield server.url, key
    finally:
        server.stop()


def ragmeta(cwd: Path, url: str, key: str, argv: list[str]) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGMETA_URL": url,
        "RAGMETA_API_KEY": key,
        "COLUMNS": "200",
    }
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, (argv, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def _score(rater: str, question: str) -> str:
    q = QUALITY[question]
    return str(q + 1 if rater == "alice" else max(1, min(5, q + 1 + (len(question) % 3 - 1))))


def test_the_readme_walkthrough_runs_with_the_cli_alone(served: tuple[str, str], tmp_path: Path) -> None:
    url, admin = served
    studydata.write_ragas_csv(tmp_path / "ragas_eval.csv")
    (tmp_path / "corpus.jsonl").write_bytes(studydata.corpus_jsonl())
    lines = walkthrough()
    assert [shlex.split(line.split("ragmeta ", 1)[1])[0:2] for line in lines if "task" in line][:3] == [
        ["task", "create"],
        ["task", "list"],
        ["task", "queue"],
    ]
    ids: dict[str, str] = {}  # what the README calls 1 (dataset, run, task) -> the id here
    keys: dict[str, str] = {}
    out: dict[str, str] = {}
    for line in lines:
        env_part, command = line.split("ragmeta ", 1)
        argv = shlex.split(command)
        rater_key = re.match(r"RAGMETA_API_KEY=\$(\w+)_KEY", env_part.strip())

        def ids_in(argv: list[str]) -> list[str]:
            slots = {"questions": [1], "score": [1], "report": [1]}.get(argv[0], [])
            if argv[0] == "task" and len(argv) > 2:
                slots = [2]
            kind = {"questions": "dataset", "score": "run", "report": "run"}.get(argv[0], "task")
            if argv[:2] == ["task", "create"]:
                kind = "run"
            return [ids[kind] if i in slots else a for i, a in enumerate(argv)]

        if rater_key is None:
            out[" ".join(argv[:2])] = text = ragmeta(tmp_path, url, admin, ids_in(argv))
            if argv[0] == "import-study":
                ids["dataset"] = re.search(r"dataset 'licenses': id (\d+)", text).group(1)  # type: ignore[union-attr]
                ids["run"] = re.search(r"run 'v1': id (\d+)", text).group(1)  # type: ignore[union-attr]
            elif argv[:2] == ["keys", "create"]:
                keys[argv[argv.index("--name") + 1]] = text.splitlines()[1].strip()
            elif argv[:2] == ["task", "create"]:
                ids["task"] = re.match(r"task (\d+)", text).group(1)  # type: ignore[union-attr]
            continue
        # A rater's line: alice's as written, then the same with bob's key; `task rate` for every item of
        # their queue, scored from the study's answer quality.
        for rater in ("alice", "bob"):
            assert rater_key.group(1) == "ALICE"
            if argv[:2] != ["task", "rate"]:
                out[f"{rater} {' '.join(argv[:2])}"] = ragmeta(tmp_path, url, keys[rater], ids_in(argv))
                continue
            queue = out[f"{rater} task queue"].splitlines()[2:]
            assert len(queue) == 10, queue
            for entry in queue:
                position, _status, _own, _qid, question = entry.split(maxsplit=4)
                argv_item = [*argv[:3], position, _score(rater, question), *argv[5:]]
                text = ragmeta(tmp_path, url, keys[rater], ids_in(argv_item))
                assert re.match(rf"position {position} \(q-\w+\): rated {argv_item[4]}", text), text
            assert "queue done" in text

    assert "ragas file, 10 rows" in out["import-study licenses"]
    assert "passages: 0 given, 10 exact" in out["import-study licenses"]
    assert (tmp_path / "questions.csv").read_text(encoding="utf-8").startswith("question_id,question,")
    assert out["alice task show"].startswith("[1/10] q-") and "rubric" in out["alice task show"]
    assert "agreement over 10 of 10 items" in out["task dashboard"]
    assert len((tmp_path / "ratings.csv").read_text(encoding="utf-8").splitlines()) == 21
    assert "score: done" in out["score 1"]
    assert "1. Overall and generation metrics" in out["report 1"]
    # the report the last line printed, as JSON: every analysis has metrics computed on n > 0 outputs
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}) as api:
        report = api.get(f"/runs/{ids['run']}/report").json()
    analyses = {a["id"]: a for a in report["analyses"]}
    assert set(analyses) == {1, 2, 3}
    for a in analyses.values():
        assert a["metrics"] and all(m["n"] > 0 for m in a["metrics"]), a
        assert any(m["n"] == 10 and m["pearson"]["estimate"] is not None for m in a["metrics"]), a
