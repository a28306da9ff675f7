"""``judge_retest``, what other analyses read to know whether a judge is stable: per judge metric of the
runs, ICC(A,1) across the stored repeats (pingouin's) with the jackknife-t interval by question written out,
and the documented threshold applied; a metric asked once is listed with the reason."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import scipy.stats
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.models import MetricScore, Output
from services.reports.stability import UNSTABLE_ICC_A1, judge_retest
from tests.integration.test_reports import A, study
from tests.unit.test_stats_stability import pingouin_icc, written_icc


def judged(engine: Any, run: int, metric: str, repeats: int, noise: float) -> None:
    """Scores of a judge metric (its configuration names a judge) stored as a job with ``repeats`` would."""
    rng = np.random.default_rng(3)
    with Session(engine) as s:
        oids = sorted(s.scalars(select(Output.id).where(Output.run_id == run)))
        config = {"judge": {"model": "loopback-judge"}}
        details = {"judge_settings": {"model": "loopback-judge", "temperature": 0.7, "seed": None}}
        for i, oid in enumerate(oids):
            for rep in range(repeats):
                value = float(np.clip(A[i] + rng.normal(scale=noise), 0, 1))
                s.add(MetricScore(output_id=oid, metric=metric, config_key=f"{metric}-cfg", config=config,
                                  repeat=rep, value=value, details=details))  # fmt: skip
        s.commit()


def test_judge_retest_is_pingouins_icc_with_a_written_jackknife_and_the_threshold(
    client: TestClient, engine: Any
) -> None:
    _, run = study(client)
    judged(engine, run, "opik.moderation", 3, 0.05)
    judged(engine, run, "opik.noisy", 2, 0.4)
    judged(engine, run, "opik.hallucination", 1, 0.0)
    with Session(engine) as s:
        got = judge_retest(s, [run])
        assert judge_retest(s, [10**9]) == {}
    assert set(got) == {"opik.moderation", "opik.noisy", "opik.hallucination"}
    # judged() draws its noise from one seeded generator, output by output, repeat by repeat.
    for metric, k, noise in (("opik.moderation", 3, 0.05), ("opik.noisy", 2, 0.4)):
        rng = np.random.default_rng(3)
        x = np.array([[float(np.clip(a + rng.normal(scale=noise), 0, 1)) for _ in range(k)] for a in A])
        icc = pingouin_icc(x, "ICC(A,1)")
        zs = []
        for i in range(12):  # one output per question: leave one output out
            r = written_icc(np.delete(x, i, axis=0), "ICC(A,1)")
            zs.append(0.5 * math.log((1 + (k - 1) * r) / (1 - r)))
        z = 0.5 * math.log((1 + (k - 1) * icc) / (1 - icc))
        se = math.sqrt(11 / 12 * sum((v - np.mean(zs)) ** 2 for v in zs))
        t = float(scipy.stats.t.ppf(0.975, 11))

        def back(v: float, k: int = k) -> float:
            return (math.exp(2 * v) - 1) / (math.exp(2 * v) + k - 1)

        r = got[metric]
        assert (r.repeats, r.n_outputs, r.threshold) == (k, 12, UNSTABLE_ICC_A1)
        assert r.icc_a1 == pytest.approx(icc, abs=1e-12)
        assert (r.ci_low, r.ci_high) == pytest.approx((back(z - t * se), back(z + t * se)), abs=1e-9)
        assert r.below_threshold is (icc < UNSTABLE_ICC_A1)
        assert r.clearly_below is (back(z + t * se) < UNSTABLE_ICC_A1)
    assert got["opik.moderation"].below_threshold is False and got["opik.noisy"].below_threshold is True
    once = got["opik.hallucination"]
    assert once.icc_a1 is None and once.below_threshold is None and "repeats >= 2" in (once.reason or "")


def test_scores_moved_to_history_keep_their_repeat(client: TestClient, engine: Any) -> None:
    """An answer that changes moves its scores to the history table; each repeat stays told apart there."""
    from services.models import MetricScoreHistory

    _, run = study(client)
    judged(engine, run, "opik.moderation", 3, 0.1)
    with Session(engine) as s:
        before = {
            (m.output_id, m.repeat): m.value
            for m in s.scalars(select(MetricScore).where(MetricScore.metric == "opik.moderation"))
        }
    changed = [{"question_id": f"q{i}", "answer": f"a new answer {i}"} for i in range(12)]
    assert client.post(f"/runs/{run}/outputs", json=changed).status_code == 200
    with Session(engine) as s:
        moved = list(
            s.scalars(select(MetricScoreHistory).where(MetricScoreHistory.metric == "opik.moderation"))
        )
        assert s.scalars(select(MetricScore).where(MetricScore.metric == "opik.moderation")).first() is None
    assert len(moved) == 36
    assert {(m.output_id, m.repeat): m.value for m in moved} == before
