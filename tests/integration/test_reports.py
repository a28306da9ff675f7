"""Agreement and correlation reports through the API, checked against the vectors of docs/statistics.md."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats as sps

R1 = [1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 2, 4]
R2 = [1, 1, 3, 3, 4, 4, 5, 5, 4, 2, 2, 3]
R3 = [1, 2, 3, 3, None, 4, 5, 4, 5, None, 1, 4]
A = [0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40]
B = [0.50, 0.45, 0.30, 0.60, 0.55, 0.40, 0.70, 0.65, 0.80, 0.35, 0.25, 0.75]


def study(client: TestClient, name: str = "d", raters: tuple[list[Any], ...] = (R1, R2)) -> tuple[int, int]:
    ds = client.post("/datasets", json={"name": name, "language": "en"}).json()["id"]
    text = "One two three four five six seven eight nine ten eleven twelve."
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "doc", "text": text}])
    qs = [
        {
            "external_id": f"q{i}",
            "question": f"Question {i}?",
            "reference_answer": f"answer {i}",
            "types": ["factual"] if i % 2 else ["procedural", "factual"],
        }
        for i in range(12)
    ]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    outs = [{"question_id": f"q{i}", "answer": f"answer {i}"} for i in range(12)]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    names = [f"rater{j + 1}" for j in range(len(raters))]
    client.post("/raters", json=[{"name": n} for n in names])
    ratings = [
        {"question_id": f"q{i}", "rater": n, "score": r[i]}
        for n, r in zip(names, raters, strict=True)
        for i in range(12)
        if r[i] is not None
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    scores = [{"question_id": f"q{i}", "metric": "external.a", "value": A[i]} for i in range(12)]
    scores += [{"question_id": f"q{i}", "metric": "external.b", "value": B[i]} for i in range(12)]
    scores += [
        {"question_id": f"q{i}", "metric": "external.flat", "value": 1.0 if i else 0.0} for i in range(12)
    ]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    return int(ds), int(run)


def test_agreement_matches_stats_md(client: TestClient) -> None:
    _, run = study(client)
    body = client.get(f"/runs/{run}/agreement").json()
    res = body["result"]
    assert res["alpha"]["ordinal"]["estimate"] == pytest.approx(0.8267493928354583)
    assert res["alpha"]["ordinal"]["ci_low"] < 0.8267 < res["alpha"]["ordinal"]["ci_high"]
    assert res["icc"]["ICC(A,1)"]["estimate"] == pytest.approx(0.8315098468271335)
    assert res["icc"]["ICC(A,k)"]["estimate"] == pytest.approx(0.908004778972521)
    assert res["kappa_quadratic"] == pytest.approx(0.8189655172413793)
    pair = res["pairs"][0]
    assert pair["pearson"]["estimate"] == pytest.approx(0.8236615821223187)
    assert (pair["exact_count"], pair["within_one"]) == (5, 1.0)
    assert res["attenuation_ceiling"] == pytest.approx(0.908004778972521**0.5)
    assert body["n_used"] == 12 and body["rubric"]["name"] == "default-1-5"


def test_third_rater_with_gaps(client: TestClient, settings: Any) -> None:
    _, run = study(client, raters=(R1, R2, R3))
    res = client.get(f"/runs/{run}/agreement").json()["result"]
    assert res["alpha"]["ordinal"]["estimate"] == pytest.approx(0.8535034394496881)
    assert res["kappa_quadratic"] is None and "exactly two raters" in res["kappa_undefined_reason"]
    assert res["icc_n_items_excluded"] == 2


def test_outputs_under_min_raters_are_excluded_and_counted(client: TestClient) -> None:
    _, run = study(client, raters=(R1, [r if i < 10 else None for i, r in enumerate(R2)]))
    body = client.get(f"/runs/{run}/agreement").json()
    assert (body["n_rated_outputs"], body["n_used"], body["n_excluded_under_min_raters"]) == (12, 10, 2)
    report = client.get(f"/runs/{run}/report").json()
    a = next(m for m in report["analyses"][0]["metrics"] if m["metric"] == "external.a")
    assert a["n"] == 10 and a["excluded"] == {"rated by fewer than 2 raters": 2}


def test_report_analysis_1_matches_stats_md(client: TestClient) -> None:
    _, run = study(client)
    report = client.get(f"/runs/{run}/report").json()
    a1 = report["analyses"][0]
    rows = {m["metric"]: m for m in a1["metrics"]}
    a, b = rows["external.a"], rows["external.b"]
    assert a["pearson"]["estimate"] == pytest.approx(0.7376021552990333)
    assert a["pearson"]["p_value"] == pytest.approx(0.0061809251010300015)
    assert (a["pearson"]["ci_low"], a["pearson"]["ci_high"]) == pytest.approx(
        (0.28386280656496277, 0.9214456349620657)
    )
    assert a["spearman"]["estimate"] == pytest.approx(0.7311173675983791)
    assert (a["spearman"]["ci_low"], a["spearman"]["ci_high"]) == pytest.approx(
        (0.2528809667645981, 0.9222324544367061)
    )
    assert a["kendall"]["estimate"] == pytest.approx(0.5117663157191589)
    assert b["pearson"]["estimate"] == pytest.approx(0.6235751994871385)
    assert a1["top"] == "external.a" and a["comparison"] is None
    # A and B are not distinguishable at n = 12 (Holm p 0.64): no "best" is named.
    assert a1["best"] is None and a1["top_group"] == ["external.a", "external.b"]
    assert a1["verdict"] == "no metric is distinguishable from the others at 95 %"
    comp = b["comparison"]
    assert comp["williams_t"] == pytest.approx(0.4910360221764093)
    assert comp["williams_p"] == pytest.approx(0.6351519788567549)
    assert comp["steiger_z"] == pytest.approx(0.4791040281835651)
    assert (comp["zou_low"], comp["zou_high"]) == pytest.approx((-0.3850283314391481, 0.6725785620423174))
    assert comp["indistinguishable_from_best"] is True
    assert "too small" in comp["note"]
    flat = rows["external.flat"]
    assert flat["pearson"]["estimate"] is None and "near-constant" in flat["pearson"]["undefined_reason"]
    assert report["human_ceiling"] == pytest.approx(0.908004778972521**0.5)
    # retrieval analyses say why they are empty instead of inventing numbers
    assert report["analyses"][1]["note"].startswith("ref.word_recall@5 is not computed")


def test_report_bca_records_seed_and_resamples(client: TestClient) -> None:
    _, run = study(client)
    report = client.get(f"/runs/{run}/report", params={"ci": "bca", "seed": 0, "n_resamples": 9999}).json()
    assert report["bootstrap"] == {"method": "BCa", "paired_by": "output", "seed": 0, "n_resamples": 9999}
    a = next(m for m in report["analyses"][0]["metrics"] if m["metric"] == "external.a")
    assert a["pearson"]["ci_method"] == "bca"
    # The report reads the BCa limits at the small-sample expanded level 2 Phi(sqrt(n/(n-1)) t_{n-1}) - 1
    # (Hesterberg 2015): scipy's BCa at that level, wider than the plain BCa vector (0.3766, 0.9050) of
    # docs/statistics.md.
    level = 2 * sps.norm.cdf(np.sqrt(12 / 11) * sps.t.ppf(0.975, 11)) - 1
    x, h = np.array(A, dtype=float), (np.array(R1, dtype=float) + np.array(R2, dtype=float)) / 2
    ref = sps.bootstrap(
        (x, h),
        lambda u, v: sps.pearsonr(u, v).statistic,
        paired=True,
        vectorized=False,
        method="BCa",
        n_resamples=9999,
        rng=np.random.default_rng(0),
        confidence_level=level,
    ).confidence_interval
    assert (a["pearson"]["ci_low"], a["pearson"]["ci_high"]) == (
        pytest.approx(ref.low, abs=1e-9),
        pytest.approx(ref.high, abs=1e-9),
    )
    assert ref.low < 0.3766 - 0.03 and ref.high > 0.9050
    assert "expanded for small samples" in report["interval_rule"]


def test_filters_and_type_breakdown(client: TestClient) -> None:
    _, run = study(client)
    report = client.get(f"/runs/{run}/report", params={"types": "procedural"}).json()
    assert report["reference_score"]["n_items"] == 6
    by_type = {t["type"]: t for t in report["by_type"]}
    assert set(by_type) == {"procedural", "factual"}
    full = client.get(f"/runs/{run}/report").json()
    by_type = {t["type"]: t for t in full["by_type"]}
    assert by_type["factual"]["n_items"] == 12 and by_type["procedural"]["n_items"] == 6
    assert (
        client.get(f"/runs/{run}/report", params={"answerable": "false"}).json()["reference_score"]["n_items"]
        == 0
    )


def test_csv_one_row_per_metric_and_analysis(client: TestClient) -> None:
    _, run = study(client)
    text = client.get(f"/runs/{run}/report", params={"format": "csv"}).text
    lines = text.splitlines()
    assert lines[0].startswith("analysis,reference,metric,library,kind,higher_is_better,n,")
    computed = [line for line in lines if ",computed," in line]
    assert len(computed) == 3  # three external metrics, all in analysis 1
    # ...and every catalogue metric, as not computed with its reason
    assert sum(",not computed," in line for line in lines) >= 38


def test_report_encoding_runs_off_the_event_loop(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON, CSV and Markdown encodings of a report are CPU work: never on the event loop's thread."""
    import asyncio

    import app.routers.reports as reports_router

    on_loop: list[bool] = []

    def spy(encode: Any) -> Any:
        def spied(*args: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append(True)
            except RuntimeError:
                on_loop.append(False)
            return encode(*args)

        return spied

    # JSON is encoded once per computed report (_json_body), CSV and Markdown on each request (_encode).
    monkeypatch.setattr(reports_router, "_encode", spy(reports_router._encode))
    monkeypatch.setattr(reports_router, "_json_body", spy(reports_router._json_body))
    _, run = study(client)
    for fmt in ("json", "csv", "md"):
        assert client.get(f"/runs/{run}/report", params={"format": fmt}).status_code == 200
    assert on_loop == [False, False, False]


def test_pooled_runs(client: TestClient) -> None:
    ds, run = study(client)
    run2 = client.post(f"/datasets/{ds}/runs", json={"name": "r2"}).json()["id"]
    client.post(f"/runs/{run2}/outputs", json=[{"question_id": f"q{i}", "answer": "x"} for i in range(12)])
    client.post(
        f"/runs/{run2}/ratings",
        json=[
            {"question_id": f"q{i}", "rater": r, "score": 3} for i in range(12) for r in ("rater1", "rater2")
        ],
    )
    client.post(
        f"/runs/{run2}/scores",
        json=[{"question_id": f"q{i}", "metric": "external.a", "value": i / 12} for i in range(12)],
    )
    report = client.get("/report", params={"runs": f"{run},{run2}"}).json()
    assert [r["id"] for r in report["runs"]] == [run, run2]
    assert report["reference_score"]["n_items"] == 24
    a = next(m for m in report["analyses"][0]["metrics"] if m["metric"] == "external.a")
    assert a["n"] == 24
    page = client.get("/report.html", params={"runs": f"{run},{run2}"})
    assert page.status_code == 200 and "n = 24" in page.text
    assert client.get("/").text.count(f"/report.html?runs={run},{run2}") == 1
    assert client.get("/report", params={"runs": "x"}).status_code == 422
    other = client.post("/datasets", json={"name": "other"}).json()["id"]
    run3 = client.post(f"/datasets/{other}/runs", json={"name": "z"}).json()["id"]
    assert client.get("/report", params={"runs": f"{run},{run3}"}).status_code == 422
    assert client.get("/report", params={"runs": "999"}).status_code == 404


def test_figure_and_html(client: TestClient) -> None:
    _, run = study(client)
    svg = client.get(f"/runs/{run}/report.svg")
    assert svg.headers["content-type"] == "image/svg+xml" and b"<svg" in svg.content
    png = client.get(f"/runs/{run}/report.png")
    assert png.headers["content-type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    page = client.get(f"/runs/{run}/report.html")
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "<script" not in html and "<svg" in html
    assert (
        "Krippendorff" in html
        and "external.a" in html
        and "not distinguishable from the highest at 95\u00a0%" in html
    )


def test_report_of_unrated_run_says_why(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "e"}).json()["id"]
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    report = client.get(f"/runs/{run}/report").json()
    assert report["agreement"]["undefined_reason"].startswith("agreement needs ratings")
    assert report["analyses"][0]["note"] == "no metric has a defined correlation in this analysis"
    assert client.get(f"/runs/{run}/report.png").status_code == 200


def test_a_deleted_run_has_no_report_even_when_one_was_cached(client: TestClient) -> None:
    ds = client.post("/datasets", json={"name": "gone", "language": "en"}).json()["id"]
    run = client.post(f"/datasets/{ds}/runs", json={"name": "empty"}).json()["id"]
    for path in (f"/runs/{run}/report", f"/runs/{run}/report.svg"):
        assert client.get(path).status_code == 200  # computed and cached
    assert client.delete(f"/runs/{run}").status_code == 200
    for path in (f"/runs/{run}/report", f"/runs/{run}/report.svg", f"/report?runs={run}"):
        assert client.get(path).status_code == 404, path
