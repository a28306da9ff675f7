"""What every form of a report says it cannot conclude: metrics not computed and why, too few items, no `nan`,
no "best" when no metric is distinguishable from the top one; and a metric's per-item drill-down."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import client as cli
from services.metrics import registry
from services.reports.schemas import ReportRead
from tests.api.helpers import load_mini
from tests.api.test_outputs import make_run, native_outputs
from tests.integration.test_reports import study
from tests.integration.test_scoring import drain

JUDGE = [s.name for s in registry.CATALOGUE if s.needs_judge]
NAN = re.compile(r"\bnan\b|\binf\b", re.IGNORECASE)


class _Text(HTMLParser):
    """Visible text of a page (what a reader sees), without tags or attribute values."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._skip += tag in ("style", "script")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("style", "script")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible(html: str) -> str:
    p = _Text()
    p.feed(html)
    return " ".join(p.parts).replace("\u00a0", " ")


def svg_text(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S))


def cli_text(client: TestClient, path: str, params: dict[str, Any] | None = None) -> str:
    return cli.render_report(client.get(path, params=params).json())


def two_item_run(client: TestClient) -> int:
    ds = client.post("/datasets", json={"name": "two", "language": "en"}).json()["id"]
    client.post(f"/datasets/{ds}/documents", json=[{"external_id": "doc", "text": "One two three four."}])
    qs = [{"external_id": f"q{i}", "question": f"Q{i}?", "reference_answer": f"answer {i}"} for i in range(2)]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    run = client.post(f"/datasets/{ds}/runs", json={"name": "two-items"}).json()["id"]
    outs = [{"question_id": f"q{i}", "answer": f"answer {i}"} for i in range(2)]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    client.post("/raters", json=[{"name": "a"}, {"name": "b"}])
    ratings = [
        {"question_id": q, "rater": r, "score": s}
        for q, r, s in (("q0", "a", 2), ("q0", "b", 3), ("q1", "a", 4), ("q1", "b", 4))
    ]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    scores = [{"question_id": f"q{i}", "metric": "external.a", "value": v} for i, v in enumerate([0.2, 0.9])]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    return int(run)


