"""The real `ragmeta` executable against a served app: every command of the README's worked example, then the
user errors (one line, documented exit code, no traceback), --url / RAGMETA_URL and Ctrl-C while following a
job. The executable imports this checkout's code (PYTHONPATH), whatever the virtualenv was installed from."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.cli import build_parser
from app.main import create_app
from app.settings import Settings
from tests.conftest import open_mode
from tests.live import serve

ROOT = Path(__file__).resolve().parents[2]
RAGMETA = Path(sys.executable).parent / "ragmeta"
DEMO = ROOT / "data" / "demo"


def worked_example() -> list[str]:
    """The `ragmeta ...` lines of the README's worked example, comments dropped."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Worked example with the `ragmeta` command", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("ragmeta ")]


class Cli:
    def __init__(self, url: str, cwd: Path) -> None:
        assert RAGMETA.exists(), f"{RAGMETA} is missing: `make setup` installs the ragmeta command"
        self.cwd = cwd
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RAGMETA_URL": url,
            "COLUMNS": "120",
        }

    def __call__(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(RAGMETA), *argv],
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        assert "Traceback" not in result.stderr, result.stderr
        return result


@pytest.fixture
def served(settings: Settings, engine: Any) -> Iterator[str]:
    s = open_mode(settings)
    s.jobs.embedded_worker = True
    s.jobs.poll_interval_s = 0.05
    with serve(create_app(s)) as url:
        yield url


def test_help_lists_every_command(tmp_path: Path) -> None:
    cli = Cli("http://127.0.0.1:9", tmp_path)
    out = cli("--help")
    assert out.returncode == 0
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert {"migrate", "serve", "run", "worker", "jobs", "wait", "cancel", "scores", "figure"} <= commands
    for name in commands:
        assert re.search(rf"^\s+{re.escape(name)}\s", out.stdout, re.M), name
    for line in worked_example():
        assert shlex.split(line)[1] in commands, line
    assert "exit codes:" in out.stdout and "RAGMETA_URL" in out.stdout
    # every argument of every command has a help text
    for name, sub in build_parser()._subparsers._group_actions[0].choices.items():  # type: ignore[union-attr]
        for action in sub._actions:
            assert action.help, (name, action.dest)


