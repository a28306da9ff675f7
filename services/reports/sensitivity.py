"""Judge sensitivity: the same judge metrics scored on the same outputs under two judge configurations.

The store keeps them apart already: a score row is keyed by (output, metric, config key) and the config key
hashes the metric's whole configuration, whose ``judge`` part is the judge fingerprint (model, endpoint,
language, prompt language, library version, output checks). A *judge configuration* here is the triple the
user chooses (model, endpoint, language); scores of one metric under one configuration but several config
keys (a library upgraded, output checks revised) are taken from the latest key, the same rule the report
uses. The report itself shows, per metric, the latest configuration scored; ``GET
/runs/{id}/judge-configurations`` says which one that is.

Per metric shared by the two configurations, on the rated outputs both scored: Pearson, Spearman and Kendall
with the human score under each, the difference of the two (oriented: positive = configuration a agrees
better) with Zou's interval (Williams' t for Pearson, the Fieller z-test for the rank coefficients:
dependent correlations sharing the human variable, ``stats.compare_correlations``), and how the two
configurations' scores agree with each other on every output both scored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from services import stats
from services.config import Settings
from services.errors import InvalidItems, ItemError
from services.reports.data import Column, gather
from services.reports.data import judge_fingerprint as fingerprint
from services.reports.estimate_schemas import (
    CoefficientDifference,
    ConfigAgreement,
    JudgeConfiguration,
    JudgeConfigurations,
    JudgeSensitivity,
    SensitivityRow,
)
from services.reports.schemas import Corr, ReportWarning
from services.reports.service import _higher_is_better, _library_kind, corr_of
from services.runs.service import get_run
from services.scores.repository import ScoreRepository

METHODS = ("pearson", "spearman", "kendall")
MIN_PAIRED = 10  # below this many paired rated outputs the report's small-sample warning applies
RULE = (
    "A judge configuration is (model, endpoint, language) as recorded in each judge score's configuration. "
    "Reports use, per metric, the latest configuration scored; the others stay stored and are compared here."
)


@dataclass
class _Config:
    id: str
    judge: dict[str, Any]
    latest: datetime | None = None
    n_scores: int = 0
    # metric -> (config key, its latest update)
    keys: dict[str, tuple[str, datetime]] = field(default_factory=dict)


def _configurations(session: Session, run_id: int) -> tuple[dict[str, _Config], list[tuple[Any, ...]]]:
    repo = ScoreRepository(session)
    cells = repo.report_cells([run_id])
    keys = {(metric, ckey) for _, metric, ckey, *_ in cells}
    meta = repo.column_meta([run_id], keys)
    configs: dict[str, _Config] = {}
    judged: dict[tuple[str, str], str] = {}
    for (metric, ckey), (config, _) in meta.items():
        judge = (config or {}).get("judge")
        if isinstance(judge, dict):
            fid = judged[(metric, ckey)] = fingerprint(judge)
            configs.setdefault(fid, _Config(fid, judge))
    for _, metric, ckey, at, value, *_ in cells:
        found = judged.get((metric, ckey))
        if found is None:
            continue
        cfg = configs[found]
        cfg.n_scores += value is not None
        cfg.latest = at if cfg.latest is None or at > cfg.latest else cfg.latest
        prev = cfg.keys.get(metric)
        if prev is None or at > prev[1]:
            cfg.keys[metric] = (ckey, at)
    return configs, cells


def _reported(cells: list[tuple[Any, ...]]) -> dict[str, str]:
    """metric -> the config key the report uses (the latest scored: services.reports.data.gather)."""
    latest: dict[str, tuple[str, datetime]] = {}
    for _, metric, ckey, at, *_ in cells:
        prev = latest.get(metric)
        if prev is None or at > prev[1]:
            latest[metric] = (ckey, at)
    return {m: c for m, (c, _) in latest.items()}


def _read(cfg: _Config, reported: dict[str, str]) -> JudgeConfiguration:
    return JudgeConfiguration(
        id=cfg.id,
        model=cfg.judge.get("model"),
        endpoint=cfg.judge.get("endpoint"),
        language=cfg.judge.get("language"),
        metrics=sorted(cfg.keys),
        n_scores=cfg.n_scores,
        latest_at=cfg.latest.isoformat() if cfg.latest else "",
        reported=sorted(m for m, (ckey, _) in cfg.keys.items() if reported.get(m) == ckey),
    )


def judge_configurations(session: Session, settings: Settings, run_id: int) -> JudgeConfigurations:
    """The judge configurations with scores on the run, oldest first. Raises NotFound for an unknown run."""
    get_run(session, run_id)
    configs, cells = _configurations(session, run_id)
    reported = _reported(cells)
    ordered = sorted(configs.values(), key=lambda c: (c.latest or datetime.min, c.id))
    return JudgeConfigurations(run_id=run_id, configurations=[_read(c, reported) for c in ordered], rule=RULE)


def _choose(configs: dict[str, _Config], a: str | None, b: str | None) -> tuple[_Config, _Config]:
    ordered = sorted(configs.values(), key=lambda c: (c.latest or datetime.min, c.id))
    known = ", ".join(f"{c.id} ({c.judge.get('model')}, {c.judge.get('language')})" for c in ordered)
    if len(configs) < 2:
        reason = (
            "the run has no judge scores"
            if not configs
            else f"the run has judge scores of one configuration only ({known}): score it again under "
            "another judge model, endpoint or language"
        )
        raise InvalidItems("judge sensitivity needs two judge configurations", [ItemError(None, "b", reason)])
    for name, value in (("a", a), ("b", b)):
        if value is not None and value not in configs:
            raise InvalidItems(
                "unknown judge configuration",
                [ItemError(None, name, f"{value!r} is not a configuration of this run; known: {known}")],
            )
    if a is None and b is None:
        if len(configs) > 2:
            raise InvalidItems(
                "the run has more than two judge configurations: choose two",
                [ItemError(None, "a", f"give a= and b= among {known}")],
            )
        return ordered[0], ordered[1]
    if a is None or b is None:
        given, missing = ("a", "b") if a is not None else ("b", "a")
        raise InvalidItems(
            "give both configurations", [ItemError(None, missing, f"{given}= is given, {missing}= is not")]
        )
    if a == b:
        raise InvalidItems("compare two different configurations", [ItemError(None, "b", "same as a")])
    return configs[a], configs[b]


def _values(cells: list[tuple[Any, ...]], metric: str, ckey: str) -> dict[int, float]:
    return {
        oid: float(value)
        for oid, m, c, _, value, *_ in cells
        if m == metric and c == ckey and value is not None
    }


def _corr(x: np.ndarray, y: np.ndarray, method: str) -> Corr:
    return corr_of(stats.correlation(x, y, method))  # type: ignore[arg-type]


def _agreement(va: dict[int, float], vb: dict[int, float]) -> ConfigAgreement:
    from scipy import stats as sps

    both = sorted(set(va) & set(vb))
    a = np.array([va[o] for o in both], dtype=np.float64)
    b = np.array([vb[o] for o in both], dtype=np.float64)
    out = ConfigAgreement(
        n=len(both),
        pearson=_corr(a, b, "pearson"),
        spearman=_corr(a, b, "spearman"),
        mean_difference=None,
    )
    if len(both) < 2:
        out.undefined_reason = f"{len(both)} output(s) scored under both configurations"
        return out
    d = b - a
    out.mean_difference = float(d.mean())
    out.mean_abs_difference = float(np.abs(d).mean())
    sd = float(d.std(ddof=1))
    half = float(sps.t.ppf(0.975, d.size - 1)) * sd / math.sqrt(d.size)
    out.mean_difference_ci_low, out.mean_difference_ci_high = (
        out.mean_difference - half,
        out.mean_difference + half,
    )
    return out


def _difference(method: str, a: np.ndarray, b: np.ndarray, h: np.ndarray) -> CoefficientDifference:
    comp = stats.compare_correlations(a, b, h, method=method, n_resamples=0)  # type: ignore[arg-type]
    out = CoefficientDifference(
        method=method,
        difference=comp.difference,
        ci_low=None,
        ci_high=None,
        ci_method=None,
        p_value=None,
        p_method=None,
        undefined_reason=comp.undefined_reason or comp.analytic_undefined_reason,
    )
    if out.undefined_reason is None:
        out.ci_low, out.ci_high, out.ci_method = comp.zou_low, comp.zou_high, "zou"
        test = comp.williams if method == "pearson" else comp.rank_z
        if test is not None:
            out.p_value, out.p_method = test.p_value, ("williams" if method == "pearson" else "fieller-z")
    return out


def _row(
    col: Column,
    human: dict[int, float],
    va: dict[int, float],
    vb: dict[int, float],
    questions: dict[int, str],
) -> SensitivityRow:
    hib = _higher_is_better(col)
    sign = 1.0 if hib else -1.0
    paired = sorted(o for o in human if o in va and o in vb)
    a = np.array([va[o] for o in paired], dtype=np.float64)
    b = np.array([vb[o] for o in paired], dtype=np.float64)
    h = np.array([human[o] for o in paired], dtype=np.float64)
    row = SensitivityRow(
        metric=col.metric,
        library=_library_kind(col)[0],
        higher_is_better=hib,
        n=len(paired),
        n_questions=len({questions[o] for o in paired}),
        a={m: _corr(a, h, m) for m in METHODS},
        b={m: _corr(b, h, m) for m in METHODS},
        differences=[_difference(m, sign * a, sign * b, h) for m in METHODS],
        agreement=_agreement(va, vb),
    )
    if len(paired) < 4:
        row.undefined_reason = f"{len(paired)} rated output(s) scored under both configurations; at least 4"
    return row


def build_sensitivity(
    session: Session, settings: Settings, run_id: int, *, a: str | None = None, b: str | None = None
) -> JudgeSensitivity:
    """Per judge metric scored under both configurations: correlation with the humans under each, the paired
    difference, and the agreement of the two configurations' scores. Raises NotFound for an unknown run,
    InvalidItems naming ``a``/``b`` for an unknown, missing or single configuration or none in common, and
    naming ``ratings`` when the run has no rated output."""
    get_run(session, run_id)
    configs, cells = _configurations(session, run_id)
    ca, cb = _choose(configs, a, b)
    shared = sorted(set(ca.keys) & set(cb.keys))
    if not shared:
        raise InvalidItems(
            "the two configurations have no judge metric in common",
            [ItemError(None, "b", f"a scored {sorted(ca.keys)}, b scored {sorted(cb.keys)}")],
        )
    data = gather(session, [run_id], settings.ratings.reference, settings.ratings.min_raters)
    human = {it.output_id: it.human for it in data.items if it.human is not None}
    if not human:
        raise InvalidItems(
            "judge sensitivity compares agreement with the raters: the run needs ratings",
            [ItemError(None, "ratings", "the run has no output with a human reference score")],
        )
    questions = {it.output_id: it.question_id for it in data.items}
    rows = []
    for metric in shared:
        va = _values(cells, metric, ca.keys[metric][0])
        vb = _values(cells, metric, cb.keys[metric][0])
        col = data.columns.get(metric) or Column(metric, metric, ca.keys[metric][0])
        rows.append(_row(col, human, va, vb, questions))
    for i in range(len(METHODS)):
        diffs = [r.differences[i] for r in rows]
        for d, p in zip(diffs, stats.adjust_p_values([d.p_value for d in diffs], "holm"), strict=True):
            d.holm_p = p
    reported = _reported(cells)
    warnings = [
        ReportWarning(
            code="small_sample",
            scope=r.metric,
            message=f"{r.n} paired rated outputs: intervals of the difference are wide and may not hold "
            f"below {MIN_PAIRED}",
            n=r.n,
            n_needed=MIN_PAIRED,
        )
        for r in rows
        if r.n < MIN_PAIRED
    ]
    return JudgeSensitivity(
        run_id=run_id,
        a=_read(ca, reported),
        b=_read(cb, reported),
        n_rated=len(human),
        metrics=rows,
        only_in_a=sorted(set(ca.keys) - set(cb.keys)),
        only_in_b=sorted(set(cb.keys) - set(ca.keys)),
        method=(
            "Paired on the rated outputs both configurations scored. Correlations: Fisher (Pearson), "
            "Fieller (Spearman), Fieller with the tie factor (Kendall). Difference a - b of the oriented "
            "coefficients "
            "(positive: a agrees better with the raters): Zou's interval for two dependent correlations "
            "sharing the human score, with Williams' t (Pearson) or the Fieller z-test (Spearman, Kendall); "
            "holm_p adjusts p over the metrics compared, per coefficient. Agreement of the two "
            "configurations' scores: on every output both scored, Pearson "
            "and Spearman with their intervals, mean difference b - a with its t interval. " + RULE
        ),
        warnings=warnings,
    )


def sensitivity_rows(res: JudgeSensitivity) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for r in res.metrics:
        row: dict[str, object] = {
            "metric": r.metric,
            "config_a": res.a.id,
            "config_b": res.b.id,
            "n": r.n,
            "undefined_reason": r.undefined_reason or "",
        }
        for m in METHODS:
            row[f"{m}_a"] = r.a[m].estimate
            row[f"{m}_a_ci_low"], row[f"{m}_a_ci_high"] = r.a[m].ci_low, r.a[m].ci_high
            row[f"{m}_b"] = r.b[m].estimate
            row[f"{m}_b_ci_low"], row[f"{m}_b_ci_high"] = r.b[m].ci_low, r.b[m].ci_high
        for d in r.differences:
            row[f"{d.method}_diff"] = d.difference
            row[f"{d.method}_diff_ci_low"], row[f"{d.method}_diff_ci_high"] = d.ci_low, d.ci_high
            row[f"{d.method}_diff_p"] = d.p_value
            row[f"{d.method}_diff_holm_p"] = d.holm_p
        ag = r.agreement
        row.update(
            {
                "agreement_n": ag.n,
                "agreement_pearson": ag.pearson.estimate,
                "agreement_pearson_ci_low": ag.pearson.ci_low,
                "agreement_pearson_ci_high": ag.pearson.ci_high,
                "agreement_spearman": ag.spearman.estimate,
                "mean_difference_b_minus_a": ag.mean_difference,
                "mean_difference_ci_low": ag.mean_difference_ci_low,
                "mean_difference_ci_high": ag.mean_difference_ci_high,
                "mean_abs_difference": ag.mean_abs_difference,
            }
        )
        out.append(row)
    return out
