"""Report intervals: resampling by question on pooled runs, comparisons for every coefficient, ci=auto."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from scipy import stats as sps

from tests.integration.test_reports import R1, R2, A, B, study
from tests.unit.test_stats_passfail import _delong_logit_reference, _exact_youden, _held_out_sklearn
from tests.unit.test_stats_resampling import _jackknife_difference_reference

H = (np.array(R1, dtype=float) + np.array(R2, dtype=float)) / 2
STAT: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], float]] = {
    "pearson": lambda x, y: float(sps.pearsonr(x, y).statistic),
    "spearman": lambda x, y: float(sps.spearmanr(x, y).statistic),
    "kendall": lambda x, y: float(sps.kendalltau(x, y).statistic),
}


def _copy_run(client: TestClient, ds: int, name: str = "copy") -> int:
    """A second run whose outputs, ratings and scores repeat the study's first run exactly."""
    run = client.post(f"/datasets/{ds}/runs", json={"name": name}).json()["id"]
    outs = [{"question_id": f"q{i}", "answer": f"answer {i}"} for i in range(12)]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    ratings = [
        {"question_id": f"q{i}", "rater": n, "score": r[i]}
        for n, r in (("rater1", R1), ("rater2", R2))
        for i in range(12)
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    scores = [{"question_id": f"q{i}", "metric": "external.a", "value": A[i]} for i in range(12)]
    scores += [{"question_id": f"q{i}", "metric": "external.b", "value": B[i]} for i in range(12)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    return int(run)


def _jackknife_difference(x: Any, y: Any, method: str) -> tuple[float, float, float]:
    """d -+ t(11) se of r(x, H) - r(y, H) and its t-test p, leaving each of the 12 questions out (scipy)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return _jackknife_difference_reference(a, b, H, method, np.arange(12))


def _row(report: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(m for m in report["analyses"][0]["metrics"] if m["metric"] == metric)


def _jackknife_t(x: NDArray[np.float64], method: str) -> tuple[float, float]:
    """Jackknife-t on Fisher's z of the 12 questions: leave each out (scipy), t quantile with 11 df."""
    stat = STAT[method]
    keep = ~np.eye(x.size, dtype=bool)
    z = np.array([np.arctanh(stat(x[k], H[k])) for k in keep])
    se = np.sqrt((z.size - 1) / z.size * np.sum((z - z.mean()) ** 2))
    half = sps.t.ppf(0.975, z.size - 1) * se
    centre = np.arctanh(stat(x, H))
    return float(np.tanh(centre - half)), float(np.tanh(centre + half))


def test_two_identical_runs_pooled_give_the_width_of_one_run(client: TestClient) -> None:
    ds, run = study(client)
    run2 = _copy_run(client, ds)
    params = {"ci": "bca", "n_resamples": 1000, "seed": 1}
    one = client.get(f"/runs/{run}/report", params=params).json()
    pooled = client.get("/report", params={"runs": f"{run},{run2}", **params}).json()
    assert (pooled["n_items"], pooled["n_questions"]) == (24, 12)
    assert (one["n_items"], one["n_questions"]) == (12, 12)
    assert pooled["bootstrap"]["paired_by"] == "question" and one["bootstrap"]["paired_by"] == "output"
    assert "12 distinct questions" in pooled["interval_rule"]
    for metric, x in (("external.a", A), ("external.b", B)):
        a1, a2 = _row(one, metric), _row(pooled, metric)
        assert (a2["n"], a2["n_questions"]) == (24, 12)
        for method in ("pearson", "spearman", "kendall"):
            c1, c2 = a1[method], a2[method]
            assert c2["estimate"] == pytest.approx(c1["estimate"], abs=1e-12)
            # Pooled coefficients: jackknife-t leaving one question (both its outputs) out, the interval
            # of the 12 questions alone; treating the 24 outputs as independent would narrow it.
            low, high = _jackknife_t(np.asarray(x, dtype=np.float64), method)
            assert (c2["ci_low"], c2["ci_high"]) == (pytest.approx(low), pytest.approx(high)), (
                metric,
                method,
            )
            assert (c2["ci_method"], c2["p_method"]) == ("jackknife-t", "cluster jackknife")
            assert c1["p_method"] == "scipy"
    comp1, comp2 = (
        _row(one, "external.b")["spearman_comparison"],
        _row(pooled, "external.b")["spearman_comparison"],
    )
    # The run alone shows Zou's interval with the jackknife-t of the difference beside it (ci=bca); pooled,
    # the jackknife by question, which on an exact copy leaves out what the run alone leaves out.
    assert comp1["ci_method"] == "zou" and comp2["ci_method"] == "jackknife-t"
    assert comp2["p_method"] == "cluster jackknife"
    low, high, p = _jackknife_difference(
        np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64), "spearman"
    )
    if comp1["best"] == "external.b":
        low, high = -high, -low
    assert (comp1["jackknife_low"], comp1["jackknife_high"]) == (pytest.approx(low), pytest.approx(high))
    assert (comp2["ci_low"], comp2["ci_high"], comp2["p_value"]) == (
        pytest.approx(low),
        pytest.approx(high),
        pytest.approx(p),
    )
    # Pearson's Williams test assumes independent outputs: on pooled runs the comparison is the jackknife.
    pearson2 = _row(pooled, "external.b")["comparison"]
    assert pearson2["williams_p"] is None and pearson2["p_method"] == "cluster jackknife"


def test_pooled_fisher_request_is_replaced_by_the_question_jackknife(client: TestClient) -> None:
    ds, run = study(client)
    run2 = _copy_run(client, ds)
    single = client.get(f"/runs/{run}/report").json()
    pooled = client.get("/report", params={"runs": f"{run},{run2}", "n_resamples": 1000}).json()
    a1, a2 = _row(single, "external.a")["pearson"], _row(pooled, "external.a")["pearson"]
    assert a1["ci_method"] == "fisher" and a2["ci_method"] == "jackknife-t"
    # Treating the 24 outputs as independent would give Fisher's n = 24 interval, much narrower than n = 12.
    fisher_24 = np.tanh(np.arctanh(a1["estimate"]) + np.array([-1, 1]) * 1.959964 / np.sqrt(21))
    assert a2["ci_high"] - a2["ci_low"] > 1.3 * (fisher_24[1] - fisher_24[0])
    assert pooled["by_type"][0]["metrics"]["external.a"]["p_method"] == "cluster jackknife"


def _rank_zou(x: Any, y: Any, method: str) -> tuple[float, float, float]:
    """Zou's interval and the z-test p of rank(x, H) - rank(y, H), written out from scipy's coefficients."""
    n = 12
    r1, r2, r12 = STAT[method](x, H), STAT[method](y, H), STAT[method](x, y)

    def se(v: Any) -> float:
        if method == "spearman":
            return float(np.sqrt(1.06 / (n - 3)))
        n0 = n * (n - 1) / 2
        ties = [sum(t * (t - 1) / 2 for t in np.unique(u, return_counts=True)[1]) for u in (v, H)]
        return float(np.sqrt(0.437 / (n - 4)) * n0 / np.sqrt((n0 - ties[0]) * (n0 - ties[1])))

    z975 = sps.norm.ppf(0.975)
    s1, s2 = se(x), se(y)
    l1, u1 = np.tanh(np.arctanh(r1) - z975 * s1), np.tanh(np.arctanh(r1) + z975 * s1)
    l2, u2 = np.tanh(np.arctanh(r2) - z975 * s2), np.tanh(np.arctanh(r2) + z975 * s2)
    c = ((r12 - r1 * r2 / 2) * (1 - r1**2 - r2**2 - r12**2) + r12**3) / ((1 - r1**2) * (1 - r2**2))
    low = r1 - r2 - np.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * c * (r1 - l1) * (u2 - r2))
    high = r1 - r2 + np.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * c * (u1 - r1) * (r2 - l2))
    z = (np.arctanh(r1) - np.arctanh(r2)) / np.sqrt(s1**2 + s2**2 - 2 * c * s1 * s2)
    return float(low), float(high), float(2 * sps.norm.sf(abs(z)))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_rank_comparisons_against_scipy(client: TestClient, method: str) -> None:
    _, run = study(client)
    report = client.get(f"/runs/{run}/report").json()
    a1 = report["analyses"][0]
    best = a1[f"top_{method}"]
    assert best == ("external.a" if STAT[method](A, H) > STAT[method](B, H) else "external.b")
    other = "external.b" if best == "external.a" else "external.a"
    x, y = (A, B) if best == "external.a" else (B, A)
    comp = _row(report, other)[f"{method}_comparison"]
    assert comp["best"] == best and comp["method"] == method and comp["n"] == 12
    assert comp["difference"] == pytest.approx(STAT[method](x, H) - STAT[method](y, H), abs=1e-12)
    low, high, p = _rank_zou(x, y, method)
    assert (comp["ci_low"], comp["ci_high"]) == (
        pytest.approx(low, abs=1e-12),
        pytest.approx(high, abs=1e-12),
    )
    assert (comp["zou_low"], comp["zou_high"]) == (comp["ci_low"], comp["ci_high"])
    assert comp["ci_method"] == "zou" and comp["p_method"] == "fieller-z"
    assert comp["p_value"] == pytest.approx(p, abs=1e-12)
    assert comp["jackknife_low"] is None
    # one comparison in the family: Holm leaves its p alone
    assert comp["holm_p"] == pytest.approx(comp["p_value"])
    assert comp["indistinguishable_from_best"] is (comp["p_value"] >= 0.05)
    assert _row(report, best)[f"{method}_comparison"] is None
    # ci=bca keeps Zou's interval and shows the jackknife-t of the difference beside it
    bca = _row(client.get(f"/runs/{run}/report", params={"ci": "bca"}).json(), other)[f"{method}_comparison"]
    assert (bca["ci_low"], bca["ci_method"]) == (pytest.approx(low, abs=1e-12), "zou")
    j_low, j_high, j_p = _jackknife_difference(np.asarray(x, dtype=float), np.asarray(y, dtype=float), method)
    assert (bca["jackknife_low"], bca["jackknife_high"], bca["jackknife_p"]) == (
        pytest.approx(j_low, abs=1e-12),
        pytest.approx(j_high, abs=1e-12),
        pytest.approx(j_p, abs=1e-12),
    )


