"""Comparisons with the top metric on pooled runs, when a metric is missing on some outputs.

Two runs of 120 questions (240 outputs); one metric scored on every output, one on 195 of them (missing
more often where the raters are harsh). The difference shown, its interval, p and Holm must all be taken
on the outputs both metrics scored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from scipy import stats as sps

QUESTIONS = 120
SPARSE_MISSING = 0.15
STAT = {
    "pearson": lambda x, y: sps.pearsonr(x, y)[0],
    "spearman": lambda x, y: sps.spearmanr(x, y)[0],
    "kendall": lambda x, y: sps.kendalltau(x, y)[0],
}


def _pooled_sparse_study(client: TestClient) -> tuple[list[int], dict[str, NDArray[np.float64]]]:
    """Two runs of one dataset with 1-5 ratings from two raters, a complete metric, and a sparse one
    (NaN where not scored) that agrees less with the raters; returns the run ids and the per-output
    vectors (run 1's outputs, then run 2's) of the mean rating and the two metrics."""
    rng = np.random.default_rng(25)
    ds = client.post("/datasets", json={"name": "sparse", "language": "en"}).json()["id"]
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "doc", "text": "One two three."}])
    qs = [{"external_id": f"q{i}", "question": f"Question {i}?"} for i in range(QUESTIONS)]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    client.post("/raters", json=[{"name": "rater1"}, {"name": "rater2"}])
    runs, human, full, sparse = [], [], [], []
    for r in range(2):
        run = client.post(f"/datasets/{ds}/runs", json={"name": f"run{r}"}).json()["id"]
        runs.append(int(run))
        outs = [{"question_id": f"q{i}", "answer": f"answer {i} of run {r}"} for i in range(QUESTIONS)]
        assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
        quality = rng.normal(size=QUESTIONS)
        ratings = np.clip(np.round(3 + quality + rng.normal(0, 0.6, (2, QUESTIONS))), 1, 5)
        payload = [
            {"question_id": f"q{i}", "rater": f"rater{j + 1}", "score": int(ratings[j, i])}
            for j in range(2)
            for i in range(QUESTIONS)
        ]
        assert client.post(f"/runs/{run}/ratings", json=payload).status_code == 200
        a = np.round(np.clip(0.5 + 0.2 * quality + rng.normal(0, 0.12, QUESTIONS), 0, 1), 2)
        b = np.round(np.clip(0.5 + 0.2 * quality + rng.normal(0, 0.25, QUESTIONS), 0, 1), 2)
        # The sparse metric is missing mostly where the raters are harsh: its full-sample coefficient is
        # taken on easier items than the comparison, so the two item sets give clearly different figures.
        p_missing = np.where(quality < -0.5, 2.5 * SPARSE_MISSING, 0.5 * SPARSE_MISSING)
        b[rng.random(QUESTIONS) < p_missing] = np.nan
        scores = [
            {"question_id": f"q{i}", "metric": "external.full", "value": a[i]} for i in range(QUESTIONS)
        ]
        scores += [
            {"question_id": f"q{i}", "metric": "external.sparse", "value": b[i]}
            for i in range(QUESTIONS)
            if np.isfinite(b[i])
        ]
        assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
        human.append(ratings.mean(axis=0))
        full.append(a)
        sparse.append(b)
    vectors = {
        "human": np.concatenate(human),
        "external.full": np.concatenate(full),
        "external.sparse": np.concatenate(sparse),
    }
    return runs, vectors


def _row(report: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(m for m in report["analyses"][0]["metrics"] if m["metric"] == metric)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_pooled_difference_is_taken_on_the_outputs_both_metrics_scored(
    client: TestClient, method: str
) -> None:
    runs, v = _pooled_sparse_study(client)
    report = client.get("/report", params={"runs": ",".join(map(str, runs)), "n_resamples": 200}).json()
    assert (report["n_items"], report["n_questions"]) == (2 * QUESTIONS, QUESTIONS)
    h, full, sparse = v["human"], v["external.full"], v["external.sparse"]
    both = np.isfinite(sparse)
    assert int(both.sum()) == 195  # 19 % missing, as a judge metric failing on some outputs
    rows = {m: _row(report, m) for m in ("external.full", "external.sparse")}
    assert rows["external.sparse"]["n"] == int(both.sum())
    stat = STAT[method]
    # The rows' own coefficients, each on all the outputs it scored.
    assert rows["external.full"][method]["estimate"] == pytest.approx(stat(full, h), abs=1e-12)
    assert rows["external.sparse"][method]["estimate"] == pytest.approx(
        stat(sparse[both], h[both]), abs=1e-12
    )
    key = "comparison" if method == "pearson" else f"{method}_comparison"
    best, other = (
        ("external.full", "external.sparse")
        if rows["external.sparse"][key] is not None
        else ("external.sparse", "external.full")
    )
    comp = rows[other][key]
    assert comp["best"] == best and rows[best][key] is None
    assert comp["ci_method"] == "jackknife-t" and comp["n"] == int(both.sum())
    on_both = stat(v[best][both], h[both]) - stat(v[other][both], h[both])
    mixed = rows[best][method]["estimate"] - rows[other][method]["estimate"]
    assert abs(mixed - on_both) > 0.005  # the two item sets differ enough for the test to tell them apart
    assert comp["difference"] == pytest.approx(on_both, abs=1e-12)
    assert comp["ci_low"] < comp["difference"] < comp["ci_high"]
    # The interval is centred on the difference it shows (the jackknife-t is symmetric on its own scale).
    assert (comp["ci_low"] + comp["ci_high"]) / 2 == pytest.approx(comp["difference"], abs=1e-12)
