"""GET /runs/{id}/trust and /trust?runs=: a study of 40 questions rated by 4 raters, one metric that follows
the raters' consensus and one that is noise, and the same figures recomputed from the stats package."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import cli_common
from app import client as cli
from app.cli import build_parser
from services import stats
from services.reports.trust import mae_test
from services.stats.uses import decision_rates, non_inferiority, paired_leave_out
from tests.api.helpers import assert_envelope, create_dataset
from tests.api.test_outputs import make_run

RATERS = ["ann", "bob", "cyd", "dan"]
N = 40


def _study(rng: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    latent = rng.normal(size=N)
    ratings = np.clip(np.round(3 + 1.2 * latent[:, None] + rng.normal(0, 0.7, (N, len(RATERS)))), 1, 5)
    consensus = ratings.mean(axis=1)
    metrics = {
        # Follows the raters' mean on a 0-1 scale: once calibrated it is as close as a rater, or closer.
        "external.follows": (consensus - 1) / 4,
        "external.noise": rng.uniform(size=N),
    }
    return ratings, metrics


def rated_study(
    client: TestClient, raters: list[str] = RATERS, seed: int = 3
) -> tuple[int, np.ndarray, dict[str, Any]]:
    ds = create_dataset(client, f"trust-{seed}-{len(raters)}")
    questions = [{"external_id": f"q{i:02d}", "question": f"Question {i}?"} for i in range(N)]
    assert client.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    run = make_run(client, ds)
    outputs = [{"question_id": f"q{i:02d}", "answer": f"answer {i}", "retrieved": []} for i in range(N)]
    assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
    assert client.post("/raters", json=[{"name": r} for r in raters]).status_code == 200
    ratings, metrics = _study(np.random.default_rng(seed))
    ratings = ratings[:, : len(raters)]
    rows = [
        {"question_id": f"q{i:02d}", "rater": r, "score": int(ratings[i, j])}
        for i in range(N)
        for j, r in enumerate(raters)
    ]
    assert client.post(f"/runs/{run}/ratings", json=rows).status_code == 200, rows[:2]
    scores = [
        {"question_id": f"q{i:02d}", "metric": name, "value": float(values[i])}
        for name, values in metrics.items()
        for i in range(N)
    ]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    return run, ratings, metrics


def test_trust_of_a_run_with_four_raters(client: TestClient) -> None:
    run, ratings, metrics = rated_study(client)
    r = client.get(f"/runs/{run}/trust")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["raters"] == RATERS and body["epsilon"] == 0.2
    assert (body["rubric_min"], body["rubric_max"]) == (1, 5)
    by = {m["metric"]: m for m in body["metrics"]}
    questions = [f"q{i:02d}" for i in range(N)]
    human = ratings.mean(axis=1)
    for name, values in metrics.items():
        cal = stats.calibrate(values, human, questions, (1, 5))
        alt = stats.alt_test(np.array(cal.calibrated), ratings, RATERS)
        got = by[name]
        assert got["calibration"]["mae"]["estimate"] == pytest.approx(cal.mae.estimate, abs=1e-12)
        assert got["calibration"]["mae"]["ci_low"] == pytest.approx(cal.mae.interval.low, abs=1e-12)
        assert got["alt_test"]["omega"] == pytest.approx(alt.omega)
        assert alt.rho_interval is not None
        assert got["alt_test"]["rho_ci_low"] == pytest.approx(alt.rho_interval.low, abs=1e-12)
        assert [t["p_adjusted"] for t in got["alt_test"]["raters"]] == pytest.approx(
            [t.p_adjusted for t in alt.raters], abs=1e-12
        )
    item = {m: {v["use"]: v for v in by[m]["verdicts"]}["item"] for m in by}
    assert item["external.follows"]["verdict"] == "yes", item
    assert item["external.noise"]["verdict"] == "no", item
    assert "Alternative Annotator Test" in item["external.noise"]["rule"]
    # Gating: the held-out calibrated values' TPR/TNR at 4 beside the raters', recomputed.
    assert body["pass_threshold"] == 4.0
    for name, values in metrics.items():
        cal = stats.calibrate(values, human, questions, (1, 5))
        rates = decision_rates(np.array(cal.calibrated), human, ratings, questions, 4.0)
        got = by[name]["gating"]
        assert got["tpr"]["estimate"] == pytest.approx(rates.tpr.estimate, abs=1e-12)
        assert got["human_tnr"]["ci_low"] == pytest.approx(rates.human_tnr.low, abs=1e-12)
        tests = []
        for h, m in ((rates.human_tpr, rates.tpr), (rates.human_tnr, rates.tnr)):
            tests.append(
                non_inferiority(*paired_leave_out(h.estimate, h.leave_out, m.estimate, m.leave_out), 0.2)
            )
        assert got["tpr_test"]["upper"] == pytest.approx(tests[0].upper, abs=1e-12)
        decisions = {t.decision for t in tests}
        expected = "yes" if decisions == {"non-inferior"} else "no" if "inferior" in decisions else "not yet"
        verdict = {v["use"]: v for v in by[name]["verdicts"]}["gating"]
        assert verdict["verdict"] == expected and verdict["reason"]
        ranking = {v["use"]: v for v in by[name]["verdicts"]}["ranking"]
        assert ranking["verdict"] == "not yet" and "at least 3 runs" in ranking["reason"]
    assert set(body["rules"]) == {"item", "ranking", "gating", "not yet"}
    hb = stats.human_baseline(ratings, questions, RATERS)
    assert body["human_baseline"]["mae"]["estimate"] == pytest.approx(hb.mae.estimate, abs=1e-12)
    md = client.get(f"/runs/{run}/trust", params={"format": "md"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert "- external.follows, item: **yes**" in md.text
    csv_text = client.get(f"/runs/{run}/trust", params={"format": "csv"})
    assert csv_text.status_code == 200 and csv_text.headers["content-type"].startswith("text/csv")
    lines = csv_text.text.splitlines()
    assert lines[0].startswith("metric,use,verdict,reason") and len(lines) == 1 + 3 * len(metrics)
    pooled = client.get("/trust", params={"runs": str(run), "epsilon": 0.1})
    assert pooled.status_code == 200 and pooled.json()["epsilon"] == 0.1


def test_two_raters_say_what_is_missing(client: TestClient) -> None:
    run, ratings, metrics = rated_study(client, RATERS[:2], seed=4)
    body = client.get(f"/runs/{run}/trust").json()
    questions = [f"q{i:02d}" for i in range(N)]
    hb = stats.human_baseline(ratings, questions, RATERS[:2])
    by = {m["metric"]: m for m in body["metrics"]}
    for name, values in metrics.items():
        m = by[name]
        item = {v["use"]: v for v in m["verdicts"]}["item"]
        # The alt-test cannot run with 2 raters; the MAE non-inferiority test against the baseline decides.
        assert "needs 3 raters" in item["reason"] and "0 of 2 raters qualify" in item["reason"]
        cal = stats.calibrate(values, ratings.mean(axis=1), questions, (1, 5))
        ni = mae_test(cal, hb, 0.2)
        assert m["mae_vs_human"]["upper"] == pytest.approx(ni.upper, abs=1e-12)
        expected = {"non-inferior": "yes", "inferior": "no"}.get(str(ni.decision), "not yet")
        assert item["verdict"] == expected, item
        if expected == "not yet":
            assert item["raters_needed"] == 1 and item["missing"]
    assert body["human_baseline"]["mae"]["estimate"] is not None


@pytest.mark.parametrize("epsilon", ["1", "-0.1", "nan", "x"])
def test_bad_epsilon_is_a_422_naming_it(client: TestClient, epsilon: str) -> None:
    run, _, _ = rated_study(client, seed=5)
    body = assert_envelope(client.get(f"/runs/{run}/trust", params={"epsilon": epsilon}), 422)
    assert "epsilon" in str(body["items"])


def test_unknown_run_is_404(client: TestClient) -> None:
    assert_envelope(client.get("/runs/999999/trust"), 404)


def _cli(c: TestClient, *argv: str) -> int:
    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def test_cli_gate_exits_5_unless_the_metric_qualifies(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _, _ = rated_study(client, seed=6)
    assert _cli(client, "trust", str(run), "--metric", "external.follows", "--require", "item") == 0
    assert "external.follows: held-out MAE" in capsys.readouterr().out
    assert _cli(client, "trust", str(run), "--metric", "external.noise", "--require", "item") == 5
    assert "external.noise does not qualify for item: no" in capsys.readouterr().out
    body = client.get(f"/runs/{run}/trust").json()
    gating = next(
        v
        for m in body["metrics"]
        if m["metric"] == "external.follows"
        for v in m["verdicts"]
        if v["use"] == "gating"
    )
    code = _cli(client, "trust", str(run), "--metric", "external.follows", "--require", "gating")
    assert code == (0 if gating["verdict"] == "yes" else 5)
    capsys.readouterr()
    # Missing evidence fails a gate too: one run cannot rank system versions.
    assert _cli(client, "trust", str(run), "--metric", "external.follows", "--require", "ranking") == 5
    assert "does not qualify for ranking: not yet" in capsys.readouterr().out
    assert _cli(client, "trust", str(run), "--format", "md") == 0
    assert capsys.readouterr().out.startswith("# May a metric replace the raters?")
    with pytest.raises(cli.UsageError, match="--require needs --metric"):
        _cli(client, "trust", str(run), "--require", "item")
    with pytest.raises(cli.UsageError, match=r"no metric 'external\.nope'"):
        _cli(client, "trust", str(run), "--metric", "external.nope", "--require", "item")
    assert "5    ragmeta trust" in cli_common.EXIT_CODES


def test_ranking_verdict_reads_the_system_level_over_three_runs(client: TestClient) -> None:
    ds = create_dataset(client, "trust-ranking")
    n = 30
    questions = [{"external_id": f"q{i:02d}", "question": f"Question {i}?"} for i in range(n)]
    assert client.post(f"/datasets/{ds}/questions", json=questions).status_code == 200
    assert client.post("/raters", json=[{"name": r} for r in RATERS[:3]]).status_code == 200
    rng = np.random.default_rng(8)
    runs = []
    for level in (1.5, 3.0, 4.5):  # three system versions, clearly apart
        run = make_run(client, ds, f"v{level}")
        outputs = [{"question_id": f"q{i:02d}", "answer": f"a {i}", "retrieved": []} for i in range(n)]
        assert client.post(f"/runs/{run}/outputs", json=outputs).status_code == 200
        quality = level + rng.normal(0, 0.5, n)
        rows = [
            {
                "question_id": f"q{i:02d}",
                "rater": r,
                "score": int(np.clip(round(quality[i] + rng.normal(0, 0.4)), 1, 5)),
            }
            for i in range(n)
            for r in RATERS[:3]
        ]
        assert client.post(f"/runs/{run}/ratings", json=rows).status_code == 200
        scores = [
            {"question_id": f"q{i:02d}", "metric": "external.follows", "value": float((quality[i] - 1) / 4)}
            for i in range(n)
        ]
        assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
        runs.append(run)
    ids = ",".join(map(str, runs))
    body = client.get("/trust", params={"runs": ids}).json()
    system = client.get("/reports/systems", params={"runs": ids}).json()
    sm = next(m for m in system["metrics"] if m["metric"] == "external.follows")
    got = body["metrics"][0]["ranking"]
    assert got["kendall"] == sm["kendall"]["estimate"] and got["kendall_ci_low"] == sm["kendall"]["ci_low"]
    assert got["pairwise_correct"] == sm["pairwise_correct"] and got["n_runs"] == 3
    dist = [p for p in sm["pairs"] if p["human_distinguishable"]]
    assert got["human_distinguishable"] == len(dist) == 3
    verdict = {v["use"]: v for v in body["metrics"][0]["verdicts"]}["ranking"]
    expected = "yes" if sm["kendall"]["ci_low"] > 0 and all(p["same_winner"] for p in dist) else "not yet"
    assert verdict["verdict"] == expected == "yes" and "tau-b" in verdict["reason"]