def test_bca_report_shows_the_jackknife_difference_of_pearson(client: TestClient) -> None:
    _, run = study(client)
    fisher = _row(client.get(f"/runs/{run}/report").json(), "external.b")["comparison"]
    assert fisher["jackknife_low"] is None and fisher["p_method"] == "williams"
    params = {"ci": "bca", "n_resamples": 9999}
    bca = _row(client.get(f"/runs/{run}/report", params=params).json(), "external.b")["comparison"]
    low, high, p = _jackknife_difference(np.asarray(A, dtype=float), np.asarray(B, dtype=float), "pearson")
    assert (bca["jackknife_low"], bca["jackknife_high"], bca["jackknife_p"]) == (
        pytest.approx(low, abs=1e-12),
        pytest.approx(high, abs=1e-12),
        pytest.approx(p, abs=1e-12),
    )
    assert bca["williams_p"] == pytest.approx(0.6351519788567549)  # Williams stays the tested test
    assert (
        "jackknife-t interval of the difference"
        in client.get(f"/runs/{run}/report", params=params).json()["interval_rule"]
    )


def test_ci_auto_states_its_rule(client: TestClient) -> None:
    ds, run = study(client)
    single = client.get(f"/runs/{run}/report", params={"ci": "auto"}).json()
    assert single["interval_rule"].startswith("ci=auto: every output is its own question")
    assert _row(single, "external.a")["pearson"]["ci_method"] == "fisher"
    assert _row(single, "external.a")["kendall"]["ci_method"] == "fieller-ties"
    run2 = _copy_run(client, ds)
    pooled = client.get("/report", params={"runs": f"{run},{run2}", "ci": "auto", "n_resamples": 500}).json()
    assert pooled["interval_rule"].startswith("ci=auto: 24 outputs come from 12 distinct questions")
    assert client.get(f"/runs/{run}/report", params={"ci": "delong"}).status_code == 422


