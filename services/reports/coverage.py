"""Which metrics a report covers: every catalogue metric asked for or known to the runs is listed, computed
ones with their statistics elsewhere in the report, the others as "not computed" with the reason (no judge
configured, unavailable here, not requested, not scored yet, failed on k of n items with the causes)."""

from __future__ import annotations

from collections import Counter

from sqlalchemy.orm import Session

from services.config import Settings
from services.jobs.repository import JobRepository
from services.metrics import registry
from services.reports.data import Column, Item
from services.reports.schemas import Coverage, MetricStatus

_ANALYSES = {"retrieval": [2, 3], "overall": [1], "generation": [1]}


def _k_of(metric: str) -> int | None:
    _, sep, k = metric.partition("@")
    return int(k) if sep and k.isdigit() else None


def _failures(col: Column, item_ids: set[int]) -> Counter[str]:
    return Counter(
        why.removeprefix("error: ")
        for oid, why in col.missing.items()
        if oid in item_ids and why.startswith("error:")
    )


def _causes_text(causes: Counter[str]) -> str:
    return ", ".join(f"{cause} ({n})" for cause, n in causes.most_common())


def metric_status(
    session: Session,
    settings: Settings,
    run_ids: list[int],
    items: list[Item],
    columns: dict[str, Column],
    k: int,
) -> tuple[list[MetricStatus], Coverage]:
    """One status per catalogue metric, plus the external scores the runs carry, and the summary line."""
    item_ids = {it.output_id for it in items}
    by_base: dict[str, Column] = {}
    for column in columns.values():
        if _k_of(column.metric) in (None, k):
            by_base[column.metric.partition("@")[0]] = column
    requested: dict[str, tuple[int, str]] = {}
    for job in JobRepository(session).scoring_jobs_of_runs(run_ids):
        for name in (job.params or {}).get("metrics") or []:
            requested.setdefault(str(name).partition("@")[0], (job.id, job.status))
    out: list[MetricStatus] = []
    names = [s.name for s in registry.CATALOGUE] + sorted(n for n in by_base if n not in registry.BY_NAME)
    for name in names:
        spec = registry.BY_NAME.get(name)
        library = spec.library if spec else name.split(".")[0]
        kind = spec.kind if spec else "overall"
        col: Column | None = by_base.get(name)
        n_scored = sum(1 for oid in col.values if oid in item_ids) if col else 0
        causes = _failures(col, item_ids) if col else Counter()
        n_failed = sum(causes.values())
        status = MetricStatus(
            metric=name,
            library=library,
            kind=kind,
            needs_judge=bool(spec and spec.needs_judge),
            status="computed",
            reason_code="computed",
            reason=None,
            n_scored=n_scored,
            n_failed=n_failed,
            failure_causes=dict(causes),
            analyses=_ANALYSES.get(kind, [1]),
        )
        if col is not None and n_scored:
            if n_failed:
                status.reason = f"failed on {n_failed} of {n_scored + n_failed} items: {_causes_text(causes)}"
        elif col is not None and n_failed:
            status.status, status.reason_code = "not_computed", "failed"
            status.reason = f"failed on {n_failed} of {n_failed} items: {_causes_text(causes)}"
        elif col is not None:
            # Scored, but undefined on every item (e.g. recall of questions without passages): the
            # analysis row says why; it is not hidden.
            pass
        else:
            status.status = "not_computed"
            ok, why = registry.availability(spec, settings) if spec else (True, None)
            if not ok and spec is not None and spec.needs_judge and not settings.judge.configured:
                status.reason_code, status.reason = "no_judge", why
            elif not ok:
                status.reason_code, status.reason = "unavailable", why
            elif name in requested:
                job_id, job_status = requested[name]
                status.reason_code = "pending"
                status.reason = f"requested by scoring job {job_id} ({job_status}); no score stored yet"
            else:
                status.reason_code = "not_requested"
                status.reason = "not requested: no scoring job of these runs asked for it"
        out.append(status)
    return out, _coverage(out)


def _coverage(statuses: list[MetricStatus]) -> Coverage:
    counts: Counter[str] = Counter(s.reason_code for s in statuses)
    computed = counts.pop("computed", 0)
    phrases = {
        "no_judge": "need an LLM judge (set RAGMETA_JUDGE__BASE_URL and RAGMETA_JUDGE__MODEL)",
        "unavailable": "are unavailable here",
        "not_requested": "were not requested",
        "pending": "are not scored yet",
        "failed": "failed on every item",
    }
    parts = [f"{computed} of {len(statuses)} metrics computed"]
    parts += [f"{counts[code]} {phrase}" for code, phrase in phrases.items() if counts.get(code)]
    return Coverage(
        n_metrics=len(statuses), n_computed=computed, by_reason=dict(counts), summary="; ".join(parts)
    )
