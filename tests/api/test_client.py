"""The `ragmeta` client commands, driven against the app (embedded worker on) through a TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import client as cli
from app.cli import build_parser
from app.main import create_app
from app.settings import Settings
from tests.api.helpers import MINI
from tests.conftest import admin_client


@pytest.fixture
def live(settings: Settings, engine: Any) -> Iterator[TestClient]:
    s = settings.model_copy(deep=True)
    s.jobs.embedded_worker = True
    s.jobs.poll_interval_s = 0.05
    with admin_client(create_app(s)) as c:
        yield c


def run(c: TestClient, *argv: str) -> int:
    # Parse with the real parser, then dispatch on the test client instead of a network client.
    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def test_worked_example(live: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(
            live,
            "import-dataset",
            "mini",
            "--language",
            "fr",
            "--documents",
            str(MINI / "documents.jsonl"),
            "--questions",
            str(MINI / "questions.jsonl"),
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "documents: 3 received, 3 created" in out and "questions: 5 received, 5 created" in out
    ds = out.split("dataset 'mini': id ", 1)[1].split()[0]
    assert run(live, "create-run", ds, "ext", "--retriever", "external") == 0
    run_id = live.get(f"/datasets/{ds}/runs").json()[0]["id"]
    assert run(live, "import-outputs", str(run_id), str(MINI / "outputs_ragas.json")) == 0
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "question_id,rater,score\nq1,ann,5\nq1,bob,4\nq2,ann,2\nq2,bob,3\nq4,ann,5\nq4,bob,5\n"
    )
    assert run(live, "rate", str(run_id), str(ratings)) == 0
    assert "ratings: 6 received, 6 created" in capsys.readouterr().out
    assert run(live, "score", str(run_id), "--metrics", "classic.bleu,ref.word_recall") == 0
    assert "score: done" in capsys.readouterr().out
    assert run(live, "report", str(run_id)) == 0
    assert "1. Overall and generation metrics" in capsys.readouterr().out
    fig = tmp_path / "f.png"
    assert run(live, "figure", str(run_id), "-o", str(fig)) == 0
    assert fig.read_bytes()[:4] == b"\x89PNG"


def test_errors_are_printed_with_rows(live: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(cli.ClientError, match="404 NotFound: run 1 does not exist"):
        run(live, "score", "1", "--metrics", "classic.bleu")
    ds = live.post("/datasets", json={"name": "x"}).json()["id"]
    run_id = live.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    with pytest.raises(cli.ClientError, match=r"metrics\[0\]: unknown metric 'nope.metric'"):
        run(live, "score", str(run_id), "--metrics", "nope.metric")
