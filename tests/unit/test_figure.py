"""The report figure on reports built by hand: its x range comes from the data (0 and the human ceiling always
visible, no half-width spent on negatives nobody has), the legend names libraries as their users know them,
the best metric and the indistinguishable group are marked, the SVG scales to its container and every format
is what its name says."""

from __future__ import annotations

import re

import pytest

from services.reports.presentation import figure
from services.reports.schemas import Analysis, Corr, MetricRow, NotComputed, ReportRead, RunInfo


def corr(e: float | None, lo: float | None, hi: float | None) -> Corr:
    return Corr(estimate=e, ci_low=lo, ci_high=hi, p_value=0.01, ci_method="fisher")


def row(name: str, e: float, lo: float, hi: float) -> MetricRow:
    c = corr(e, lo, hi)
    return MetricRow(
        metric=name,
        library=name.split(".", 1)[0],
        kind="overall",
        higher_is_better=True,
        n=40,
        excluded={},
        pearson=c,
        spearman=c,
        kendall=c,
        oriented_r=e,
    )


def analysis(rows: list[MetricRow], best: str | None, group: list[str]) -> Analysis:
    return Analysis(
        id=1,
        title="Overall metrics vs the human reference",
        reference="human",
        metrics=rows,
        best=best,
        top=rows[0].metric,
        top_group=group,
        verdict=f"best: {best}" if best else "no metric is distinguishable from the others at 95 %",
    )


def report(a: Analysis, ceiling: float | None = 0.93) -> ReportRead:
    return ReportRead(
        dataset_id=1,
        runs=[RunInfo(id=1, name="r", notes=[])],
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
        human_ceiling=ceiling,
        analyses=[a],
        by_type=[],
    )


ROWS = [
    row("ragas.faithfulness", 0.70, 0.50, 0.83),
    row("ref.word_recall@5", 0.40, 0.10, 0.62),
    row("classic.bleu", 0.30, 0.05, 0.55),
]


def svg_texts(svg: bytes) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode("utf-8"))


def test_x_range_from_the_data_keeps_zero_and_the_ceiling_visible() -> None:
    lo, hi = figure._x_range([analysis(ROWS, None, [])], 0.93)
    # positive data: the axis starts just left of 0 instead of at -1
    assert -0.1 < lo < 0 and 0.93 < hi <= 1.0
    negative = [row("classic.bleu", -0.2, -0.6, 0.2)]
    lo, hi = figure._x_range([analysis(negative, None, [])], 0.5)
    assert lo < -0.6 and hi > 0.5  # the whole interval and the ceiling
    lo, hi = figure._x_range([analysis([row("classic.bleu", 0.95, 0.9, 0.99)], None, [])], None)
    assert lo < 0 and hi >= 0.99  # 0 stays visible however far the data are from it
    lo, hi = figure._x_range([analysis([row("classic.bleu", 0.97, 0.93, 1.0)], None, [])], 1.0)
    assert -0.1 < lo < 0 and hi > 1.0  # a ceiling or interval end at 1 is not drawn on the frame
    lo, hi = figure._x_range([], None)
    assert lo < 0 and hi > 1.0  # nothing to place: 0 to 1


def test_legend_names_libraries_and_marks_best_and_indistinguishable_group() -> None:
    svg = figure.render(
        report(analysis(ROWS, "ragas.faithfulness", ["ragas.faithfulness", "ref.word_recall@5"]))
    )
    texts = svg_texts(svg)
    assert {"Ragas", "classical", "reference", "best metric"} <= set(texts)
    assert "human ceiling √ICC(A,k) = 0.93" in texts
    assert "not distinguishable from the top metric (95 %)" in texts
    assert not any("classic /" in t or t in ("ref", "classic") for t in texts)
    # the best metric's label is bold, the others are not
    labels = re.findall(
        r'<text style="([^"]*)"[^>]*>(ragas\.faithfulness|classic\.bleu)</text>', svg.decode()
    )
    assert {name: "font-weight: 700" in style for style, name in labels} == {
        "ragas.faithfulness": True,
        "classic.bleu": False,
    }
    # the indistinguishable group is shaded behind its two rows (one band per row, inside the axes)
    bands = re.findall(rf'clip-path="[^"]*" style="fill: {figure.GROUP_COLOUR}"', svg.decode())
    assert len(bands) == 2


def test_no_best_marker_when_no_metric_is_distinguishable() -> None:
    svg = figure.render(report(analysis(ROWS, None, [m.metric for m in ROWS])))
    texts = svg_texts(svg)
    assert "best metric" not in texts
    assert not any(re.search(r"\bbest\b", t) for t in texts)
    assert "Verdict: no metric is distinguishable from the others at 95 %" in texts


def test_svg_scales_to_its_container() -> None:
    svg = figure.render(report(analysis(ROWS, None, []))).decode("utf-8")
    root = svg[svg.index("<svg") : svg.index(">", svg.index("<svg"))]
    assert (
        'width="100%"' in root and "height=" not in root and re.search(r'viewBox="0 0 [\d.]+ [\d.]+"', root)
    )


@pytest.mark.parametrize(
    ("fmt", "magic"), [("svg", b"<?xml"), ("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-")]
)
def test_each_format_is_what_its_name_says(fmt: figure.Format, magic: bytes) -> None:
    assert figure.render(report(analysis(ROWS, None, [])), fmt).startswith(magic)


def test_rows_without_a_point_and_the_legend() -> None:
    undefined = row("external.x", 0.0, 0.0, 0.0)
    undefined.pearson = Corr(
        estimate=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        ci_method=None,
        undefined_reason="fewer than 3 complete pairs (n = 2)",
    )
    a = analysis([*ROWS, undefined], None, [])
    a.not_computed = [
        NotComputed(
            metric=f"deepeval.{m}",
            library="deepeval",
            kind="overall",
            reason="no judge",
            reason_code="no_judge",
        )
        for m in ("faithfulness", "hallucination")
    ]
    svg = figure.render(report(a)).decode("utf-8")
    texts = svg_texts(svg.encode())
    assert "undefined: fewer than 3 complete pairs (n = 2)" in texts
    assert (
        "DeepEval: 2 metrics" in texts
        and "not computed (no LLM judge configured): faithfulness, hallucination" in texts
    )
    # the legend explains the colours drawn: no entry for a library without a point
    assert "Ragas" in texts and "DeepEval" not in texts and "external" not in texts
    # the undefined row and the not-computed group are adjacent: one band over the grid and the zero line
    bands = re.findall(rf'clip-path="[^"]*" style="fill: {figure.EMPTY_ROW_COLOUR}"', svg)
    assert len(bands) == 1
