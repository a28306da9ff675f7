"""The stability report's Markdown, CSV rows and page section, on a report built by hand: names from users
are HTML escaped in Markdown and on the page, every figure is a CSV row, and the unstable rule reads the
ICC against the documented threshold."""

from __future__ import annotations

from services.reports.stability import (
    FIGURES,
    STABILITY_CSV_HEADER,
    UNSTABLE_ICC_A1,
    CorrectedCorrelation,
    Figure,
    MetricStability,
    StabilityReport,
    _unstable,
    markdown,
    stability_rows,
    stability_section,
)
from services.stats import Interval

HOSTILE = "external.<img src=x onerror=alert(1)>|x"


def fig(estimate: float | None, low: float | None = None, high: float | None = None) -> Figure:
    method = "jackknife-t" if low is not None else None
    return Figure(estimate=estimate, ci_low=low, ci_high=high, ci_method=method)


def report() -> StabilityReport:
    corrected = CorrectedCorrelation(
        n_outputs=40, n_questions=40, raw_r=fig(0.5, 0.3, 0.65), rel_human=0.8, rel_metric=0.7,
        corrected_r=fig(0.67, 0.4, 0.9), capped=False, uncapped=0.67, rule="rule",
    )  # fmt: skip
    once = CorrectedCorrelation(
        n_outputs=40, n_questions=40, raw_r=fig(None), rel_human=None, rel_metric=None,
        corrected_r=fig(None), capped=False, uncapped=None, rule="rule",
        undefined_reason="one repeat only: score with repeats >= 2",
    )  # fmt: skip
    metrics = [
        MetricStability(
            metric=HOSTILE, repeats=3, n_outputs=40, n_questions=40, n_incomplete=0,
            icc_a1=fig(0.6, 0.45, 0.72), within_sd=fig(0.08, 0.06, 0.1),
            reliability_of_mean=fig(0.82, 0.71, 0.89), judge={"model": "<b>m</b>", "temperature": 0.7},
            corrected=corrected, unstable=True,
        ),
        MetricStability(
            metric="opik.once", repeats=1, n_outputs=40, n_questions=40, n_incomplete=0,
            icc_a1=fig(None), within_sd=fig(None), reliability_of_mean=fig(None), corrected=once,
            undefined_reason="one repeat only: score with repeats >= 2",
        ),
    ]  # fmt: skip
    return StabilityReport(run_id=7, n_raters=2, n_resamples=2000, seed=0, metrics=metrics, notes=["a note"])


def test_markdown_escapes_html_and_pipes_and_shows_the_intervals() -> None:
    md = markdown(report())
    assert "<img" not in md and "<b>" not in md
    assert "external.&lt;img src=x onerror=alert(1)&gt;\\|x" in md
    assert "| 3 | 40 | 0.60 [0.45, 0.72] | 0.080 [0.060, 0.100] | 0.82 [0.71, 0.89] |" in md
    assert "| yes |" in md
    assert "| opik.once | 1 | 40 | one repeat only: score with repeats &gt;= 2 |" in md


def test_csv_rows_are_one_per_metric_and_figure() -> None:
    rows = stability_rows(report())
    assert len(rows) == 2 * len(FIGURES)
    assert all(list(r) == list(STABILITY_CSV_HEADER) for r in rows)
    icc = next(r for r in rows if r["metric"] == HOSTILE and r["figure"] == "icc_a1")
    assert (icc["estimate"], icc["ci_low"], icc["ci_high"], icc["unstable"]) == (0.6, 0.45, 0.72, True)
    once = next(r for r in rows if r["metric"] == "opik.once" and r["figure"] == "corrected_r")
    assert once["estimate"] is None


def test_page_section_escapes_names_and_says_how_to_get_figures() -> None:
    page = stability_section(report())
    assert "<img" not in page and "&lt;img" in page and "&lt;b&gt;m&lt;/b&gt;" in page
    assert "0.60 [0.45, 0.72]" in page and "unstable" in page
    assert "one repeat only" in page
    assert stability_section(report().model_copy(update={"metrics": []})) == ""
    only_once = report().model_copy(update={"metrics": report().metrics[1:]})
    assert "asked once per output" in stability_section(only_once)
    assert "Not computed because no run" in stability_section(None, "no run")


def test_unstable_reads_the_estimate_and_the_upper_limit_against_the_threshold() -> None:
    t = UNSTABLE_ICC_A1
    assert _unstable(Interval(t - 0.01, t - 0.2, t + 0.1, "jackknife-t"), t) == (True, False)
    assert _unstable(Interval(t - 0.2, t - 0.3, t - 0.05, "jackknife-t"), t) == (True, True)
    assert _unstable(Interval(t + 0.01, t - 0.1, t + 0.1, "jackknife-t"), t) == (False, False)
    assert _unstable(Interval(t, None, None, None, "fewer than 3 questions"), t) == (False, None)
    assert _unstable(Interval(None, None, None, None, "undefined"), t) == (None, None)


def test_cli_text_names_an_unstable_judge() -> None:
    from app.cli import _stability_text

    out = _stability_text(report().model_dump(mode="json"))
    assert f"(unstable: below {UNSTABLE_ICC_A1})" in out
    assert "opik.once: 1 repeats on 40 outputs\n  one repeat only" in out
