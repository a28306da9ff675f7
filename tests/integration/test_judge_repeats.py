"""Judge repeats end to end against the loopback judge, whose answers vary from call to call: a scoring job
with ``repeats = 3`` asks it three distinct times per (judge metric, output) and stores each repeat; a re-run
of the job is answered from the cache (0 calls); reports use the repeat mean and say so; the stability
report's test-retest ICC and corrected correlation equal a written-out computation on the stored values."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pandas as pd
import pingouin
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.cli import _stability_text
from services.config import Settings
from services.judge.gateway import repeat_scope, request_key, scope_repeat
from services.models import MetricScore
from services.reports.data import gather
from tests.integration.judges.test_opik import ANSWERS, judge, new_run, response_format
from tests.integration.test_scoring import drain
from tests.judgefake import all_text

__all__ = ["judge"]  # the fixture, used by name

BASE = {"q1": 0.2, "q2": 0.7, "q3": 0.4, "q4": 0.8, "q5": 0.55}
RATINGS = {"q1": (2, 1), "q2": (4, 5), "q3": (3, 3), "q4": (5, 4), "q5": (3, 4)}


def varying(calls: Counter[str]) -> Any:
    """Moderation verdicts around a level per answer, different on each call for the same answer."""

    def verdict(body: dict[str, Any]) -> str | None:
        if response_format(body) != "ModerationResponseFormat":
            return None
        text = all_text(body)
        q = next(q for q, a in ANSWERS.items() if a in text)
        calls[q] += 1
        swing = (0.0, 0.12, -0.09, 0.05, -0.04)[(calls[q] - 1) % 5]
        return json.dumps({"score": round(BASE[q] + swing, 2), "reason": "scripted"})

    return verdict


def submit(client: TestClient, run: int, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/runs/{run}/scoring-jobs", json=body)
    assert r.status_code == 202, r.text
    drain(client)
    job: dict[str, Any] = client.get(f"/jobs/{r.json()['id']}").json()
    assert job["status"] == "done", job
    return job


def rows(engine: Engine, metric: str) -> list[MetricScore]:
    with Session(engine) as s:
        return list(s.scalars(select(MetricScore).where(MetricScore.metric == metric)))


def test_repeat_index_is_part_of_the_cache_key_and_read_back_from_the_scope() -> None:
    body = {"messages": [{"role": "user", "content": "x"}]}
    assert request_key("m", body, 0) == request_key("m", body, 0, 0)
    assert len({request_key("m", body, 0, r) for r in range(3)}) == 3
    assert request_key("m", body, 1, 2) != request_key("m", body, 0, 2)
    assert [scope_repeat(repeat_scope("o12", r)) for r in range(3)] == [0, 1, 2]
    assert repeat_scope("o12", 0) == "o12" and scope_repeat("-") == 0


def test_three_repeats_are_three_judge_calls_stored_apart_and_a_rerun_makes_none(
    client: TestClient, judge: Any, engine: Engine, settings: Settings
) -> None:
    calls: Counter[str] = Counter()
    fake = judge(varying(calls))
    run = new_run(client)
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    ratings = [
        {"question_id": q, "rater": rater, "score": s}
        for q, pair in RATINGS.items()
        for rater, s in zip(("alice", "bob"), pair, strict=True)
    ]
    posted = client.post(f"/runs/{run}/ratings", json=ratings)
    assert posted.status_code == 200, posted.text
    job = submit(client, run, {"metrics": ["opik.moderation", "classic.bleu"], "repeats": 3})
    assert job["failed"] == 0, (job["errors"], job["summary"])
    # Every output's three repeats reached the judge: three distinct calls each, none from the cache.
    assert dict(calls) == {q: 3 for q in ANSWERS}
    assert len(fake.requests) == 15
    scored = rows(engine, "opik.moderation")
    by_output: dict[int, dict[int, float]] = defaultdict(dict)
    for row in scored:
        assert row.value is not None, row.error
        by_output[row.output_id][row.repeat] = row.value
        assert row.details["judge_settings"] == {"model": "judge-model", "temperature": 0.0, "seed": None}
    assert len(scored) == 15 and all(sorted(v) == [0, 1, 2] for v in by_output.values())
    assert all(len(set(v.values())) == 3 for v in by_output.values())  # the repeats differ
    # A metric without a judge is deterministic: scored once, and the job says so.
    assert sorted(r.repeat for r in rows(engine, "classic.bleu")) == [0] * 5
    summary = job["summary"]["repeats"]
    assert summary["deterministic"] == ["classic.bleu"] and summary["repeated"] == ["opik.moderation"]
    assert summary["judge"]["temperature"] == 0.0

    again = submit(client, run, {"metrics": ["opik.moderation", "classic.bleu"], "repeats": 3})
    assert again["total"] == 0 and again["summary"]["skipped_already_computed"] == 20
    recomputed = submit(client, run, {"metrics": ["opik.moderation"], "repeats": 3, "recompute": True})
    assert recomputed["total"] == 15 and recomputed["failed"] == 0
    assert len(fake.requests) == 15  # every repeat answered from its own cache entry
    assert {(r.output_id, r.repeat): r.value for r in rows(engine, "opik.moderation")} == {
        (o, rep): v for o, reps in by_output.items() for rep, v in reps.items()
    }

    # The report uses the mean of the repeats and says so.
    report = client.get(f"/runs/{run}/report").json()
    assert any("mean of its repeats" in n for n in report["notes"]), report["notes"]
    with Session(engine) as s:
        column = gather(s, [run], "mean", 1).columns["opik.moderation"]
    assert column.repeats == 3
    assert column.values == pytest.approx({o: float(np.mean(list(v.values()))) for o, v in by_output.items()})

    # The stability report equals the written-out figures on the stored values.
    stab = client.get(f"/runs/{run}/stability")
    assert stab.status_code == 200, stab.text
    figures = {m["metric"]: m for m in stab.json()["metrics"]}
    m = figures["opik.moderation"]
    oids = sorted(by_output)
    x = np.array([[by_output[o][r] for r in range(3)] for o in oids])
    long = pd.DataFrame(
        {"item": np.repeat(np.arange(5), 3), "rater": np.tile(np.arange(3), 5), "score": x.ravel()}
    )
    # The fake judge's answers can shift by the same step on every call, leaving no residual: pingouin then
    # divides by a zero mean square for its F tests (not for the ICC compared here).
    with np.errstate(divide="ignore", invalid="ignore"):
        icc = float(
            pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score")
            .set_index("Type")
            .loc["ICC(A,1)", "ICC"]
        )
    assert m["repeats"] == 3 and m["n_outputs"] == 5
    assert m["icc_a1"]["estimate"] == pytest.approx(icc, abs=1e-9)
    assert m["reliability_of_mean"]["estimate"] == pytest.approx(3 * icc / (1 + 2 * icc), abs=1e-9)
    # new_run posts the outputs in question order q1..q5: output ids follow it.
    human = np.array([np.mean(RATINGS[q]) for q in sorted(RATINGS)])
    r = float(np.corrcoef(x.mean(axis=1), human)[0, 1])
    h = np.array([RATINGS[q] for q in sorted(RATINGS)], dtype=float)
    hl = pd.DataFrame({"item": np.repeat(np.arange(5), 2), "rater": np.tile([0, 1], 5), "score": h.ravel()})
    rel_h = float(
        pingouin.intraclass_corr(hl, targets="item", raters="rater", ratings="score")
        .set_index("Type")
        .loc["ICC(A,k)", "ICC"]
    )
    c = m["corrected"]
    assert c["raw_r"]["estimate"] == pytest.approx(r, abs=1e-9)
    assert c["rel_human"] == pytest.approx(rel_h, abs=1e-9)
    expected = r / math.sqrt(rel_h * (3 * icc / (1 + 2 * icc)))
    assert c["uncapped"] == pytest.approx(expected, abs=1e-9)
    assert c["corrected_r"]["estimate"] == pytest.approx(min(expected, 1.0), abs=1e-9)
    assert c["capped"] is (expected > 1)
    assert "classic.bleu" not in figures
    # What `ragmeta stability RUN` prints from it.
    text = _stability_text(stab.json())
    assert "opik.moderation: 3 repeats on 5 outputs" in text
    assert f"ICC(A,1) across repeats   {icc:.3f} [" in text and "rule: corrected r = r / sqrt(" in text
    # The trust analysis reads the repeat mean (the report's column) and names the judge's test-retest.
    trust = client.get(f"/runs/{run}/trust").json()
    by_metric = {m["metric"]: m for m in trust["metrics"]}
    note = by_metric["opik.moderation"]["stability"]
    assert f"ICC(A,1) = {icc:.2f}" in note and ("unstable judge" in note) == (icc < 0.75)
    item = next(v for v in by_metric["opik.moderation"]["verdicts"] if v["use"] == "item")
    assert note in item["reason"]
    assert by_metric["classic.bleu"]["stability"] is None
    # The same report as CSV (one row per metric x figure) and Markdown.
    csv_rows = list(csv.DictReader(io.StringIO(client.get(f"/runs/{run}/stability?format=csv").text)))
    icc_row = next(r for r in csv_rows if r["metric"] == "opik.moderation" and r["figure"] == "icc_a1")
    assert float(icc_row["estimate"]) == pytest.approx(icc, abs=1e-9) and icc_row["repeats"] == "3"
    assert {r["figure"] for r in csv_rows} == {
        "icc_a1", "within_sd", "reliability_of_mean", "raw_r", "corrected_r"
    }  # fmt: skip
    md = client.get(f"/runs/{run}/stability?format=md")
    assert md.headers["content-type"].startswith("text/markdown")
    assert f"| opik.moderation | 3 | 5 | {icc:.2f}" in md.text

    # The score listing shows each repeat beside the mean the reports use.
    listing = client.get(f"/runs/{run}/scores").json()
    assert (
        "opik.moderation.repeat2" in listing["columns"] and "classic.bleu.repeat0" not in listing["columns"]
    )
    for row in listing["rows"]:
        reps = by_output[row["output_id"]]
        assert [row[f"opik.moderation.repeat{i}"] for i in range(3)] == [reps[i] for i in range(3)]
        assert row["opik.moderation"] == pytest.approx(float(np.mean(list(reps.values()))))


def test_stability_of_an_unknown_run_is_404_and_a_single_asking_says_what_is_missing(
    client: TestClient, judge: Any
) -> None:
    assert client.get("/runs/999/stability").status_code == 404
    judge()
    run = new_run(client)
    submit(client, run, {"metrics": ["opik.moderation"]})
    m = client.get(f"/runs/{run}/stability").json()["metrics"][0]
    assert m["repeats"] == 1 and m["icc_a1"]["estimate"] is None
    assert "repeats >= 2" in m["undefined_reason"]


def test_repeats_out_of_range_name_the_field(client: TestClient, judge: Any) -> None:
    judge()
    run = new_run(client)
    for bad in (0, 11, "many", 2.5):
        r = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["opik.moderation"], "repeats": bad})
        assert r.status_code == 422, r.text
        assert "repeats" in r.text
