"""Comparisons between runs (issue 16 items 1-2): pairwise preference meta-evaluation and system level,
checked against scipy/numpy computed here on fixed data, and their bad inputs."""

from __future__ import annotations

import csv
import io
import json
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from app import client as cli
from app.cli import build_parser
from tests.api.helpers import assert_envelope
from tests.api.team import QUESTIONS, all_outputs, make_team
from tests.api.test_outputs import make_run
from tests.integration.test_reports import R1, R2, study

Vec = NDArray[np.float64]
N_Q = 12
# Question order of every comparison: external ids sorted as strings (q0, q1, q10, q11, q2, ...).
ORDER = sorted(range(N_Q), key=lambda i: f"q{i}")
# Run B and run C: two raters each, and two metrics per run (external.m higher is better, the catalogue's
# deepeval.hallucination lower is better).
B1 = [2, 2, 3, 4, 3, 4, 5, 4, 5, 2, 3, 4]
B2 = [2, 3, 3, 4, 4, 3, 5, 5, 4, 3, 2, 4]
C1 = [1, 1, 2, 3, 2, 3, 4, 4, 4, 2, 1, 3]
C2 = [1, 2, 2, 2, 3, 3, 4, 3, 5, 1, 2, 3]
# Distinct differences between runs: no two questions repeat a (difference, preference) pair, so no resample
# equals the estimate by coincidence and the BCa limits equal scipy's to rounding.
M = {
    "a": [0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40],
    "b": [0.512, 0.437, 0.571, 0.618, 0.546, 0.702, 0.793, 0.861, 0.808, 0.449, 0.296, 0.663],
    "c": [0.287, 0.254, 0.412, 0.493, 0.361, 0.588, 0.706, 0.617, 0.744, 0.318, 0.109, 0.521],
}
HALLU = {
    "a": [0.61, 0.72, 0.33, 0.52, 0.64, 0.21, 0.43, 0.12, 0.35, 0.57, 0.81, 0.66],
    "b": [0.493, 0.518, 0.402, 0.297, 0.421, 0.316, 0.187, 0.224, 0.109, 0.611, 0.583, 0.338],
    "c": [0.707, 0.596, 0.512, 0.489, 0.603, 0.417, 0.318, 0.291, 0.228, 0.694, 0.913, 0.409],
}
HUMAN = {
    "a": (np.array(R1, float) + np.array(R2, float)) / 2,
    "b": (np.array(B1, float) + np.array(B2, float)) / 2,
    "c": (np.array(C1, float) + np.array(C2, float)) / 2,
}
SEED, RESAMPLES = 3, 1000


