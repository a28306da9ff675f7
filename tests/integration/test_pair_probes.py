"""Position and length probes of a pairwise judge, end to end against a scripted loopback judge with a known
position bias: each pair of two runs' answers is asked in both orders (two judge calls, counted at the stub),
the position-consistency rate and the longer-answer shares equal counts written out below with scipy's
Wilson interval, a judge failure is an error per pair with its cause (never a verdict), and a re-run makes 0
judge calls. Also the job's bad input (a 4xx naming the field) and the report's JSON, CSV, Markdown, page
section and terminal text."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from scipy import stats as sps
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse

from app.cli import _stability_text
from services.config import Settings
from services.models import PairVerdict
from services.pairjudge.service import parse_verdict
from services.reports.stability import StabilityReport, stability_section
from tests.integration.judges.test_opik import judge
from tests.integration.test_scoring import drain

__all__ = ["judge"]  # the fixture, used by name

QUESTIONS = [f"q{i}" for i in range(11)]
# Run B's answer is longer than run A's everywhere but q9 (three words each).
ANSWER_A = {q: f"Short {q}." for q in QUESTIONS} | {"q9": "Equal answer nine."}
ANSWER_B = {q: f"A longer answer for {q}." for q in QUESTIONS} | {"q9": "Same length here."}
# The judge's script: q0-q2 the answer shown first wins, q3 the one shown second; q4 a reply that is not a
# verdict; q5-q7 the longer answer (run B's) wins; q8 run A's (shorter) wins; q9 a tie; q10 the judge fails.
FIRST_WINS, SECOND_WINS, LONGER_WINS = {"q0", "q1", "q2"}, {"q3"}, {"q5", "q6", "q7"}


def script(body: dict[str, Any], _: int, outage: bool = True) -> Any:
    prompt = body["messages"][-1]["content"]
    found = re.search(r"Question:\n(.*?)\n\nAnswer 1:\n(.*?)\n\nAnswer 2:\n(.*?)\n\nReply", prompt, re.S)
    assert found is not None, prompt
    question, first, second = found.groups()
    q = question.split()[-1].rstrip("?")
    if q == "q10" and outage:
        return JSONResponse({"error": {"message": "scripted outage"}}, status_code=500)
    if q == "q4":
        return "I would rather not say."
    if q in FIRST_WINS:
        winner = "1"
    elif q in SECOND_WINS:
        winner = "2"
    elif q in LONGER_WINS:
        winner = "1" if len(first.split()) > len(second.split()) else "2"
    elif q == "q8":
        winner = "1" if first == ANSWER_A[q] else "2"
    else:
        winner = "tie"
    return f'{{"winner": "{winner}", "reason": "scripted"}}'


def two_runs(client: TestClient) -> tuple[int, int]:
    ds = client.post("/datasets", json={"name": "pairs", "language": "en"}).json()["id"]
    qs = [{"external_id": q, "question": f"What about {q}?"} for q in QUESTIONS]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    runs = []
    for name, answers in (("a", ANSWER_A), ("b", ANSWER_B)):
        run = client.post(f"/datasets/{ds}/runs", json={"name": name}).json()["id"]
        outs = [{"question_id": q, "answer": answers[q]} for q in QUESTIONS]
        assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
        runs.append(int(run))
    return runs[0], runs[1]


def submit(client: TestClient, run: int, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/runs/{run}/pair-judging-jobs", json=body)
    assert r.status_code == 202, r.text
    drain(client)
    job: dict[str, Any] = client.get(f"/jobs/{r.json()['id']}").json()
    assert job["status"] == "done", job
    return job


def wilson(k: int, n: int) -> tuple[float, float]:
    ci = sps.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


def test_verdicts_are_read_back_in_the_runs_terms() -> None:
    assert parse_verdict('{"winner": "1", "reason": "x"}', a_first=True).winner == "a"
    assert parse_verdict('{"winner": "1"}', a_first=False).winner == "b"
    assert parse_verdict('Sure: {"winner": 2}', a_first=True).winner == "b"
    assert parse_verdict('{"winner": "TIE"}', a_first=False).winner == "tie"
    bad = parse_verdict('{"winner": "3"}', a_first=True)
    assert bad.winner is None and (bad.error or "").startswith("malformed: ")


def test_both_orders_are_two_calls_and_the_probes_equal_written_counts(
    client: TestClient, judge: Any, engine: Engine, settings: Settings
) -> None:
    fake = judge(lambda body: None, retries=0)
    fake.script = script
    run_a, run_b = two_runs(client)
    assert client.post("/raters", json=[{"name": "h1"}]).status_code == 200
    # Human preferences (-2..2, high end for run B's answer): q0 and q5 for B (longer), q1 and q8 for A
    # (shorter), q6 a tie, q9 answers of equal length.
    prefs = {"q0": 2, "q1": -1, "q5": 1, "q6": 0, "q8": -2, "q9": 1}
    rows = [{"question_id": q, "rater": "h1", "preference": p} for q, p in prefs.items()]
    posted = client.post("/preferences", params={"run_a": run_a, "run_b": run_b}, json=rows)
    assert posted.status_code == 200, posted.text

    job = submit(client, run_b, {"run_b": run_a})  # asked from run B: stored in the runs' id order
    assert job["kind"] == "pair_judging" and job["params"]["run_a"] == run_a
    assert job["total"] == 11 and job["failed"] == 2, job
    errors = {e["item"]: e["error"] for e in job["errors"]}
    assert set(errors) == {job_item(engine, run_a, "q4"), job_item(engine, run_a, "q10")}
    assert errors[job_item(engine, run_a, "q4")].startswith("malformed: ")
    assert errors[job_item(engine, run_a, "q10")].startswith("http_500: ")
    # Both orders of every pair reached the judge: two distinct calls each, counted at the stub.
    assert len(fake.requests) == 22
    assert job["summary"]["judge_usage"]["pairwise.judge"]["upstream_calls"] == 22
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(PairVerdict)) == 11

    stab = client.get(f"/runs/{run_a}/stability").json()
    (probe,) = stab["pair_probes"]
    assert (probe["run_a"], probe["run_b"]) == (run_a, run_b)
    # Judged in both orders: q0-q3 and q5-q9 (9); consistent: q5-q9 (5); q4 and q10 are errors.
    assert (probe["n_judged"], probe["n_errors"], probe["n_stale"]) == (9, 2, 0)
    assert probe["errors_by_cause"] == {"malformed": 1, "http_500": 1}
    consistency = probe["position_consistency"]
    assert (consistency["correct"], consistency["total"]) == (5, 9)
    assert consistency["estimate"] == pytest.approx(5 / 9)
    assert (consistency["ci_low"], consistency["ci_high"]) == pytest.approx(wilson(5, 9), abs=1e-12)
    assert (probe["first_shown_won_both"], probe["second_shown_won_both"], probe["one_order_tie"]) == (
        3,
        1,
        0,
    )
    # Consistent, not a tie, lengths differ: q5-q8 (4); the longer answer won q5-q7 (3).
    judge_len = probe["length"]["judge_longer_wins"]
    assert (judge_len["correct"], judge_len["total"]) == (3, 4)
    assert (judge_len["ci_low"], judge_len["ci_high"]) == pytest.approx(wilson(3, 4), abs=1e-12)
    # Humans, on judged pairs with a non-tie preference and lengths that differ: q0, q1, q5, q8 (4); the
    # longer answer preferred on q0 and q5 (2).
    human_len = probe["length"]["human_longer_wins"]
    assert (human_len["correct"], human_len["total"]) == (2, 4)
    assert (human_len["ci_low"], human_len["ci_high"]) == pytest.approx(wilson(2, 4), abs=1e-12)
    assert "imported from files" in probe["length"]["human_source"]
    assert client.get(f"/runs/{run_b}/stability").json()["pair_probes"] == stab["pair_probes"]
    check_formats(client, run_a, stab)

    # The judge is back: a new job judges again only the two failed pairs. q4's reply was an answer (cached:
    # 0 calls, malformed again); the outage was not (asked again: 2 calls, a tie now).
    fake.script = lambda body, i: script(body, i, outage=False)
    again = submit(client, run_a, {"run_b": run_b})
    assert again["total"] == 2 and again["summary"]["skipped_already_judged"] == 9
    assert again["failed"] == 1 and len(fake.requests) == 22 + 2
    after = client.get(f"/runs/{run_a}/stability").json()["pair_probes"][0]
    assert (after["n_judged"], after["position_consistency"]["correct"]) == (10, 6)
    # A re-run makes 0 calls: the one pair left failed is answered from the cache, and so is every pair
    # judged again with recompute.
    assert submit(client, run_a, {"run_b": run_b})["total"] == 1
    recomputed = submit(client, run_a, {"run_b": run_b, "recompute": True})
    assert recomputed["total"] == 11 and recomputed["failed"] == 1
    assert len(fake.requests) == 24
    assert recomputed["summary"]["judge_usage"]["pairwise.judge"]["upstream_calls"] == 0
    assert client.get(f"/runs/{run_a}/stability").json()["pair_probes"][0] == after


def check_formats(client: TestClient, run_a: int, stab: dict[str, Any]) -> None:
    """The other forms of the report carry the probes."""
    table = list(csv.DictReader(io.StringIO(client.get(f"/runs/{run_a}/stability?format=csv").text)))
    share = {r["figure"]: r for r in table if r["metric"].startswith("pairwise judge")}
    assert share["position_consistency"]["estimate"] == str(5 / 9)
    assert share["position_consistency"]["ci_method"] == "wilson"
    assert share["human_longer_wins"]["n_outputs"] == "4"
    md = client.get(f"/runs/{run_a}/stability?format=md").text
    assert "## Position and length probes (pairwise judge)" in md and "(5/9)" in md
    assert "question q4: malformed:" in md
    html = stability_section(StabilityReport.model_validate(stab))
    assert "id='table-pair-probes'" in html and "(5/9)" in html and "(3/4)" in html
    page = client.get(f"/runs/{run_a}/report.html")
    assert page.status_code == 200 and "id='table-pair-probes'" in page.text and "(5/9)" in page.text
    text = _stability_text(stab)
    assert "position consistency" in text and "(5/9)" in text and "http_500 1, malformed 1" in text


def job_item(engine: Engine, run: int, external: str) -> str:
    """A pair's job item: its question's id."""
    from services.models import Output, Question

    with Session(engine) as s:
        qid = s.scalar(
            select(Question.id)
            .join(Output, Output.question_id == Question.id)
            .where(Output.run_id == run, Question.external_id == external)
        )
    return str(qid)


def test_bad_requests_name_the_field(client: TestClient, judge: Any, settings: Settings) -> None:
    run_a, run_b = two_runs(client)
    other = client.post("/datasets", json={"name": "other", "language": "en"}).json()["id"]
    assert client.post(
        f"/datasets/{other}/questions", json=[{"external_id": "x", "question": "x?"}]
    ).is_success
    run_c = client.post(f"/datasets/{other}/runs", json={"name": "c"}).json()["id"]

    # No judge configured: 422 naming the judge.
    r = client.post(f"/runs/{run_a}/pair-judging-jobs", json={"run_b": run_b})
    assert r.status_code == 422 and "judge" in r.text, r.text
    judge(lambda body: '{"winner": "tie"}')
    for body, status, named in (
        ({"run_b": run_a}, 422, "run_b"),
        ({"run_b": run_c}, 422, "run_b"),
        ({"run_b": 10**6}, 404, "run_b"),
        ({}, 422, "run_b"),
        ({"run_b": "two"}, 422, "run_b"),
        ({"run_b": run_b, "recompute": "yes"}, 422, "recompute"),
    ):
        r = client.post(f"/runs/{run_a}/pair-judging-jobs", json=body)
        assert r.status_code == status, (body, r.text)
        assert named in r.text, (body, r.text)
    assert client.post(f"/runs/{10**6}/pair-judging-jobs", json={"run_b": run_b}).status_code == 404


def test_many_pairs_are_judged_within_the_judge_bound_each_order_once(
    client: TestClient, judge: Any, engine: Engine
) -> None:
    """A bounded load on the loopback judge: 150 pairs (300 calls) with the gateway's bound at 4, and a
    second job for the same pairs planned before the first ran: every order asked once, no more than 4 at a
    time, one row per pair."""
    n = 150
    fake = judge(lambda body: '{"winner": "1", "reason": "first"}', max_concurrency=4)
    fake.latency_s = 0.005
    ds = client.post("/datasets", json={"name": "many", "language": "en"}).json()["id"]
    qs = [{"external_id": f"m{i}", "question": f"Question m{i}?"} for i in range(n)]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    runs = []
    for name in ("a", "b"):
        run = client.post(f"/datasets/{ds}/runs", json={"name": name}).json()["id"]
        outs = [{"question_id": f"m{i}", "answer": f"{name} answer {i}"} for i in range(n)]
        assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
        runs.append(run)
    first = client.post(f"/runs/{runs[0]}/pair-judging-jobs", json={"run_b": runs[1]})
    second = client.post(f"/runs/{runs[1]}/pair-judging-jobs", json={"run_b": runs[0]})
    assert first.status_code == second.status_code == 202 and first.json()["total"] == n
    drain(client)
    for job in (first, second):
        read = client.get(f"/jobs/{job.json()['id']}").json()
        assert (read["status"], read["done"], read["failed"]) == ("done", n, 0), read
    assert len(fake.requests) == 2 * n
    assert 1 <= fake.max_in_flight <= 4
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(PairVerdict)) == n
    probe = client.get(f"/runs/{runs[0]}/stability").json()["pair_probes"][0]
    # The answer shown first always wins: no pair is consistent.
    assert probe["position_consistency"]["correct"] == 0 and probe["first_shown_won_both"] == n
    # The job's results are its verdicts (the second job wrote them last): deleted with it.
    gone = client.delete(f"/jobs/{second.json()['id']}/results")
    assert gone.status_code == 200, gone.text
    assert gone.json()["rows"] == {"pair_verdict": n}
    assert client.get(f"/runs/{runs[0]}/stability").json()["pair_probes"] == []


def test_the_command_line_starts_the_job_and_prints_the_probes(
    client: TestClient, judge: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from app import client as cli
    from app.cli import build_parser

    judge(lambda body: '{"winner": "1", "reason": "the first"}')
    run_a, run_b = two_runs(client)

    def run(*argv: str) -> int:
        return cli._dispatch(client, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]

    assert run("pair-judge", str(run_b), str(run_a), "--no-wait") == 0
    assert "pair-judge: job " in capsys.readouterr().out
    drain(client)
    assert run("stability", str(run_a)) == 0
    out = capsys.readouterr().out
    assert f"pairwise judge, runs {run_a} vs {run_b}: 11 pairs judged in both orders, 0 failed" in out
    assert "(0/11)" in out and "first shown won both 11, second shown won both 0" in out