def test_run_scored_without_a_judge_lists_every_judge_metric_as_not_computed(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    ratings = [
        {"question_id": q, "rater": r, "score": s}
        for q, r, s in (("q1", "a", 4), ("q1", "b", 5), ("q4", "a", 2), ("q4", "b", 2))
    ]
    client.post("/raters", json=[{"name": "a"}, {"name": "b"}])
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.bleu", "ref.word_recall"]})
    assert job.status_code == 202, job.text
    drain(client)
    report = client.get(f"/runs/{run}/report").json()
    ReportRead.model_validate(report)
    status = {s["metric"]: s for s in report["metric_status"]}
    assert set(JUDGE) <= set(status) and len(JUDGE) == 30
    for name in JUDGE:
        s = status[name]
        assert (s["status"], s["reason_code"]) == ("not_computed", "no_judge"), s
        assert s["reason"].startswith("no judge configured (set RAGMETA_JUDGE__BASE_URL")
    assert status["classic.bleu"]["status"] == "computed"
    assert status["classic.rouge_l"]["reason"].startswith("not requested")
    listed = {a["id"]: {nc["metric"]: nc["reason"] for nc in a["not_computed"]} for a in report["analyses"]}
    for name in JUDGE:
        spec = registry.BY_NAME[name]
        for aid in [2, 3] if spec.kind == "retrieval" else [1]:
            assert "no judge configured" in listed[aid][name], (aid, name)
    assert report["coverage"]["summary"].startswith("2 of 38 metrics computed; 30 need an LLM judge (set ")
    page = visible(client.get(f"/runs/{run}/report.html").text)
    assert "2 of 38 metrics computed; 30 need an LLM judge" in page
    for name in JUDGE:
        assert name in page
    assert page.count("no judge configured (set RAGMETA_JUDGE__BASE_URL") == 3  # one group per analysis
    md = client.get(f"/runs/{run}/report", params={"format": "md"}).text
    assert all(f"`{name}`" in md for name in JUDGE)
    svg = svg_text(client.get(f"/runs/{run}/report.svg").text)
    assert "no LLM judge configured" in svg and "RAGChecker: 9 metrics" in svg


def test_metric_failing_on_every_item_is_not_computed_with_causes(client: TestClient, session: Any) -> None:
    from services.models import MetricScore

    _, run = study(client)
    output_ids = [o["id"] for o in client.get(f"/runs/{run}/outputs").json()]
    for i, oid in enumerate(output_ids):
        cause = "timeout" if i < 8 else "malformed judge output"
        session.add(
            MetricScore(output_id=oid, metric="classic.bleu", config_key="x", error=f"{cause}: details")
        )
    session.commit()
    report = client.get(f"/runs/{run}/report").json()
    bleu = next(s for s in report["metric_status"] if s["metric"] == "classic.bleu")
    assert bleu["status"] == "not_computed" and bleu["reason_code"] == "failed"
    assert bleu["reason"] == "failed on 12 of 12 items: timeout (8), malformed judge output (4)"
    a1 = report["analyses"][0]
    assert "classic.bleu" not in {m["metric"] for m in a1["metrics"]}
    assert {nc["metric"]: nc["reason"] for nc in a1["not_computed"]}["classic.bleu"] == bleu["reason"]


def test_two_item_run_warns_and_prints_no_nan(client: TestClient) -> None:
    run = two_item_run(client)
    report = client.get(f"/runs/{run}/report").json()
    warnings = {w["scope"]: w for w in report["warnings"]}
    assert warnings["analysis 1"]["code"] == "small_sample"
    assert warnings["analysis 1"]["n"] == 2 and warnings["analysis 1"]["n_needed"] == 30
    assert "about 30 are needed" in warnings["analysis 1"]["message"]
    assert warnings["agreement"]["n"] == 2
    assert report["human_ceiling"] is None and report["human_ceiling_undefined_reason"]
    json_text = client.get(f"/runs/{run}/report").text
    csv_text = client.get(f"/runs/{run}/report", params={"format": "csv"}).text
    md = client.get(f"/runs/{run}/report", params={"format": "md"}).text
    page = client.get(f"/runs/{run}/report.html").text
    svg = client.get(f"/runs/{run}/report.svg").text
    text = cli_text(client, f"/runs/{run}/report")
    for form, body in {
        "json": json_text,
        "csv": csv_text,
        "markdown": md,
        "html": visible(page),
        "svg": svg_text(svg),
        "cli": text,
    }.items():
        assert not NAN.search(body), (form, NAN.search(body))
    assert "too few items for any correlation" in visible(page)
    # each undefined row says why once, across the coefficient columns, not three times side by side
    rows = page.split("id='table-1'", 1)[1].split("</table>", 1)[0].split("<tr")[2:]
    assert rows and all(r.count("fewer than 3 complete pairs") == 1 and "colspan='4'" in r for r in rows)
    assert "too few items for any correlation" in svg_text(svg)
    assert "WARNING (analysis 1): n = 2: too few items" in text
    assert "Human ceiling √ICC(A,k): undefined: fewer than 3 items" in text


def test_tie_prints_no_best(client: TestClient) -> None:
    _, run = study(client)
    # external.c is external.a exactly: the two cannot be told apart (Δr 0, Holm p 1).
    a = [0.35, 0.20, 0.60, 0.45, 0.30, 0.75, 0.55, 0.90, 0.65, 0.50, 0.15, 0.40]
    scores = [{"question_id": f"q{i}", "metric": "external.c", "value": a[i]} for i in range(12)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    report = client.get(f"/runs/{run}/report").json()
    a1 = report["analyses"][0]
    assert a1["best"] is None and a1["top"] in ("external.a", "external.c")
    assert a1["verdict"] == "no metric is distinguishable from the others at 95 %"
    forms = {
        "html": visible(client.get(f"/runs/{run}/report.html").text),
        "markdown": client.get(f"/runs/{run}/report", params={"format": "md"}).text,
        "svg": svg_text(client.get(f"/runs/{run}/report.svg").text),
        "cli": cli_text(client, f"/runs/{run}/report"),
    }
    for form, body in forms.items():
        assert not re.search(r"\bbest\b", body, re.IGNORECASE), (
            form,
            re.findall(r".{40}\bbest\b.{20}", body),
        )
        assert "no metric is distinguishable from the others at 95 %" in body, form


def test_best_is_named_when_distinguishable(client: TestClient) -> None:
    _, run = study(client)
    # A metric unrelated to the raters: the top metric is distinguishable from it.
    noise = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4, 0.5, 0.5, 0.95, 0.05]
    human = [
        (x + y) / 2
        for x, y in zip(
            [1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 2, 4], [1, 1, 3, 3, 4, 4, 5, 5, 4, 2, 2, 3], strict=True
        )
    ]
    noise = [n - h for n, h in zip(noise, human, strict=True)]
    scores = [{"question_id": f"q{i}", "metric": "external.noise", "value": noise[i]} for i in range(12)]
    assert client.post(f"/runs/{run}/scores", json=scores).status_code == 200
    report = client.get(f"/runs/{run}/report").json()
    a1 = report["analyses"][0]
    rows = {m["metric"]: m for m in a1["metrics"]}
    assert rows["external.noise"]["comparison"]["indistinguishable_from_best"] is False
    assert a1["best"] == "external.a" and a1["verdict"].startswith("best: external.a")
    assert "external.b" in a1["top_group"] and "external.noise" not in a1["top_group"]
    assert "worse than the best at 95 %" in cli_text(client, f"/runs/{run}/report")


def test_metric_drill_down_lists_largest_disagreements_first(client: TestClient) -> None:
    _, run = study(client)
    body = client.get(f"/runs/{run}/metrics/external.b/items").json()
    assert body["n"] == 12 and len(body["items"]) == 12
    gaps = [abs(i["disagreement"]) for i in body["items"]]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > 0
    first = body["items"][0]
    assert first["disagreement"] == pytest.approx(first["metric_percentile"] - first["human_percentile"])
    assert body["pearson"]["estimate"] == pytest.approx(0.6235751994871385)
    page = client.get(f"/runs/{run}/report.html").text
    assert f"/runs/{run}/metrics/external.b/items.html" in page
    items_page = client.get(f"/runs/{run}/metrics/external.b/items.html")
    assert items_page.status_code == 200
    assert visible(items_page.text).index(first["question"]) < visible(items_page.text).index(
        body["items"][-1]["question"]
    )
    missing = client.get(f"/runs/{run}/metrics/classic.nope/items")
    assert missing.status_code == 404 and missing.json()["error"] == "NotFound"


def test_ci_outside_the_domain_is_clipped_with_the_reason() -> None:
    from services.reports.honesty import finish
    from services.reports.schemas import Analysis, Corr, MetricRow

    def corr(lo: float, hi: float) -> Corr:
        return Corr(estimate=0.9, ci_low=lo, ci_high=hi, p_value=float("nan"), ci_method="bca")

    row = MetricRow(
        metric="external.x",
        library="external",
        kind="overall",
        higher_is_better=True,
        n=4,
        excluded={},
        pearson=corr(-1.3, 1.2),
        spearman=corr(0.1, 0.95),
        kendall=corr(0.1, 0.95),
        oriented_r=0.9,
    )
    report = ReportRead(
        dataset_id=1,
        runs=[],
        notes=[],
        filters={"k": 5, "types": [], "answerable": None, "ci": "auto", "pass_threshold": None},
        reference_score={
            "method": "mean",
            "min_raters": 2,
            "n_items": 0,
            "n_with_reference": 0,
            "n_without": {},
        },
        agreement=None,
        human_ceiling=float("nan"),
        analyses=[Analysis(id=1, title="t", reference="h", metrics=[row], best="external.x")],
        by_type=[],
    )
    finish(report)
    p = row.pearson
    assert (p.ci_low, p.ci_high, p.p_value) == (-1.0, 1.0, None)
    assert p.ci_clipped is not None and "[-1.300, 1.200]" in p.ci_clipped
    assert row.spearman.ci_clipped is None
    assert report.human_ceiling is None
    assert {w.code for w in report.warnings} >= {"small_sample", "ci_clipped"}
    assert report.analyses[0].best is None and report.analyses[0].verdict.startswith("only external.x")


def test_a_run_rated_with_the_demo_ratings_says_they_are_illustrative(client: TestClient) -> None:
    from services.reports.honesty import ILLUSTRATIVE_NOTE, ILLUSTRATIVE_RATERS

    _, run = study(client, name="mine")
    assert client.get(f"/runs/{run}/report").json()["notes"] == []
    client.post("/raters", json=[{"name": n} for n in ILLUSTRATIVE_RATERS])
    ratings = [{"question_id": f"q{i}", "rater": ILLUSTRATIVE_RATERS[0], "score": 3} for i in range(12)]
    assert client.post(f"/runs/{run}/ratings", json=ratings).status_code == 200
    assert client.get(f"/runs/{run}/report").json()["notes"] == [ILLUSTRATIVE_NOTE]
    assert ILLUSTRATIVE_NOTE in visible(client.get(f"/runs/{run}/report.html").text)


def test_terminal_text_says_why_an_undefined_row_has_so_few_items() -> None:
    from services.reports.presentation.text import render_text
    from services.reports.schemas import Analysis, Corr, MetricRow

    undefined = Corr(
        estimate=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        ci_method=None,
        undefined_reason="fewer than 3 complete pairs (n = 0)",
    )
    row = MetricRow(
        metric="ref.doc_recall@5",
        library="ref",
        kind="retrieval",
        higher_is_better=True,
        n=0,
        excluded={"the question has no reference passage": 2},
        pearson=undefined,
        spearman=undefined,
        kendall=undefined,
        oriented_r=None,
    )
    report = ReportRead(
        dataset_id=1,
        runs=[],
        notes=[],
        filters={"k": 5, "types": [], "answerable": None, "ci": "auto", "pass_threshold": None},
        reference_score={
            "method": "mean",
            "min_raters": 2,
            "n_items": 2,
            "n_with_reference": 2,
            "n_without": {},
        },
        agreement=None,
        human_ceiling=None,
        analyses=[Analysis(id=2, title="t", reference="r", metrics=[row], best=None)],
        by_type=[],
    )
    line = next(x for x in render_text(report).splitlines() if "ref.doc_recall@5" in x)
    assert line.endswith("n = 0; excluded: the question has no reference passage: 2"), line