def _add_run(client: TestClient, ds: int, name: str, raters: tuple[list[int], list[int]]) -> int:
    run = client.post(f"/datasets/{ds}/runs", json={"name": name}).json()["id"]
    outs = [{"question_id": f"q{i}", "answer": f"{name} answer {i}"} for i in range(N_Q)]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    ratings = [
        {"question_id": f"q{i}", "rater": f"rater{j + 1}", "score": r[i]}
        for j, r in enumerate(raters)
        for i in range(N_Q)
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    return int(run)


def _scores(client: TestClient, run: int, key: str) -> None:
    rows = [{"question_id": f"q{i}", "metric": "external.m", "value": M[key][i]} for i in range(N_Q)]
    rows += [
        {
            "question_id": f"q{i}",
            "metric": "external.hallu",
            "value": HALLU[key][i],
            "higher_is_better": False,
        }
        for i in range(N_Q)
    ]
    r = client.post(f"/runs/{run}/scores", json=rows)
    assert r.status_code == 200, r.text


@pytest.fixture
def three_runs(client: TestClient) -> tuple[int, dict[str, int]]:
    ds, run_a = study(client)
    runs = {"a": run_a, "b": _add_run(client, ds, "b", (B1, B2)), "c": _add_run(client, ds, "c", (C1, C2))}
    for key, run in runs.items():
        _scores(client, run, key)
    return ds, runs


def _ordered(x: Vec) -> Vec:
    return np.asarray(x, dtype=np.float64)[ORDER]


STAT = {
    "pearson": lambda x, y: sps.pearsonr(x, y).statistic,
    "spearman": lambda x, y: sps.spearmanr(x, y).statistic,
    "kendall": lambda x, y: sps.kendalltau(x, y).statistic,
}
PVAL = {
    "pearson": lambda x, y: sps.pearsonr(x, y).pvalue,
    "spearman": lambda x, y: sps.spearmanr(x, y).pvalue,
    "kendall": lambda x, y: sps.kendalltau(x, y).pvalue,
}


def _metric(read: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in read["metrics"] if m["metric"] == name)


EXPANDED = 2 * sps.norm.cdf(np.sqrt(N_Q / (N_Q - 1)) * sps.t.ppf(0.975, N_Q - 1)) - 1


def test_pairwise_from_absolute_ratings_against_scipy(client: TestClient, three_runs: Any) -> None:
    _, runs = three_runs
    params = {"run_a": runs["a"], "run_b": runs["b"], "seed": SEED, "n_resamples": RESAMPLES}
    read = client.get("/reports/pairwise", params=params).json()
    assert read["source"] == "absolute_ratings" and "No preference ratings" in read["source_detail"]
    pref = _ordered(HUMAN["b"] - HUMAN["a"])
    assert read["n_pairs"] == N_Q and read["n_human_ties"] == int((pref == 0).sum()) > 0
    assert (read["human_prefers_b"], read["human_prefers_a"]) == (
        int((pref > 0).sum()),
        int((pref < 0).sum()),
    )
    # Lower-is-better metric: the difference is negated, so that positive = B better for every metric.
    for name, delta in (
        ("external.m", _ordered(np.array(M["b"]) - np.array(M["a"]))),
        ("external.hallu", -_ordered(np.array(HALLU["b"]) - np.array(HALLU["a"]))),
    ):
        row = _metric(read, name)
        assert row["n_pairs"] == N_Q
        for method in ("pearson", "spearman", "kendall"):
            c = row[method]
            assert c["estimate"] == pytest.approx(STAT[method](delta, pref), abs=1e-12)
            assert c["p_value"] == pytest.approx(PVAL[method](delta, pref), abs=1e-12)
            boot = sps.bootstrap(
                (delta, pref),
                STAT[method],
                paired=True,
                vectorized=False,
                method="BCa",
                n_resamples=RESAMPLES,
                rng=np.random.default_rng(SEED),
                # Pearson's expanded for small samples: read at 2 Phi(sqrt(n / (n - 1)) t_{n-1}) - 1
                confidence_level=EXPANDED if method == "pearson" else 0.95,
            ).confidence_interval
            assert (c["ci_low"], c["ci_high"]) == (
                pytest.approx(boot.low, abs=1e-9),
                pytest.approx(boot.high, abs=1e-9),
            ), (name, method)
        # Sign agreement: human ties left out, a metric tie on a non-tied pair is wrong.
        keep = pref != 0
        correct = int((np.sign(delta[keep]) == np.sign(pref[keep])).sum())
        wilson = sps.binomtest(correct, int(keep.sum())).proportion_ci(0.95, method="wilson")
        s = row["sign_agreement"]
        assert (s["correct"], s["total"]) == (correct, int(keep.sum()))
        assert (s["ci_low"], s["ci_high"]) == (pytest.approx(wilson.low), pytest.approx(wilson.high))
        assert row["n_metric_ties"] == int((delta[keep] == 0).sum())
    # Comparison with the best metric (Pearson): Zou's interval on the two deltas, Williams' t.
    best = read["best"]
    other = "external.hallu" if best == "external.m" else "external.m"
    assert _metric(read, best)["pearson"]["estimate"] >= _metric(read, other)["pearson"]["estimate"]
    comp = _metric(read, other)["comparison"]
    deltas = {
        "external.m": _ordered(np.array(M["b"]) - np.array(M["a"])),
        "external.hallu": -_ordered(np.array(HALLU["b"]) - np.array(HALLU["a"])),
    }
    r12 = sps.pearsonr(deltas[best], pref).statistic
    r13 = sps.pearsonr(deltas[other], pref).statistic
    r23 = sps.pearsonr(deltas[best], deltas[other]).statistic
    n = N_Q
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23) / (2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3))
    assert comp["difference"] == pytest.approx(r12 - r13, abs=1e-12)
    assert comp["williams_t"] == pytest.approx(t, abs=1e-9)
    assert comp["williams_p"] == pytest.approx(2 * sps.t.sf(abs(t), n - 3), abs=1e-12)
    # One comparison in the family: Holm leaves p as is.
    assert comp["holm_p"] == pytest.approx(comp["p_value"])
    assert any(w["code"] == "small_sample" for w in read["warnings"])
    assert "tied" in read["ties_rule"] and "resampling questions" in read["interval_rule"]


