"""The main job on the embedded defaults: load the bundled demo study, score it offline, summarise it.

Idempotent: every step skips what is already stored (imports report "unchanged", jobs skip computed items).
Runs beside the serving API (`ragmeta run`), printing progress, then the URL and a short summary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.datasets import service as datasets
from services.datasets.repository import DatasetRepository
from services.datasets.schemas import DatasetCreate
from services.ingest import parse_rows
from services.jobs.queue import RUNNABLE
from services.jobs.service import JobRead, get_job, job_read
from services.jobs.worker import JobContext, Worker
from services.rag import service as rag
from services.ratings import service as ratings
from services.reports.honesty import ILLUSTRATIVE_NOTE, ILLUSTRATIVE_RATERS
from services.reports.schemas import ReportRead
from services.reports.trust_schemas import TrustRead
from services.resources import Resources
from services.runs import service as runs
from services.runs.repository import RunRepository
from services.runs.schemas import RunCreate, SystemConfig

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
DATASET = "demo-nebulis-fr"
# The three system versions of the demo, produced by the service itself, offline (three retrievers, one
# generator): enough runs for the system-level section of the pooled report.
RUNS = {
    "hybrid-extractive": SystemConfig(retriever="hybrid", k=5, generator="extractive"),
    "bm25-extractive": SystemConfig(retriever="bm25", k=5, generator="extractive"),
    "dense-extractive": SystemConfig(retriever="dense", k=5, generator="extractive"),
}
RATERS = ILLUSTRATIVE_RATERS
RATINGS_NOTE = ILLUSTRATIVE_NOTE
Say = Callable[[str], None]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _rows(path: Path) -> Any:
    return parse_rows(path.read_bytes(), "csv" if path.suffix == ".csv" else "jsonl", field=path.name)


def _drain(factory: sessionmaker[Session], settings: Settings, job_id: int, label: str, say: Say) -> None:
    # The job's loaded index, models and clients last for the job, not one batch.
    with closing(Resources.open(settings, session_factory=factory)) as resources:
        _drain_with(
            Worker(JobContext(factory, settings, resources), worker_id="demo"), factory, job_id, label, say
        )


def _drain_with(worker: Worker, factory: sessionmaker[Session], job_id: int, label: str, say: Say) -> None:
    last = -1.0

    def progress() -> JobRead:
        nonlocal last
        with factory() as s:
            j = job_read(s, get_job(s, job_id))
        if j.total and (j.done + j.failed) / j.total - last >= 0.1:
            last = (j.done + j.failed) / j.total
            say(f"  {label}: {j.done + j.failed}/{j.total}" + (f" ({j.failed} failed)" if j.failed else ""))
        return j

    while worker.run_once():
        progress()
    # The served API's workers (the demo prepares while the service already answers) may hold the last
    # batches: wait for them rather than stop at "nothing left to claim".
    j = progress()
    while j.status in RUNNABLE:
        time.sleep(0.5)
        j = progress()
    if j.status != "done":
        raise RuntimeError(f"{label} job {job_id} ended {j.status}")


def ensure_dataset(session: Session) -> int:
    existing = DatasetRepository(session).by_name(DATASET)
    if existing is None:
        read = datasets.create_dataset(
            session,
            DatasetCreate(name=DATASET, language="fr", description="Nébulis Télécom (fictional) demo study"),
        )
        dataset_id = read.id
    else:
        dataset_id = existing.id
    datasets.import_documents(session, dataset_id, _rows(DEMO_DIR / "documents.jsonl"))
    datasets.import_questions(session, dataset_id, _rows(DEMO_DIR / "questions.jsonl"))
    return dataset_id


def ensure_run(session: Session, dataset_id: int, name: str) -> int:
    run = RunRepository(session).by_name(dataset_id, name)
    meta = {"demo": True, "ratings_note": RATINGS_NOTE}
    if run is not None:
        run.meta = meta
        return run.id
    return runs.create_run(session, dataset_id, RunCreate(name=name, system=RUNS[name], metadata=meta)).id


def prepare(factory: sessionmaker[Session], settings: Settings, say: Say = _say) -> dict[str, Any]:
    """Load the demo, index it, produce (or import) its runs, import the ratings, score offline metrics."""
    t0 = time.perf_counter()
    with factory.begin() as s:
        dataset_id = ensure_dataset(s)
    say(f"demo dataset {DATASET!r} loaded (id {dataset_id})")
    with factory.begin() as s:
        job = rag.create_index_job(s, settings, dataset_id, force=False)
    if job.total:
        say("building the retrieval index (chunks, BM25, dense embeddings)...")
        _drain(factory, settings, job.id, "index", say)
    run_ids = {}
    for name in RUNS:
        with factory.begin() as s:
            run_ids[name] = ensure_run(s, dataset_id, name)
        shipped = DEMO_DIR / "runs" / f"{name}.jsonl"
        if shipped.exists():
            # The rated outputs are shipped so the ratings always describe exactly these answers.
            with factory.begin() as s:
                runs.import_outputs(s, run_ids[name], _rows(shipped), "native")
        else:
            with factory.begin() as s:
                generated = rag.create_generate_job(s, settings, run_ids[name], regenerate=False)
            _drain(factory, settings, generated.id, f"generate {name}", say)
        say(f"run {name!r}: outputs ready")
    with factory.begin() as s:
        ratings.create_raters(s, parse_rows(("name\n" + "\n".join(RATERS) + "\n").encode(), "csv"))
    for name, run_id in run_ids.items():
        path = DEMO_DIR / "ratings" / f"{name}.csv"
        if path.exists():
            with factory.begin() as s:
                ratings.import_ratings(s, run_id, _rows(path))
    say("illustrative ratings loaded (written for the demo; not study results)")
    from services.metrics.scoring import ScoringRequest, create_scoring_job

    for name, run_id in run_ids.items():
        with factory.begin() as s:
            scoring = create_scoring_job(s, settings, run_id, ScoringRequest())
        if scoring.total:
            n_metrics = len(scoring.params.metrics)
            say(f"scoring run {name!r} with every metric available offline ({n_metrics} metrics)")
            _drain(factory, settings, scoring.id, f"score {name}", say)
    say(f"demo ready in {time.perf_counter() - t0:.0f} s")
    return {"dataset_id": dataset_id, "runs": run_ids}


def summary(
    factory: sessionmaker[Session],
    settings: Settings,
    run_ids: dict[str, int],
    base_url: str,
    report: ReportRead | None = None,
) -> str:
    """A short text summary: metrics computed, agreement, the ceiling, warnings and the top metrics, of
    the runs' pooled ``report`` (computed here when not given)."""
    from services.reports.presentation import text
    from services.reports.service import build_report

    if report is None:
        with factory() as s:
            report = build_report(s, settings, list(run_ids.values()))
    n_rated = report.reference_score["n_with_reference"]
    lines = [f"Demo report ({len(run_ids)} runs pooled, {n_rated} rated outputs):"]
    if report.coverage:
        lines.append(f"  {report.coverage.summary}")
    res = report.agreement["result"] if report.agreement else None
    alpha: Mapping[str, Any] = (res["alpha"].get("ordinal") or {}) if res else {}
    if alpha.get("estimate") is not None:
        ci = text.interval(alpha.get("ci_low"), alpha.get("ci_high"))
        ceiling = (
            f"{report.human_ceiling:.2f}"
            if report.human_ceiling is not None
            else f"undefined ({report.human_ceiling_undefined_reason})"
        )
        lines.append(
            f"  inter-rater agreement: Krippendorff alpha (ordinal) {alpha['estimate']:.2f}"
            + (f" {ci}" if ci else "")
            + f"; human ceiling sqrt(ICC(A,k)) = {ceiling}"
        )
    for w in report.warnings:
        lines.append(f"  warning ({w.scope}): {w.message}")
    for analysis in report.analyses:
        top = [m for m in analysis.metrics if m.pearson.estimate is not None][:3]
        if not top:
            continue
        lines.append(f"  {analysis.id}. {analysis.title}: {analysis.verdict}")
        for m in top:
            lines.append(f"       {m.metric:<28} r = {text.corr(m.pearson, signed=True)}, n = {m.n}")
    lines += trust_lines(factory, settings, list(run_ids.values()))
    lines.append("  " + RATINGS_NOTE)
    ids = ",".join(map(str, run_ids.values()))
    lines.append(
        f"Report page ({len(run_ids)} runs pooled, with the system-level and pairwise sections): "
        f"{base_url}/report.html?runs={ids}"
    )
    lines.append(f"Landing page: {base_url}/   API docs: {base_url}/docs   Metrics: {base_url}/metrics")
    return "\n".join(lines)


