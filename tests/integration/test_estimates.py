"""The single-run estimates: the human score from few ratings (PPI++) and judge sensitivity, every figure
against numpy/scipy on fixed data, bad input as 422 naming the field, CSV and the report page's sections."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from services.db import session_scope
from services.runs.repository import RunRepository
from services.scores.repository import ScoreRepository
from tests.integration.test_report_intervals import _copy_run
from tests.integration.test_reports import R1, R2, A, B, study

RATED = 8  # outputs q0..q7 rated by both raters; q8..q11 unrated
H = (np.array(R1, dtype=float) + np.array(R2, dtype=float)) / 2


def partly_rated(client: TestClient, rated: int = RATED) -> int:
    """The study's run with only q0..q<rated - 1> rated (rated = 0: a second run of its dataset, never
    rated, with the same scores)."""
    if rated:
        raters = tuple([r[i] if i < rated else None for i in range(12)] for r in (R1, R2))
        return study(client, raters=raters)[1]
    ds, _ = study(client)
    run = client.post(f"/datasets/{ds}/runs", json={"name": "unrated"}).json()["id"]
    outs = [{"question_id": f"q{i}", "answer": f"answer {i}"} for i in range(12)]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    scores = [{"question_id": f"q{i}", "metric": "external.a", "value": A[i]} for i in range(12)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    return int(run)


def _error_fields(resp: Any) -> list[str]:
    return [item["field"] for item in resp.json()["items"]]


def _ppi_theta(y: np.ndarray, fr: np.ndarray, fu: np.ndarray) -> tuple[float, float]:
    n, big_n = y.size, fu.size
    var_f = float(np.var(np.concatenate([fr, fu]), ddof=1))
    lam = float(np.mean((y - y.mean()) * (fr - fr.mean()))) / ((1 + n / big_n) * var_f)
    return lam, float(lam * fu.mean() + (y - lam * fr).mean())


def _expected_ppi(f: np.ndarray, rated: int = RATED) -> dict[str, float]:
    """PPI++ written out (Angelopoulos, Duchi & Zrnic 2023; lambda not clipped) with the two-sample
    delete-one jackknife SE (lambda re-tuned in each leave-one-out) and t(n - 1)."""
    y, fr, fu = H[:rated], f[:rated], f[rated:]
    n, big_n = y.size, fu.size
    lam, est = _ppi_theta(y, fr, fu)
    t_i = np.array([_ppi_theta(np.delete(y, i), np.delete(fr, i), fu)[1] for i in range(n)])
    t_j = np.array([_ppi_theta(y, fr, np.delete(fu, j))[1] for j in range(big_n)])
    var = (n - 1) / n * np.sum((t_i - t_i.mean()) ** 2) + (big_n - 1) / big_n * np.sum(
        (t_j - t_j.mean()) ** 2
    )
    half = float(sps.t.ppf(0.975, n - 1)) * math.sqrt(var)
    return {"lam": lam, "estimate": est, "ci_low": est - half, "ci_high": est + half}


def test_estimate_matches_the_closed_form(client: TestClient) -> None:
    run = partly_rated(client)
    body = client.get(f"/runs/{run}/estimate").json()
    assert (body["n_outputs"], body["n_rated"], body["n_unrated"]) == (12, RATED, 12 - RATED)
    y = H[:RATED]
    lo, hi = sps.t.interval(0.95, RATED - 1, loc=y.mean(), scale=sps.sem(y))
    ro = body["rated_only"]
    assert (ro["estimate"], ro["ci_low"], ro["ci_high"]) == (
        pytest.approx(y.mean()),
        pytest.approx(lo),
        pytest.approx(hi),
    )
    rows = {r["metric"]: r for r in body["metrics"]}
    for name, values in (("external.a", A), ("external.b", B)):
        exp = _expected_ppi(np.array(values))
        row = rows[name]
        assert row["lam"] == pytest.approx(exp["lam"])
        for key in ("estimate", "ci_low", "ci_high"):
            assert row["ppi"][key] == pytest.approx(exp[key]), (name, key)
        assert row["width_ratio"] == pytest.approx((exp["ci_high"] - exp["ci_low"]) / (hi - lo))
        assert row["metric_human_r"] == pytest.approx(sps.pearsonr(values[:RATED], y).statistic)
    assert "near-constant" in rows["external.flat"]["undefined_reason"]
    widths = {n: r["ppi"]["width"] for n, r in rows.items() if r["ppi"]}
    assert body["narrowest"] == min(widths, key=lambda n: widths[n])
    if widths[body["narrowest"]] < hi - lo:  # the note warns against choosing the metric after looking
        assert "chosen before looking" in body["narrowest_note"]
    # 8 rated outputs: below the 10 the bench checked.
    assert [w["code"] for w in body["warnings"]] == ["small_sample"]
    assert "mean of its raters" in body["rated_items"] and "at least 2 rater" in body["rated_items"]
    assert body["target_width"] == 0.5  # an eighth of the 1-5 range


def test_estimate_plan_and_csv(client: TestClient) -> None:
    run = partly_rated(client)
    body = client.get(f"/runs/{run}/estimate", params={"target_width": 1.5}).json()
    y = H[:RATED]
    sd = float(np.std(y, ddof=1))
    widths = {n: 2 * sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n) for n in range(RATED, 13)}
    needed = min((n for n, w in widths.items() if w <= 1.5), default=None)
    assert body["rated_only_plan"]["n_rated_needed"] == needed
    assert body["rated_only_plan"]["width_if_all_rated"] == pytest.approx(widths[12])
    resp = client.get(f"/runs/{run}/estimate", params={"format": "csv"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(resp.text)))
    assert rows[0]["metric"] == "(rated only)"
    by = {r["metric"]: r for r in rows}
    assert float(by["external.a"]["estimate"]) == pytest.approx(_expected_ppi(np.array(A))["estimate"])
    assert by["external.flat"]["status"] == "not computed"


@pytest.mark.parametrize(
    ("rated", "reason"),
    [
        (0, "no rated output"),
        (1, "no output has ratings from 2 raters (1 have fewer)"),
        (2, "2 rated output(s)"),
        (12, "all 12 outputs are rated"),
    ],
)
def test_estimate_refuses_runs_without_enough_ratings(client: TestClient, rated: int, reason: str) -> None:
    # rated = 1: one output rated by one rater only, under the minimum of 2.
    run = study(client, raters=([R1[0]] + [None] * 11,))[1] if rated == 1 else partly_rated(client, rated)
    resp = client.get(f"/runs/{run}/estimate")
    assert resp.status_code == 422
    assert _error_fields(resp) == ["ratings"] and reason in resp.json()["items"][0]["reason"]


@pytest.mark.parametrize(
    ("params", "field"),
    [({"target_width": 0}, "target_width"), ({"confidence": 1.5}, "confidence"), ({"k": 0}, "k")],
)
def test_estimate_bad_parameters(client: TestClient, params: dict[str, Any], field: str) -> None:
    run = partly_rated(client)
    resp = client.get(f"/runs/{run}/estimate", params=params)
    assert resp.status_code == 422 and any(field in f for f in _error_fields(resp))


def test_estimate_of_an_unknown_run(client: TestClient) -> None:
    assert client.get("/runs/999999/estimate").status_code == 404
    assert client.get("/runs/999999/judge-sensitivity").status_code == 404
    assert client.get("/runs/999999/judge-configurations").status_code == 404


# ------------------------------------------------------------------------------------------ judge sensitivity

JUDGE_A = {"model": "judge-small", "endpoint": "http://127.0.0.1:9/v1", "language": "fr", "prompts": "fr"}
JUDGE_B = {"model": "judge-large", "endpoint": "http://127.0.0.1:9/v1", "language": "fr", "prompts": "fr"}


def _judge_scores(client: TestClient, run: int, judge: dict[str, Any], key: str, values: list[float]) -> None:
    """Scores of two judge metrics as a scoring job stores them under one judge configuration; the
    lower-is-better hallucination gets 1 - values."""
    factory = client.app.state.resources.session_factory  # type: ignore[attr-defined]
    with session_scope(factory) as s:
        outputs = {ext: oid for oid, ext, *_ in RunRepository(s).report_items([run])}
        rows = []
        for metric, vals in (
            ("ragas.faithfulness", values),
            ("opik.hallucination", [1 - v for v in values]),
        ):
            config = {"library": metric.split(".")[0], "version": "1", "judge": judge}
            rows += [
                {
                    "output_id": outputs[f"q{i}"],
                    "metric": metric,
                    "config_key": f"{key}{metric[:4]}".ljust(32, "0"),
                    "config": config,
                    "k": None,
                    "value": v,
                    "details": {},
                }
                for i, v in enumerate(vals)
            ]
        ScoreRepository(s).insert_many(rows)


def _zou(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """docs/statistics.md §3, written out."""
    l1, u1 = (math.tanh(math.atanh(r12) + s * 1.959963984540054 / math.sqrt(n - 3)) for s in (-1, 1))
    l2, u2 = (math.tanh(math.atanh(r13) + s * 1.959963984540054 / math.sqrt(n - 3)) for s in (-1, 1))
    c = ((r23 - 0.5 * r12 * r13) * (1 - r12**2 - r13**2 - r23**2) + r23**3) / ((1 - r12**2) * (1 - r13**2))
    d = r12 - r13
    low = d - math.sqrt((r12 - l1) ** 2 + (u2 - r13) ** 2 - 2 * c * (r12 - l1) * (u2 - r13))
    high = d + math.sqrt((u1 - r12) ** 2 + (r13 - l2) ** 2 - 2 * c * (u1 - r12) * (r13 - l2))
    return low, high


def test_judge_sensitivity_matches_scipy(client: TestClient) -> None:
    _, run = study(client)  # all 12 outputs rated
    _judge_scores(client, run, JUDGE_A, "aaaa", A)
    _judge_scores(client, run, JUDGE_B, "bbbb", B)
    confs = client.get(f"/runs/{run}/judge-configurations").json()["configurations"]
    assert [c["model"] for c in confs] == ["judge-small", "judge-large"]
    # The report uses the latest configuration scored (b) for both metrics.
    assert confs[0]["reported"] == [] and confs[1]["reported"] == [
        "opik.hallucination",
        "ragas.faithfulness",
    ]
    report = client.get(f"/runs/{run}/report").json()
    row = next(m for m in report["analyses"][0]["metrics"] if m["metric"] == "ragas.faithfulness")
    assert row["pearson"]["estimate"] == pytest.approx(sps.pearsonr(B, H).statistic)
    # ... and says so.
    assert (
        "opik.hallucination, ragas.faithfulness: scores from 2 judge configurations are stored; this report "
        "uses the one scored last (model judge-large, language fr)"
    ) in " ".join(report["notes"])

    body = client.get(f"/runs/{run}/judge-sensitivity").json()
    assert (body["a"]["id"], body["b"]["id"]) == (confs[0]["id"], confs[1]["id"])
    rows = {r["metric"]: r for r in body["metrics"]}
    r12, r13, r23 = (sps.pearsonr(x, y).statistic for x, y in ((A, H), (B, H), (A, B)))
    zou = _zou(r12, r13, r23, 12)
    for metric, sign in (("ragas.faithfulness", 1), ("opik.hallucination", -1)):
        r = rows[metric]
        assert r["n"] == 12
        assert r["a"]["pearson"]["estimate"] == pytest.approx(sign * r12)
        assert r["b"]["pearson"]["estimate"] == pytest.approx(sign * r13)
        assert r["a"]["spearman"]["estimate"] == pytest.approx(sign * sps.spearmanr(A, H).statistic)
        assert r["b"]["kendall"]["estimate"] == pytest.approx(sign * sps.kendalltau(B, H).statistic)
        d = next(x for x in r["differences"] if x["method"] == "pearson")
        # Oriented: positive = a agrees better, the same for the lower-is-better metric.
        assert d["difference"] == pytest.approx(r12 - r13)
        assert (d["ci_low"], d["ci_high"]) == (pytest.approx(zou[0]), pytest.approx(zou[1]))
        # docs/statistics.md §3, data set D: Williams' t p and Zou's interval.
        assert d["p_value"] == pytest.approx(0.6351519788567549)
        assert (d["ci_low"], d["ci_high"]) == (
            pytest.approx(-0.3850283314391481),
            pytest.approx(0.6725785620423174),
        )
        # Holm over the two metrics (statsmodels' multipletests, method named: its default is Holm-Sidak).
        holm = multipletests([d["p_value"]] * 2, method="holm")[1][0]
        assert d["holm_p"] == pytest.approx(holm)
        ds = next(x for x in r["differences"] if x["method"] == "spearman")
        assert ds["difference"] == pytest.approx(
            sps.spearmanr(A, H).statistic - sps.spearmanr(B, H).statistic
        )
        ag = r["agreement"]
        assert ag["n"] == 12
        assert ag["pearson"]["estimate"] == pytest.approx(r23)
        diff = sign * (np.array(B) - np.array(A))
        lo, hi = sps.t.interval(0.95, 11, loc=diff.mean(), scale=sps.sem(diff))
        assert (ag["mean_difference"], ag["mean_difference_ci_low"], ag["mean_difference_ci_high"]) == (
            pytest.approx(diff.mean()),
            pytest.approx(lo),
            pytest.approx(hi),
        )
        assert ag["mean_abs_difference"] == pytest.approx(np.abs(diff).mean())
    resp = client.get(
        f"/runs/{run}/judge-sensitivity", params={"format": "csv", "a": confs[1]["id"], "b": confs[0]["id"]}
    )
    lines = list(csv.DictReader(io.StringIO(resp.text)))
    faith = next(x for x in lines if x["metric"] == "ragas.faithfulness")
    assert float(faith["pearson_diff"]) == pytest.approx(r13 - r12)


def test_judge_sensitivity_bad_input(client: TestClient) -> None:
    _, run = study(client)
    resp = client.get(f"/runs/{run}/judge-sensitivity")
    assert resp.status_code == 422 and _error_fields(resp) == ["b"]
    assert "no judge scores" in resp.json()["items"][0]["reason"]
    _judge_scores(client, run, JUDGE_A, "aaaa", A)
    resp = client.get(f"/runs/{run}/judge-sensitivity")
    assert resp.status_code == 422 and _error_fields(resp) == ["b"]
    assert "one configuration only" in resp.json()["items"][0]["reason"]
    _judge_scores(client, run, JUDGE_B, "bbbb", B)
    ids = [c["id"] for c in client.get(f"/runs/{run}/judge-configurations").json()["configurations"]]
    for params, field in (
        ({"a": "0123456789ab", "b": ids[1]}, "a"),
        ({"a": ids[0], "b": "0123456789ab"}, "b"),
        ({"a": ids[0]}, "b"),
        ({"a": ids[0], "b": ids[0]}, "b"),
        ({"a": "not-hex"}, "a"),
    ):
        resp = client.get(f"/runs/{run}/judge-sensitivity", params=params)
        assert resp.status_code == 422, params
        assert any(field in f for f in _error_fields(resp)), (params, resp.json())


def test_judge_sensitivity_needs_ratings(client: TestClient) -> None:
    run = partly_rated(client, 0)
    _judge_scores(client, run, JUDGE_A, "aaaa", A)
    _judge_scores(client, run, JUDGE_B, "bbbb", B)
    resp = client.get(f"/runs/{run}/judge-sensitivity")
    assert resp.status_code == 422 and _error_fields(resp) == ["ratings"]


def test_report_page_has_both_sections(client: TestClient) -> None:
    run = partly_rated(client)
    _judge_scores(client, run, JUDGE_A, "aaaa", A)
    page = client.get(f"/runs/{run}/report.html").text
    assert "id='table-estimate'" in page and "external.a" in page
    assert "id='sensitivity-not-computed'" in page and "one configuration only" in page
    _judge_scores(client, run, JUDGE_B, "bbbb", B)
    page = client.get(f"/runs/{run}/report.html").text
    assert "id='table-sensitivity'" in page and "judge-large" in page
    # A fully rated run says why there is no estimate; a pooled page has no single-run section.
    ds, run2 = study(client, name="other")
    page = client.get(f"/runs/{run2}/report.html").text
    assert "id='estimate-not-computed'" in page and "all 12 outputs are rated" in page
    run3 = _copy_run(client, ds)
    page = client.get("/report.html", params={"runs": f"{run2},{run3}"}).text
    assert "id='estimate" not in page and "id='judge-sensitivity'" not in page


def _cli(c: TestClient, *argv: str) -> int:
    from app import client as cli
    from app.cli import build_parser

    return cli._dispatch(c, build_parser().parse_args(list(argv)))  # type: ignore[arg-type]


def test_cli_commands(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    run = partly_rated(client)
    _judge_scores(client, run, JUDGE_A, "aaaa", A)
    _judge_scores(client, run, JUDGE_B, "bbbb", B)
    assert _cli(client, "estimate", str(run), "--target-width", "1.5") == 0
    out = capsys.readouterr().out
    exp = _expected_ppi(np.array(A))
    assert f"{exp['estimate']:.2f} [{exp['ci_low']:.2f}, {exp['ci_high']:.2f}]" in out
    assert "external.flat" in out and "near-constant" in out
    assert _cli(client, "estimate", str(run), "--format", "csv") == 0
    assert capsys.readouterr().out.startswith("run_id,")
    assert _cli(client, "judge-sensitivity", str(run), "--list") == 0
    listing = capsys.readouterr().out
    assert "judge-small" in listing and "judge-large" in listing
    assert _cli(client, "judge-sensitivity", str(run)) == 0
    out = capsys.readouterr().out
    r = sps.pearsonr(A[:RATED], H[:RATED]).statistic
    assert "ragas.faithfulness" in out and f"{r:.2f}" in out