def test_readme_worked_example_through_the_executable(served: str, tmp_path: Path) -> None:
    cli = Cli(served, tmp_path)
    before = set(ROOT.iterdir())
    ids: dict[str, str] = {}  # README id -> id in this database
    # The README's ids are those of a database holding the demo (dataset 1, runs 1-2, jobs 1-3).
    readme_runs = ["3", "4"]
    outputs: dict[str, str] = {}
    for line in worked_example():
        argv = shlex.split(line.replace("$DEMO", str(DEMO)))[1:]
        for i in range(1, len(argv)):
            if i == 1 and argv[i] in ids:
                argv[i] = ids[argv[i]]
            elif argv[i - 1] == "--runs":
                argv[i] = ",".join(ids.get(x, x) for x in argv[i].split(","))
        result = cli(*argv)
        assert result.returncode == 0, (line, result.stdout, result.stderr)
        outputs[line] = result.stdout
        new_id = re.search(r"id (\d+)|job (\d+)", result.stdout)
        if argv[0] == "import-dataset":
            ids["2"] = new_id.group(1)  # type: ignore[union-attr]
        elif argv[0] == "create-run":
            ids[readme_runs.pop(0)] = new_id.group(1)  # type: ignore[union-attr]
        elif argv[0] == "score" and "--no-wait" in argv:
            ids["7"] = new_id.group(2)  # type: ignore[union-attr]

    by_cmd = {shlex.split(k)[1] + " " + " ".join(shlex.split(k)[2:3]): v for k, v in outputs.items()}
    assert "documents: 30 received" in by_cmd["import-dataset demo-copy"]
    assert "questions: 50 received" in by_cmd["import-dataset demo-copy"]
    assert "index: done" in by_cmd["index 2"] and "generate: done" in by_cmd["generate 3"]
    assert "outputs: 50 received" in by_cmd["import-outputs 4"]
    assert "ratings: 150 received" in by_cmd["rate 3"] and "ratings: 100 received" in by_cmd["rate 4"]
    assert re.match(r"run 'shipped-bm25': id \d+$", by_cmd["create-run 2"].strip())
    assert re.search(r"score: job \d+ (queued|running) \(\d+ items\); ragmeta wait \d+", by_cmd["score 4"])
    assert by_cmd["scores 3"].strip() == "wrote scores.csv"
    assert by_cmd["report --runs"].strip() == "wrote report.md"
    assert by_cmd["figure --runs"].strip() == "wrote report.svg"
    assert "score: done" in by_cmd["score 3"]
    assert "scoring" in by_cmd["jobs "] and "scoring: done" in by_cmd["wait 7"]
    text = by_cmd["report 3"]
    assert "8 of 38 metrics computed; 30 need an LLM judge" in text and "verdict:" in text
    assert not re.search(r"\bnan\b", text)
    scores = (tmp_path / "scores.csv").read_text(encoding="utf-8").splitlines()
    assert scores[0].startswith("output_id,question_id,classic.bertscore_f1") and len(scores) == 51
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Which metrics track your raters? — my-hybrid") and "shipped-bm25" in md
    svg = (tmp_path / "report.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and 'width="100%"' in svg
    # The run of imported outputs records nothing it was not told.
    with httpx.Client(base_url=served) as http:
        run4 = http.get(f"/runs/{ids['4']}").json()
    assert run4["system"] == {}
    assert set(ROOT.iterdir()) == before, "the worked example wrote into the repository"


def test_user_errors_are_one_line_with_documented_exit_codes(served: str, tmp_path: Path) -> None:
    cli = Cli(served, tmp_path)
    with httpx.Client(base_url=served) as http:
        ds = http.post("/datasets", json={"name": "d"}).json()["id"]
        run = http.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
        run2 = http.post(f"/datasets/{ds}/runs", json={"name": "r2"}).json()["id"]
    missing = cli("import-outputs", str(run), "nope.json")
    assert missing.returncode == 2 and missing.stderr.strip() == "ragmeta: file not found: nope.json"
    gif = cli("figure", str(run), "-o", "f.gif")
    assert gif.returncode == 2 and "use .pdf, .png, .svg" in gif.stderr and not (tmp_path / "f.gif").exists()
    assert cli("figure", "-o", "f.svg").returncode == 2  # no run
    pdf = cli("figure", str(run), "-o", "f.pdf")
    assert pdf.returncode == 0 and (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"
    png = cli("figure", "--runs", f"{run},{run2}", "-o", "f.png")
    assert png.returncode == 0 and (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    pooled = cli("report", str(run), "--runs", str(run2), "--format", "json")
    assert pooled.returncode == 0 and f"pooling runs {run}, {run2}" in pooled.stderr
    assert '"name": "r2"' in pooled.stdout and '"name": "r"' in pooled.stdout
    unknown = cli("score", "999999")
    assert unknown.returncode == 1 and "404 NotFound" in unknown.stderr
    bad = cli("score", str(run), "--metrics", "nope.metric")
    assert bad.returncode == 1 and "metrics[0]: unknown metric 'nope.metric'" in bad.stderr
    assert cli("report", str(run), "--bogus").returncode == 2
    # --url anywhere, and it overrides RAGMETA_URL; an unreachable service is exit code 3
    dead = {"RAGMETA_URL": "http://127.0.0.1:9"}
    assert cli("jobs", env=dead).returncode == 3
    assert cli("jobs", "--url", served, env=dead).returncode == 0
    assert cli("--url", served, "jobs", env=dead).returncode == 0
    created = cli("create-run", str(ds), "ext", "--retriever", "external")
    assert created.returncode == 0
    with httpx.Client(base_url=served) as http:
        runs = {r["name"]: r for r in http.get(f"/datasets/{ds}/runs").json()}
    assert runs["ext"]["system"] == {"retriever": "external"}


def test_ctrl_c_leaves_the_job_running_and_says_how_to_follow_it(
    settings: Settings, engine: Any, tmp_path: Path
) -> None:
    # No worker: the job stays queued while the command follows it.
    with serve(create_app(open_mode(settings))) as url:
        cli = Cli(url, tmp_path)
        with httpx.Client(base_url=url) as http:
            ds = http.post("/datasets", json={"name": "d"}).json()["id"]
            http.post(f"/datasets/{ds}/documents", json=[{"external_id": "doc", "text": "Un deux trois."}])
            http.post(f"/datasets/{ds}/questions", json=[{"external_id": "q", "question": "Q?"}])
            run = http.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
            http.post(f"/runs/{run}/outputs", json=[{"question_id": "q", "answer": "Un."}])
        started = cli("score", str(run), "--metrics", "classic.bleu", "--no-wait")
        assert started.returncode == 0, started.stderr
        job = re.search(r"job (\d+)", started.stdout).group(1)  # type: ignore[union-attr]
        proc = subprocess.Popen(
            [str(RAGMETA), "wait", job],
            # an earlier test in this process may leave SIGINT ignored, which a child inherits (Python then
            # keeps): a user's shell never starts the command that way
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            cwd=tmp_path,
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert f"following job {job}" in first
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        assert "it goes on in the service" in err
        assert f"ragmeta wait {job}" in err and f"ragmeta cancel {job}" in err
        with httpx.Client(base_url=url) as http:
            assert http.get(f"/jobs/{job}").json()["status"] == "queued"
        cancelled = cli("cancel", job)
        assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout
        ended = cli("wait", job)
        assert ended.returncode == 4 and "cancelled" in ended.stdout