def test_pass_fail_analysis_equals_scikit_learn(client: TestClient) -> None:
    from sklearn.metrics import cohen_kappa_score, confusion_matrix, roc_auc_score

    _, run = study(client)
    report = client.get(f"/runs/{run}/report").json()
    pf = report["pass_fail"]
    assert pf["human_threshold"] == 4.0 and "upper half of the rubric 1..5" in pf["threshold_rule"]
    # Figures at the threshold chosen on all the data under-cover (bench): the report shows held-out ones.
    assert pf["note"].startswith("Youden's J, kappa, accuracy, precision and recall are held out")
    rows = {m["metric"]: m for m in pf["metrics"]}
    y = (H >= 4).astype(int)
    for name, x in (("external.a", A), ("external.b", B)):
        row = rows[name]
        x = np.asarray(x)
        cut = _exact_youden(x, y)[0]
        pred = (x >= cut).astype(int)
        assert row["auc"]["estimate"] == pytest.approx(roc_auc_score(y, x), abs=1e-12)
        assert row["threshold"]["estimate"] == pytest.approx(cut, abs=1e-12)
        assert row["confusion"] == confusion_matrix(y, pred, labels=[0, 1]).tolist()
        assert row["threshold"]["ci_low"] is None and "no interval" in row["threshold"]["undefined_reason"]
        # Held out: each half of the 12 questions judged at the other half's Youden threshold (seed 0).
        held = _held_out_sklearn(x, y, np.arange(12), 0)
        assert held is not None
        figures, cuts = held
        assert row["kappa"]["estimate"] == pytest.approx(figures["kappa"], abs=1e-12)
        assert (row["kappa"]["ci_low"], row["kappa"]["ci_high"]) == pytest.approx(figures["kappa_ci"])
        assert row["confusion_held_out"] == figures["confusion"]
        assert row["held_out_thresholds"] == pytest.approx(cuts)
        assert row["kappa"]["estimate"] != pytest.approx(cohen_kappa_score(y, pred))
        assert (row["n"], row["n_pass"], row["n_fail"]) == (12, 4, 8)
        assert row["auc"]["ci_method"] == "delong-logit"
        assert (row["auc"]["ci_low"], row["auc"]["ci_high"]) == pytest.approx(
            _delong_logit_reference(x, y), abs=1e-12
        )
    assert "near-constant" in rows["external.flat"]["undefined_reason"]
    # a threshold set by the request
    other = client.get(f"/runs/{run}/report", params={"pass_threshold": 3}).json()["pass_fail"]
    assert other["human_threshold"] == 3 and "set by the request" in other["threshold_rule"]
    assert client.get(f"/runs/{run}/report", params={"pass_threshold": "nan"}).status_code == 422
    page = client.get(f"/runs/{run}/report.html").text
    assert "Pass/fail alignment" in page and "ROC AUC" in page
    csv = client.get(f"/runs/{run}/report", params={"format": "csv"}).text
    assert "pass_fail_auc" in csv.splitlines()[0]
    md = client.get(f"/runs/{run}/report", params={"format": "md"}).text
    line = [x for x in md.splitlines() if x.startswith("| external.a |")][-1]
    a_auc = rows["external.a"]["auc"]
    assert f"{a_auc['estimate']:.2f} [{a_auc['ci_low']:.2f}, {a_auc['ci_high']:.2f}]" in line
    assert "## 4. Pass/fail alignment" in md and "\nIntervals: Fisher (Pearson)" in md
