"""How stable each judge metric of a run is (``GET /runs/{id}/stability``): test-retest over the judge
repeats a scoring job stored (``repeats = k``), and the metric-human correlation corrected for the noise of
both sides (services.stats.stability).

Per judge metric (a metric whose stored configuration names a judge), on the configuration a report uses:
the outputs x repeats matrix of its values, grouped by question for the intervals; the human side is the
raters x outputs matrix of the run's ratings. Outputs missing a repeat, or (for the corrected agreement) a
rating of one of the raters, are left out and counted. Failure modes: an unknown run is ``NotFound``; a
metric scored once per output has no figures, with the reason (score it with ``repeats >= 2``).

Also here: the report's CSV rows (``stability_rows``), Markdown (``markdown``) and the section of the run's
report page (``stability_section``), and ``judge_retest``, the test-retest figures alone (no bootstrap) for
other analyses that need to know whether a judge is stable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import ServiceError
from services.ratings.service import rating_table
from services.reports.pair_probes import (
    PairProbe,
    pair_probes,
    probe_markdown,
    probe_rows,
    probe_section,
)
from services.reports.presentation import text
from services.runs.repository import RunRepository
from services.runs.service import get_run
from services.scores.repository import ScoreRepository
from services.stats import Interval
from services.stats.stability import DISATTENUATION_RULE, corrected_agreement, retest

N_RESAMPLES = 2000
SEED = 0
# A judge metric whose ICC(A,1) across repeats is below this is called unstable: "moderate" or worse on the
# usual reading of an ICC (Koo & Li 2016: < 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, > 0.9 excellent).
# One asking of such a judge shares less than three quarters of its variance with another asking.
UNSTABLE_ICC_A1 = 0.75
UNSTABLE_RULE = (
    f"a judge metric is unstable when its ICC(A,1) across repeats is below {UNSTABLE_ICC_A1} (moderate or "
    f"worse, Koo & Li 2016); clearly so when the interval's upper limit is below it too"
)


class Figure(BaseModel):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = Field(
        description="jackknife-t: leave-one-question-out on a transformed scale (ICC on Fisher's intraclass "
        "z, SD on log SD); bca: a BCa bootstrap by question"
    )
    undefined_reason: str | None = None
    n_resamples_undefined: int = 0


class CorrectedCorrelation(BaseModel):
    n_outputs: int = Field(description="outputs with every repeat and a rating from every rater")
    n_questions: int
    raw_r: Figure = Field(description="Pearson r of the repeat mean with the mean rating")
    rel_human: float | None = Field(description="ICC(A,k) of the raters: the reliability of the mean rating")
    rel_metric: float | None = Field(description="Spearman-Brown reliability of the metric's repeat mean")
    corrected_r: Figure = Field(description="raw r disattenuated for both reliabilities, capped at 1")
    capped: bool = Field(description="the correction exceeded 1 and is shown as 1")
    uncapped: float | None
    rule: str
    undefined_reason: str | None = None


class MetricStability(BaseModel):
    metric: str
    repeats: int = Field(description="judge askings per output (the most any output has)")
    n_outputs: int = Field(description="outputs with every repeat scored")
    n_questions: int
    n_incomplete: int = Field(description="outputs left out: a repeat without a value")
    icc_a1: Figure = Field(description="ICC(A,1) across repeats: one asking's agreement with another")
    within_sd: Figure = Field(description="sqrt of the mean within-output variance of the repeats")
    reliability_of_mean: Figure = Field(description="Spearman-Brown: k r / (1 + (k - 1) r), r = ICC(A,1)")
    judge: dict[str, str | float | None] = Field(
        default_factory=dict, description="what the repeats were asked with (model, temperature, seed)"
    )
    corrected: CorrectedCorrelation
    unstable: bool | None = Field(
        default=None, description="ICC(A,1) below the threshold (``unstable_below``); None when undefined"
    )
    undefined_reason: str | None = None


class StabilityReport(BaseModel):
    run_id: int
    n_raters: int
    n_resamples: int
    seed: int
    metrics: list[MetricStability]
    rule: str = DISATTENUATION_RULE
    unstable_below: float = UNSTABLE_ICC_A1
    unstable_rule: str = UNSTABLE_RULE
    notes: list[str]
    pair_probes: list[PairProbe] = Field(
        default_factory=list,
        description="position and length probes of a pairwise judge, per pair of runs including this one "
        "that a pairwise judging job judged (POST /runs/{id}/pair-judging-jobs)",
    )


@dataclass(frozen=True, slots=True)
class JudgeRetest:
    """One judge metric's test-retest on some runs: ICC(A,1) across its repeats with the jackknife-t interval
    by question, and whether it is below ``threshold`` (None when the ICC is undefined: ``reason``)."""

    metric: str
    repeats: int
    n_outputs: int
    icc_a1: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    below_threshold: bool | None
    clearly_below: bool | None  # the interval's upper limit is below the threshold too
    reason: str | None


def _figure(interval: Interval) -> Figure:
    return Figure(
        estimate=interval.estimate,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        ci_method=interval.ci_method,
        undefined_reason=interval.undefined_reason,
        n_resamples_undefined=interval.n_resamples_undefined,
    )


def _judge_settings(details: dict[str, Any]) -> dict[str, str | float | None]:
    stated = details.get("judge_settings")
    if not isinstance(stated, dict):
        return {}
    return {str(k): v for k, v in stated.items() if v is None or isinstance(v, str | float | int)}


@dataclass(frozen=True, slots=True)
class _Repeats:
    x: np.ndarray  # outputs x repeats, NaN where a repeat has no value
    oids: list[int]
    groups: list[object]
    judge: dict[str, str | float | None]


def _repeat_matrices(session: Session, run_ids: Sequence[int]) -> dict[str, _Repeats]:
    """The outputs x repeats matrix of every judge metric of the runs, on the configuration a report uses."""
    repo = ScoreRepository(session)
    configs, _ = repo.reported_configs(run_ids)
    meta = repo.column_meta(run_ids, set(configs.items()))
    judged = {
        m: c for m, c in configs.items() if isinstance(meta.get((m, c), ({}, {}))[0].get("judge"), dict)
    }
    values: dict[str, dict[int, dict[int, float | None]]] = {}
    for oid, metric, repeat, value in repo.repeat_values(run_ids, judged):
        values.setdefault(metric, {}).setdefault(oid, {})[repeat] = value
    question = {oid: qid for oid, qid, _, _ in RunRepository(session).report_items(list(run_ids))}
    out: dict[str, _Repeats] = {}
    for metric in sorted(values):
        by_output = values[metric]
        oids = sorted(by_output)
        k = max(len(r) for r in by_output.values())
        x = np.full((len(oids), k), np.nan)
        for i, oid in enumerate(oids):
            for repeat, value in by_output[oid].items():
                if value is not None and repeat < k and math.isfinite(value):
                    x[i, repeat] = value
        groups: list[object] = [question.get(o, f"output {o}") for o in oids]
        judge = _judge_settings(meta.get((metric, judged[metric]), ({}, {}))[1])
        out[metric] = _Repeats(x, oids, groups, judge)
    return out


def _unstable(icc: Interval, threshold: float) -> tuple[bool | None, bool | None]:
    if icc.estimate is None:
        return None, None
    clearly = icc.ci_high < threshold if icc.ci_high is not None else None
    return icc.estimate < threshold, clearly


def judge_retest(
    session: Session, run_ids: Sequence[int], threshold: float = UNSTABLE_ICC_A1
) -> dict[str, JudgeRetest]:
    """Per judge metric of the runs (metric id -> figures): ICC(A,1) across its stored repeats with the
    jackknife-t interval by question, and whether it is below ``threshold`` (default ``UNSTABLE_ICC_A1``).
    Cheap (no bootstrap): one ANOVA per question left out. A metric scored once per output is listed with
    ``icc_a1`` None and the reason. Unknown run ids give an empty mapping; nothing raises for data."""
    out: dict[str, JudgeRetest] = {}
    for metric, rep in _repeat_matrices(session, run_ids).items():
        rt = retest(rep.x, rep.groups)
        below, clearly = _unstable(rt.icc_a1, threshold)
        out[metric] = JudgeRetest(
            metric=metric,
            repeats=rt.repeats,
            n_outputs=rt.n_outputs,
            icc_a1=rt.icc_a1.estimate,
            ci_low=rt.icc_a1.ci_low,
            ci_high=rt.icc_a1.ci_high,
            threshold=threshold,
            below_threshold=below,
            clearly_below=clearly,
            reason=rt.undefined_reason or rt.icc_a1.undefined_reason,
        )
    return out


def build_stability(
    session: Session, settings: Settings, run_id: int, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> StabilityReport:
    """The stability figures of every judge metric of a run. Raises NotFound for an unknown run."""
    get_run(session, run_id)
    table = rating_table(session, [run_id])
    raters = list(table.raters)
    out: list[MetricStability] = []
    for metric, rep in _repeat_matrices(session, [run_id]).items():
        x, groups, oids = rep.x, rep.groups, rep.oids
        k = x.shape[1]
        h = np.full((len(raters), len(oids)), np.nan)
        for j, oid in enumerate(oids):
            for i, rater in enumerate(raters):
                score = table.scores.get(oid, {}).get(rater)
                if score is not None:
                    h[i, j] = score
        rt = retest(x, groups)
        ca = corrected_agreement(x, h, groups, n_resamples, seed)
        corrected = CorrectedCorrelation(
            n_outputs=ca.n_outputs,
            n_questions=ca.n_questions,
            raw_r=_figure(ca.raw_r),
            rel_human=ca.rel_human,
            rel_metric=ca.rel_metric,
            corrected_r=_figure(ca.corrected_r),
            capped=ca.capped,
            uncapped=ca.uncapped,
            rule=ca.rule,
            undefined_reason=ca.undefined_reason,
        )
        out.append(
            MetricStability(
                metric=metric,
                repeats=k,
                n_outputs=rt.n_outputs,
                n_questions=rt.n_questions,
                n_incomplete=rt.n_incomplete,
                icc_a1=_figure(rt.icc_a1),
                within_sd=_figure(rt.within_sd),
                reliability_of_mean=_figure(rt.reliability_of_mean),
                judge=rep.judge,
                corrected=corrected,
                unstable=_unstable(rt.icc_a1, UNSTABLE_ICC_A1)[0],
                undefined_reason=rt.undefined_reason,
            )
        )
    notes = [
        "intervals by question: ICC(A,1), its Spearman-Brown reliability and the within-output SD by the "
        "jackknife-t (one question left out at a time, on Fisher's intraclass z and on log SD); raw and "
        "corrected r by a BCa bootstrap (questions drawn with replacement, all their outputs kept), "
        f"{n_resamples} resamples, seed {seed}, limits read at the small-sample expanded level "
        "2 Phi(sqrt(G/(G-1)) t(G-1)) - 1 for G questions",
        "reports use the mean of a metric's repeats; metrics without a judge are deterministic and have no "
        "repeats",
    ]
    if any(m.corrected.capped for m in out):
        notes.append(
            "a corrected r above 1 is shown as 1 (flagged `capped`): the reliabilities are estimates"
        )
    return StabilityReport(
        run_id=run_id,
        n_raters=len(raters),
        n_resamples=n_resamples,
        seed=seed,
        metrics=out,
        notes=notes,
        pair_probes=pair_probes(session, run_id),
    )


def stability(session: Session, settings: Settings, run_id: int) -> StabilityReport:
    """Entry point of the report workers (same shape as the other report functions)."""
    return build_stability(session, settings, run_id)


FIGURES = ("icc_a1", "within_sd", "reliability_of_mean", "raw_r", "corrected_r")


def _figures_of(m: MetricStability) -> dict[str, Figure]:
    return {
        "icc_a1": m.icc_a1,
        "within_sd": m.within_sd,
        "reliability_of_mean": m.reliability_of_mean,
        "raw_r": m.corrected.raw_r,
        "corrected_r": m.corrected.corrected_r,
    }


def stability_rows(report: StabilityReport) -> list[dict[str, Any]]:
    """One CSV row per judge metric x figure (``STABILITY_CSV_HEADER``)."""
    rows: list[dict[str, Any]] = []
    for m in report.metrics:
        for name, f in _figures_of(m).items():
            agreement = name in ("raw_r", "corrected_r")
            rows.append(
                {
                    "run_id": report.run_id,
                    "metric": m.metric,
                    "figure": name,
                    "estimate": f.estimate,
                    "ci_low": f.ci_low,
                    "ci_high": f.ci_high,
                    "ci_method": f.ci_method,
                    "repeats": m.repeats,
                    "n_outputs": m.corrected.n_outputs if agreement else m.n_outputs,
                    "n_questions": m.corrected.n_questions if agreement else m.n_questions,
                    "capped": m.corrected.capped if name == "corrected_r" else None,
                    "unstable": m.unstable if name == "icc_a1" else None,
                    "undefined_reason": f.undefined_reason,
                }
            )
    return rows + probe_rows(report.run_id, report.pair_probes)


STABILITY_CSV_HEADER = (
    "run_id", "metric", "figure", "estimate", "ci_low", "ci_high", "ci_method", "repeats", "n_outputs",
    "n_questions", "capped", "unstable", "undefined_reason",
)  # fmt: skip


def _fig(f: Figure, digits: int = 2) -> str:
    """`0.61 [0.45, 0.73]`, `0.61 (no interval: reason)` or `undefined (reason)`."""
    if f.estimate is None:
        return f"{text.UNDEFINED} ({f.undefined_reason})" if f.undefined_reason else text.UNDEFINED
    if f.ci_low is not None and f.ci_high is not None:
        return f"{text.num(f.estimate, digits)} [{text.num(f.ci_low, digits)}, {text.num(f.ci_high, digits)}]"
    return f"{text.num(f.estimate, digits)} (no interval: {f.undefined_reason or 'undefined'})"


def _judge_text(judge: dict[str, str | float | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in judge.items() if v is not None) or "judge settings not stated"


def _md(value: object) -> str:
    """A Markdown table cell: HTML escaped (renderers pass raw HTML through), pipes and newlines neutral."""
    return escape(str(value), quote=False).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def markdown(report: StabilityReport) -> str:
    """The stability report as Markdown, for a pull request or a wiki; every name is HTML escaped."""
    lines = [f"# How stable is the judge? (run {report.run_id})", ""]
    if not report.metrics:
        probes = probe_markdown(report.pair_probes, _md)
        return "\n".join([*lines, "No judge metric is scored on this run.", *probes, ""])
    lines += [
        f"{report.n_raters} raters. Reports use the mean of a metric's repeats.",
        "",
        "| metric | repeats | outputs | ICC(A,1) | within SD | reliability of k-mean | raw r | corrected r | "
        "unstable |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in report.metrics:
        if m.undefined_reason:
            lines.append(f"| {_md(m.metric)} | {m.repeats} | {m.n_outputs} | {_md(m.undefined_reason)} "
                         "| | | | | |")  # fmt: skip
            continue
        c = m.corrected
        corrected = _fig(c.corrected_r) + (" (capped)" if c.capped else "")
        unstable = {True: "yes", False: "no", None: "—"}[m.unstable]
        lines.append(
            f"| {_md(m.metric)} | {m.repeats} | {m.n_outputs} | {_md(_fig(m.icc_a1))} | "
            f"{_md(_fig(m.within_sd, 3))} | {_md(_fig(m.reliability_of_mean))} | {_md(_fig(c.raw_r))} | "
            f"{_md(corrected)} | {unstable} |"
        )
    lines += ["", "## Judge settings", ""]
    for m in report.metrics:
        lines.append(f"- {_md(m.metric)}: {_md(_judge_text(m.judge))}.")
    lines += ["", "## Rules", "", f"- {_md(report.rule)}.", f"- {_md(report.unstable_rule)}."]
    lines += [f"- {_md(n)}." for n in report.notes]
    lines += probe_markdown(report.pair_probes, _md)
    lines.append("")
    return "\n".join(lines)


def _sentence(value: str) -> str:
    return value[:1].upper() + value[1:]


def stability_section(report: StabilityReport | None, why: str | None = None) -> str:
    """The section of the run's report page; empty when the run has no judge metric."""
    head = "<h2 id='judge-stability'>Judge stability: the same judge asked again</h2>"
    if report is None:
        return (
            head
            + f"<p class='muted' id='stability-not-computed'>Not computed because {escape(why or '')}.</p>"
        )
    probes = probe_section(report.pair_probes)
    if not report.metrics:
        return head + probes if probes else ""
    repeated = [m for m in report.metrics if m.undefined_reason is None]
    if not repeated:
        names = ", ".join(m.metric for m in report.metrics)
        return (
            head
            + (
                "<p class='muted' id='stability-not-repeated'>Each judge metric "
                f"({escape(names)}) was asked once per output: score with <code>repeats</code> of 2 or more "
                "to measure how much one asking of the judge agrees with another.</p>"
            )
            + probes
        )
    parts = [
        head,
        "<p>A scoring job with <code>repeats = k</code> asks the judge k times per output; the report above "
        "uses the mean of the repeats. "
        "ICC(A,1): how far one asking agrees with another; corrected r: the raw r with the mean rating "
        "divided by √(reliability of the mean rating × reliability of the k-mean), capped at 1. "
        f"{escape(_sentence(report.unstable_rule))}.</p>",
        "<div class='wide'><table class='analysis' id='table-stability'><tr><th>metric</th><th>k</th>"
        "<th>n</th><th>ICC(A,1) [95% CI]</th><th>within SD</th><th>reliability of k-mean</th>"
        "<th>raw r</th><th>corrected r</th><th>stable?</th></tr>",
    ]
    for m in report.metrics:
        if m.undefined_reason:
            parts.append(
                f"<tr><td>{escape(m.metric)}</td><td>{m.repeats}</td><td>{m.n_outputs}</td>"
                f"<td colspan='6' class='muted'>{escape(m.undefined_reason)}</td></tr>"
            )
            continue
        c = m.corrected
        corrected = escape(_fig(c.corrected_r)) + (" <span class='warn'>capped</span>" if c.capped else "")
        stable = {True: "<span class='warn'>unstable</span>", False: "stable", None: "—"}[m.unstable]
        parts.append(
            f"<tr><td>{escape(m.metric)}</td><td>{m.repeats}</td><td>{m.n_outputs}</td>"
            f"<td>{escape(_fig(m.icc_a1))}</td><td>{escape(_fig(m.within_sd, 3))}</td>"
            f"<td>{escape(_fig(m.reliability_of_mean))}</td><td>{escape(_fig(c.raw_r))}</td>"
            f"<td>{corrected}</td><td>{stable}</td></tr>"
        )
    parts.append("</table></div>")
    parts.append(
        "<p class='muted' id='stability-judges'>Asked with: "
        + "; ".join(f"{escape(m.metric)}: {escape(_judge_text(m.judge))}" for m in repeated)
        + ".</p>"
    )
    parts.append(
        f"<p class='muted' id='stability-notes'>{escape(_sentence(report.rule))}. "
        + " ".join(escape(_sentence(n)) + "." for n in report.notes)
        + f" Also as <a href='/runs/{report.run_id}/stability'>JSON</a>, "
        f"<a href='/runs/{report.run_id}/stability?format=csv'>CSV</a>, "
        f"<a href='/runs/{report.run_id}/stability?format=md'>Markdown</a>.</p>"
    )
    parts.append(probes)
    return "".join(parts)


def page_section(session: Session, settings: Settings, run_id: int) -> str:
    """The judge-stability section of one run's report page (empty without a judge metric); what cannot be
    computed says why instead."""
    try:
        return stability_section(build_stability(session, settings, run_id))
    except ServiceError as exc:
        return stability_section(None, exc.detail)