def test_pairwise_csv_and_figure(client: TestClient, three_runs: Any) -> None:
    _, runs = three_runs
    params = {"run_a": runs["a"], "run_b": runs["c"], "n_resamples": 200}
    r = client.get("/reports/pairwise", params={**params, "format": "csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    computed = [row for row in rows if row["status"] == "computed"]
    assert {row["metric"] for row in computed} == {"external.m", "external.hallu"}
    # The study's own metrics are scored on run A only: listed with the reason, figures empty.
    absent = {row["metric"]: row for row in rows if row["status"] == "not computed"}
    assert absent["external.a"]["reason"] == f"not scored on run {runs['c']}"
    assert absent["external.a"]["pearson_r"] == ""
    read = client.get("/reports/pairwise", params=params).json()
    assert {m["metric"] for m in read["not_computed"]} == set(absent)
    for row in computed:
        assert float(row["pearson_r"]) == pytest.approx(_metric(read, row["metric"])["pearson"]["estimate"])
        assert row["source"] == "absolute_ratings" and row["status"] == "computed"
    svg = client.get("/reports/pairwise.svg", params=params)
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    assert "external.m" in svg.text and "sign agreement" in svg.text and 'href="http' not in svg.text
    png = client.get("/reports/pairwise.png", params=params)
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"


def test_pairwise_preference_ratings_are_used_and_mapped(client: TestClient) -> None:
    team = make_team(client)
    run_b = make_run(client, team.dataset, "r2")
    assert client.post(f"/runs/{run_b}/outputs", json=all_outputs("Autre réponse")).status_code == 200
    body = {"name": "pair", "mode": "pairwise", "run_id": run_b, "run_b_id": team.run}
    task = client.post("/tasks", json={**body, "raters": ["alice", "bob"], "seed": 5}).json()
    # The preference of each rater for the report's run B (team.run) over its run A (run_b), on -2..2.
    wanted = {
        "alice": dict(zip(QUESTIONS, [2, 1, -1, 0, -2], strict=True)),
        "bob": dict(zip(QUESTIONS, [1, 1, -2, 1, -1], strict=True)),
    }
    for who in ("alice", "bob"):
        entries = team.as_(who, "GET", f"/tasks/{task['id']}/queue").json()["entries"]
        for e in entries:
            v = team.as_(who, "GET", f"/tasks/{task['id']}/queue/{e['position']}").json()
            label = wanted[who][v["question_id"]]
            # 1 = left much better .. 5 = right much better; our B (team.run) is the answer "Réponse ...".
            b_on_left = v["answers"][0]["answer"].startswith("Réponse")
            score = 3 - label if b_on_left else 3 + label
            r = team.as_(
                who,
                "PUT",
                f"/tasks/{task['id']}/queue/{e['position']}",
                json={"action": "rate", "score": score},
            )
            assert r.status_code == 200, r.text
    m_a = [0.2, 0.5, 0.6, 0.4, 0.9]  # run_b of the task = our run A
    m_b = [0.8, 0.6, 0.3, 0.5, 0.2]
    for run, values in ((run_b, m_a), (team.run, m_b)):
        rows = [
            {"question_id": q, "metric": "external.m", "value": v}
            for q, v in zip(QUESTIONS, values, strict=True)
        ]
        assert client.post(f"/runs/{run}/scores", json=rows).status_code == 200
    params = {"run_a": run_b, "run_b": team.run, "n_resamples": 500}
    read = client.get("/reports/pairwise", params=params).json()
    assert read["source"] == "preference_ratings" and "1 pairwise rating task" in read["source_detail"]
    pref = np.array([(wanted["alice"][q] + wanted["bob"][q]) / 2 for q in sorted(QUESTIONS)])
    delta = np.array(m_b) - np.array(m_a)
    row = _metric(read, "external.m")
    assert row["pearson"]["estimate"] == pytest.approx(sps.pearsonr(delta, pref).statistic, abs=1e-12)
    assert row["kendall"]["estimate"] == pytest.approx(sps.kendalltau(delta, pref).statistic, abs=1e-12)
    assert row["sign_agreement"]["correct"] == int((np.sign(delta) == np.sign(pref)).sum())
    assert read["preference_scale"] == [-2.0, 2.0]
    # The runs in the other order: every preference and difference flips, r stays.
    flipped = client.get("/reports/pairwise", params={**params, "run_a": team.run, "run_b": run_b}).json()
    assert flipped["human_prefers_a"] == read["human_prefers_b"]
    assert _metric(flipped, "external.m")["pearson"]["estimate"] == pytest.approx(row["pearson"]["estimate"])
    # Absolute ratings forced: none exist here, so nothing is computed, and it says so.
    absolute = client.get("/reports/pairwise", params={**params, "source": "absolute"}).json()
    assert absolute["n_pairs"] == 0 and absolute["metrics"] == []
    assert absolute["not_computed"][0]["reason"].startswith("only 0 pair(s)")
    assert absolute["warnings"][0]["code"] == "undefined"


def _t_ci(x: Vec) -> tuple[float, float]:
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def test_system_level_against_scipy(client: TestClient, three_runs: Any) -> None:
    _, runs = three_runs
    keys = ["a", "b", "c"]
    ids = ",".join(str(runs[k]) for k in keys)
    read = client.get("/reports/systems", params={"runs": ids, "seed": SEED, "n_resamples": RESAMPLES}).json()
    assert read["n_questions"] == N_Q
    H = np.vstack([_ordered(HUMAN[k]) for k in keys])
    for got, k, row in zip(read["human"], keys, H, strict=True):
        assert got["run_id"] == runs[k] and got["mean"] == pytest.approx(row.mean())
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(_t_ci(row))
    pairs = list(combinations(range(3), 2))
    human_p = [sps.ttest_rel(H[j], H[i]).pvalue for i, j in pairs]
    holm = multipletests(human_p, method="holm")[1]
    for got, (i, j), p, hp in zip(read["human_pairs"], pairs, human_p, holm, strict=True):
        res = sps.ttest_rel(H[j], H[i])
        ci = res.confidence_interval(0.95)
        assert (got["run_a"], got["run_b"]) == (runs[keys[i]], runs[keys[j]])
        assert got["difference"] == pytest.approx((H[j] - H[i]).mean())
        assert (got["ci_low"], got["ci_high"], got["p_value"], got["holm_p"]) == pytest.approx(
            (ci.low, ci.high, p, hp)
        )
    for name, values, sign in (("external.m", M, 1.0), ("external.hallu", HALLU, -1.0)):
        row = _metric(read, name)
        X = np.vstack([_ordered(np.array(values[k])) for k in keys])
        assert [m["mean"] for m in row["means"]] == pytest.approx(X.mean(axis=1).tolist())
        hm, mm = np.round(H.mean(axis=1), 10), np.round(sign * X.mean(axis=1), 10)
        tau = sps.kendalltau(hm, mm).statistic
        assert row["kendall"]["estimate"] == pytest.approx(tau, abs=1e-12)
        # Bootstrap over questions, the same questions for every run, written out with scipy.
        idx = np.random.default_rng(SEED).integers(0, N_Q, size=(RESAMPLES, N_Q))
        taus = np.array(
            [
                sps.kendalltau(
                    np.round(H[:, r].mean(axis=1), 10), np.round(sign * X[:, r].mean(axis=1), 10)
                ).statistic
                for r in idx
            ]
        )
        defined = taus[np.isfinite(taus)]
        low, high = np.quantile(defined, [0.025, 0.975])
        assert row["kendall"]["n_resamples_undefined"] == RESAMPLES - defined.size
        assert (row["kendall"]["ci_low"], row["kendall"]["ci_high"]) == pytest.approx((low, high))
        order_h, order_m = np.sign(hm[:, None] - hm[None, :]), np.sign(mm[:, None] - mm[None, :])
        upper = np.triu(np.ones((3, 3), bool), 1) & (order_h != 0)
        assert (row["pairwise_correct"], row["pairwise_total"]) == (
            int((upper & (order_h == order_m)).sum()),
            int(upper.sum()),
        )
        metric_p = [sps.ttest_rel(sign * X[j], sign * X[i]).pvalue for i, j in pairs]
        metric_holm = multipletests(metric_p, method="holm")[1]
        for got, (i, j), hp, mp in zip(row["pairs"], pairs, holm, metric_holm, strict=True):
            dm = float((sign * (X[j] - X[i])).mean())
            dh = float((H[j] - H[i]).mean())
            assert got["metric"]["difference"] == pytest.approx(dm)
            assert got["metric"]["holm_p"] == pytest.approx(mp)
            assert got["same_winner"] == (np.sign(dm) == np.sign(dh))
            assert got["human_distinguishable"] == (hp < 0.05)
            assert got["metric_distinguishable"] == (mp < 0.05)
    csv_rows = list(
        csv.DictReader(
            io.StringIO(client.get("/reports/systems", params={"runs": ids, "format": "csv"}).text)
        )
    )
    assert sum(row["status"] == "computed" for row in csv_rows) == 2 * (1 + 3)  # per metric: rank + 3 pairs
    assert {row["metric"] for row in csv_rows if row["status"] == "not computed"} == {
        "external.a",
        "external.b",
        "external.flat",
    }
    assert any(w["code"] == "small_sample" and "3 runs" in w["message"] for w in read["warnings"])


def test_comparisons_on_the_pooled_page(client: TestClient, three_runs: Any) -> None:
    _, runs = three_runs
    ids = ",".join(str(v) for v in runs.values())
    page = client.get("/report.html", params={"runs": ids, "n_resamples": 200}).text
    assert "id='system-level'" in page and "id='table-system-level'" in page
    assert page.count("<h3 id='pairwise-") == 3 and "figure-pairwise-" in page
    two = client.get("/report.html", params={"runs": f"{runs['a']},{runs['b']}", "n_resamples": 200}).text
    assert "id='system-level'" not in two and two.count("<h3 id='pairwise-") == 1
    # A pair that cannot be compared says why instead of a table.
    ds = client.get(f"/runs/{runs['a']}").json()["dataset_id"]
    empty = client.post(f"/datasets/{ds}/runs", json={"name": "empty"}).json()["id"]
    page = client.get("/report.html", params={"runs": f"{runs['a']},{empty}", "n_resamples": 200}).text
    assert "Not computed because the two runs have no question in common." in page


# ------------------------------------------------------------------------------------------- bad input


def _other_dataset_run(client: TestClient) -> int:
    return study(client, name="other")[1]


@pytest.mark.parametrize("case", ["same run", "unknown run", "other dataset", "no overlap", "no preferences"])
def test_pairwise_bad_input(client: TestClient, three_runs: Any, case: str) -> None:
    ds, runs = three_runs
    a = runs["a"]
    if case == "same run":
        b, status, field, extra = a, 422, "run_b", {}
    elif case == "unknown run":
        b, status, field, extra = 999_999, 404, "run_b", {}
    elif case == "other dataset":
        b, status, field, extra = _other_dataset_run(client), 422, "run_b", {}
    elif case == "no overlap":
        b = client.post(f"/datasets/{ds}/runs", json={"name": "empty"}).json()["id"]
        status, field, extra = 422, "run_b", {}
    else:
        b, status, field, extra = runs["b"], 422, "source", {"source": "preference"}
    r = client.get("/reports/pairwise", params={"run_a": a, "run_b": b, **extra})
    body = assert_envelope(r, status)
    assert body["items"][0]["field"] == field, body
    if case == "unknown run":
        r = client.get("/reports/pairwise", params={"run_a": 999_999, "run_b": a})
        assert assert_envelope(r, 404)["items"][0]["field"] == "run_a"


@pytest.mark.parametrize("case", ["two runs", "unknown run", "other dataset", "no overlap"])
def test_systems_bad_input(client: TestClient, three_runs: Any, case: str) -> None:
    ds, runs = three_runs
    ids = [runs["a"], runs["b"], runs["c"]]
    status = 422
    if case == "two runs":
        ids = [runs["a"], runs["b"], runs["a"]]
    elif case == "unknown run":
        ids[2], status = 999_999, 404
    elif case == "other dataset":
        ids[2] = _other_dataset_run(client)
    else:
        ids[2] = client.post(f"/datasets/{ds}/runs", json={"name": "empty"}).json()["id"]
    r = client.get("/reports/systems", params={"runs": ",".join(map(str, ids))})
    assert assert_envelope(r, status)["items"][0]["field"] == "runs"


def test_cli_commands(
    client: TestClient, three_runs: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, runs = three_runs

    def run(*argv: str) -> int:
        return cli._dispatch(client, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]

    a, b, c = (str(runs[k]) for k in "abc")
    assert run("pairwise", a, b) == 0
    out = capsys.readouterr().out
    assert f"run {b} (b) vs run {a} (r)" in out and "external.m" in out and "not computed: external.a" in out
    target = tmp_path / "pair.csv"
    assert run("pairwise", a, b, "-o", str(target)) == 0
    assert target.read_text().splitlines()[0].startswith("run_a,run_b,source,metric")
    as_json = tmp_path / "pair.json"
    assert run("pairwise", a, b, "-o", str(as_json)) == 0
    assert json.loads(as_json.read_text())["run_b"]["id"] == int(b)
    svg = tmp_path / "pair.svg"
    assert run("pairwise", a, b, "-o", str(svg)) == 0 and "<svg" in svg.read_text()
    assert run("systems", f"{a},{b},{c}") == 0
    out = capsys.readouterr().out
    assert "System level over 3 runs, 12 questions" in out and "external.hallu" in out
    with pytest.raises(cli.ClientError, match=r"runs: 2 distinct run\(s\) given"):
        run("systems", f"{a},{b}")
