"""`ragmeta gate --runs A,B --metric M`: the decision read from the service's two PPI estimates (no statistic
of its own), its evidence, its exit codes, and the command-line errors."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

import ragmeta
from app import client as cli
from app.cli import build_parser
from app.cli_common import UsageError

N, RATED = 12, 8
# Human scores (two raters) and a metric that follows them; run A answers worse than run B.
LOW = [1, 2, 1, 2, 2, 1, 2, 1, 2, 1, 1, 2]
HIGH = [5, 4, 5, 4, 5, 5, 4, 5, 4, 5, 4, 5]


def run(c: TestClient, *argv: str) -> int:
    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def _run(api: ragmeta.Client, ds: int, name: str, human: list[int]) -> int:
    r = api.create_run(ds, {"name": name})
    api.import_outputs(r.id, [{"question_id": f"q{i}", "answer": f"{name} {i}"} for i in range(N)])
    scores = [
        {"question_id": f"q{i}", "metric": "external.m", "value": h / 5 + i % 3 / 50}
        for i, h in enumerate(human)
    ]
    api.import_scores(r.id, scores)
    ratings = [
        {"question_id": f"q{i}", "rater": rater, "score": min(5, h + (rater == "bob" and i % 4 == 0))}
        for i, h in enumerate(human[:RATED])
        for rater in ("ann", "bob")
    ]
    api.import_ratings(r.id, ratings)
    return r.id


def _study(client: TestClient) -> tuple[ragmeta.Client, int, int]:
    api = ragmeta.Client(http=client)
    ds = api.create_dataset({"name": "gate", "language": "en"})
    api.import_questions(ds.id, [{"external_id": f"q{i}", "question": f"Question {i}?"} for i in range(N)])
    api.create_raters([{"name": "ann"}, {"name": "bob"}])
    return api, _run(api, ds.id, "v1", LOW), _run(api, ds.id, "v2", HIGH)


def test_the_gate_passes_b_over_a_and_not_a_over_b(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    api, a, b = _study(client)
    assert run(client, "gate", "--runs", f"{a},{b}", "--metric", "external.m", "--format", "json") == 0
    d = json.loads(capsys.readouterr().out)
    # The evidence is the service's own estimates, compared: nothing recomputed.
    est_a, est_b = (next(m for m in api.run_estimate(r).metrics if m.metric == "external.m") for r in (a, b))
    assert est_a.ppi is not None and est_b.ppi is not None
    assert (d["a"]["ci_high"], d["b"]["ci_low"]) == (est_a.ppi.ci_high, est_b.ppi.ci_low)
    assert d["passed"] and d["gap"] == pytest.approx(est_b.ppi.ci_low - est_a.ppi.ci_high) and d["gap"] > 0
    assert d["a"]["n_rated"] == RATED and "at most 5%" in d["error_control"]
    assert run(client, "gate", "--runs", f"{b},{a}", "--metric", "external.m") == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT SHOWN: run B is not shown to beat run A")
    assert "is not above A's upper limit" in out and "error control:" in out
    # A margin wider than the gap, or more ratings than there are, and B does not pass.
    assert run(client, "gate", "--runs", f"{a},{b}", "--metric", "external.m", "--require", "margin=4") == 1
    assert "plus the margin 4" in capsys.readouterr().out
    assert run(client, "gate", "--runs", f"{a},{b}", "--metric", "external.m", "--require", "rated=9") == 1
    assert f"{RATED} rated outputs, fewer than the 9 required" in capsys.readouterr().out


def test_the_gate_s_command_line_errors(client: TestClient) -> None:
    api, a, b = _study(client)
    other = api.create_dataset({"name": "other"}).id
    c = api.create_run(other, {"name": "elsewhere"}).id
    cases = [
        (["--runs", f"{a}", "--metric", "external.m"], "two different run ids"),
        (["--runs", f"{a},x", "--metric", "external.m"], "two run ids"),
        (["--runs", f"{a},{b}", "--metric", "external.nope"], "no metric 'external.nope'.*external.m"),
        (["--runs", f"{a},{b}", "--metric", "external.m", "--require", "speed=3"], "margin=N or rated=N"),
        (["--runs", f"{a},{b}", "--metric", "external.m", "--require", "margin=x"], "must be a number"),
        (["--runs", f"{a},{c}", "--metric", "external.m"], "different datasets"),
    ]
    for argv, message in cases:
        with pytest.raises(UsageError, match=message):
            run(client, "gate", *argv)
    with pytest.raises(ragmeta.NotFound):
        run(client, "gate", "--runs", f"{a},987654", "--metric", "external.m")