TRUST_USES = MappingProxyType(
    {"item": "replace a rater", "ranking": "rank system versions", "gating": "gate at the threshold"}
)


def alt_test_line(trust: TrustRead) -> str:
    """The Alternative Annotator Test over the metrics: on how many it ran (raters, items), how many may
    replace the raters, and why it did not run on the others (the first reason)."""
    tests = [m.alt_test for m in trust.metrics]
    ran = [a for a in tests if a.omega is not None]
    line = f"  Alternative Annotator Test (epsilon = {trust.epsilon:g}): run on {len(ran)} of {len(tests)}"
    line += " metrics"
    if ran:
        raters, items = max(a.n_raters for a in ran), max(a.n_items for a in ran)
        replace = [m.metric for m in trust.metrics if m.alt_test.replace]
        line += (
            f" ({raters} raters, {items} outputs rated by 3 or more), may replace the raters: {len(replace)}"
        )
        if replace:
            line += f" ({', '.join(replace[:3])}{', ...' if len(replace) > 3 else ''})"
    not_run = next((a.undefined_reason for a in tests if a.omega is None and a.undefined_reason), None)
    if not_run:
        line += f"; not run on {len(tests) - len(ran)}, e.g.: {not_run}"
    return line


def trust_lines(factory: sessionmaker[Session], settings: Settings, run_ids: list[int]) -> list[str]:
    """The alt-test over the metrics, then one line per use of the trust analysis over the pooled runs: how
    many metrics qualify, and which."""
    from services.reports.trust import build_trust

    with factory() as s:
        trust = build_trust(s, settings, run_ids)
    lines = [alt_test_line(trust)]
    for use, what in TRUST_USES.items():
        verdicts = [(m.metric, v) for m in trust.metrics for v in m.verdicts if v.use == use]
        if not verdicts:
            lines.append(f"  may a metric {what}? no metric to judge ({trust.note or 'no metrics'})")
            continue
        yes = [name for name, v in verdicts if v.verdict == "yes"]
        no = sum(v.verdict == "no" for _, v in verdicts)
        pending = len(verdicts) - len(yes) - no
        line = f"  may a metric {what}? yes for {len(yes)}, no for {no}, not yet for {pending}"
        if yes:
            line += f" (yes: {', '.join(yes[:3])}{', ...' if len(yes) > 3 else ''})"
        else:
            name, first = next(((n, v) for n, v in verdicts if v.verdict == "not yet"), verdicts[0])
            line += f"; e.g. {name}: {first.reason}"
        lines.append(line)
    return lines


def export_outputs(factory: sessionmaker[Session], run_id: int, path: Path) -> int:
    """Write a run's outputs in the native import form (used to ship the demo's rated outputs)."""
    import json

    with factory() as s:
        outputs = runs.list_outputs(s, run_id).items
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for o in outputs:
            item = {
                "question_id": o.question_id,
                "answer": o.answer,
                "retrieved": [
                    {"document_id": c.document_id, "start": c.start, "end": c.end, "score": c.score}
                    for c in o.retrieved
                ],
                "generator": o.generator,
            }
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    return len(outputs)


if __name__ == "__main__":
    from services.db import ensure_migrated, make_engine, make_session_factory
    from services.offline import apply_offline_env

    apply_offline_env()
    st = Settings()
    eng = make_engine(st.database_url)
    ensure_migrated(eng, st.database_url, True)
    fac = make_session_factory(eng)
    info = prepare(fac, st)
    if sys.argv[1:] == ["--export"]:
        for run_name, rid in info["runs"].items():
            n = export_outputs(fac, rid, DEMO_DIR / "runs" / f"{run_name}.jsonl")
            print(f"exported {n} outputs of {run_name}")
