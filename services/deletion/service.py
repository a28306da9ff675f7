"""Undo: delete a dataset, a run, a rater's ratings on a run, an imported metric's scores on a run, or the
results of a job.

An entity that others depend on (a run with outputs, a dataset with documents...) is refused with Conflict
(409) listing its dependants, unless ``cascade`` is asked; then exactly those dependants go with it and
nothing else is touched (a rater, a rubric, the judge cache, other runs stay). Work under way is never cut
from under a worker: an entity with a queued or running job is refused even with ``cascade``.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from sqlalchemy.orm import Session

from services.datasets.repository import DatasetRepository
from services.deletion.repository import DeletionRepository
from services.errors import Conflict, InvalidItems, ItemError, NotFound
from services.jobs.repository import JobRepository
from services.models import Job, MetricScore, MetricScoreHistory, PairVerdict, Rating, RatingHistory
from services.runs.repository import RunRepository

if TYPE_CHECKING:
    from services.rag.index import IndexCache

ACTIVE = ("queued", "running")


class DeleteReport(BaseModel):
    deleted: str
    rows: dict[str, int]
    notes: list[str] = []


def _n(count: int, plural: str) -> str:
    if plural.startswith("ratings and scores"):
        return f"{count} {'rating or score' if count == 1 else plural} of earlier answers"
    return f"{count} {plural if count != 1 else plural.removesuffix('s')}"


def _refuse(what: str, dependants: dict[str, int]) -> Conflict:
    listed = {k: v for k, v in dependants.items() if v}
    return Conflict(
        f"{what} has {', '.join(_n(v, k) for k, v in listed.items())}: delete with ?cascade=true to remove "
        "them with it, nothing else",
        [ItemError(None, k, _n(v, k)) for k, v in listed.items()],
    )


def _jobs_of(repo: DeletionRepository, run_ids: set[int], dataset_id: int | None) -> list[Job]:
    out = []
    for job in repo.jobs():
        params = job.params or {}
        run = params.get("run_id")
        ds = params.get("dataset_id")
        if (isinstance(run, int) and run in run_ids) or (dataset_id is not None and ds == dataset_id):
            out.append(job)
    return out


def _no_active(jobs: list[Job], what: str) -> None:
    active = [j for j in jobs if j.status in ACTIVE]
    if active:
        j = active[0]
        raise Conflict(
            f"{what} has a {j.status} {j.kind} job (id {j.id}); wait for it to finish or cancel it "
            f"(POST /jobs/{j.id}/cancel) before deleting",
            [ItemError(None, "jobs", f"job {j.id} is {j.status}") for j in active],
        )


def _merge(total: Counter[str], rows: dict[str, int]) -> None:
    for k, v in rows.items():
        total[k] += v


def delete_dataset(session: Session, dataset_id: int, cascade: bool) -> DeleteReport:
    """Delete a dataset; with ``cascade`` also its documents, questions, passages, runs (outputs, chunks,
    ratings, scores), their jobs and its index state. Raises NotFound, Conflict. Its loaded index and its
    files are removed by ``remove_index`` once this transaction has committed (were they removed first and
    the commit failed, the dataset would stay with its index gone)."""
    repo = DeletionRepository(session)
    dataset = DatasetRepository(session).get(dataset_id)
    if dataset is None:
        raise NotFound(f"dataset {dataset_id} does not exist")
    run_ids = repo.run_ids_of(dataset_id)
    for rid in sorted(run_ids):  # in id order, as every writer locks runs, so no two deletes deadlock
        RunRepository(session).get_for_update(rid)
    jobs = _jobs_of(repo, run_ids, dataset_id)
    what = f"dataset {dataset_id} ({dataset.name!r})"
    _no_active(jobs, what)
    counts = repo.counts_of_dataset(dataset_id)
    outputs = repo.outputs_of_runs(repo.runs_of(dataset_id))
    counts["outputs"] = repo.count(outputs)
    counts["ratings"] = repo.count(repo.ratings_on(outputs))
    counts["metric scores"] = repo.count(repo.scores_on(outputs))
    counts["ratings and scores"] = repo.count(repo.retired_on(outputs))
    counts["jobs"] = len(jobs)
    if any(counts.values()) and not cascade:
        raise _refuse(what, counts)
    total: Counter[str] = Counter()
    _merge(total, repo.delete_outputs(outputs))
    _merge(total, repo.delete_jobs([j.id for j in jobs]))
    total["run"] += repo.delete_run_rows(repo.runs_of(dataset_id))
    _merge(total, repo.delete_dataset_rows(dataset_id))
    return DeleteReport(deleted=what, rows=dict(total), notes=[])


def remove_index(data_dir: Path | None, indexes: IndexCache | None, dataset_id: int) -> str | None:
    """Drop a deleted dataset's index from ``indexes`` (the loaded ones: its memory is freed, and a new
    dataset given the same id never finds it) and remove its files under ``data_dir``; the note to report,
    if there were files."""
    if indexes is not None:
        indexes.evict(dataset_id)
    if data_dir is None:
        return None
    return remove_index_files(data_dir, dataset_id)


def remove_index_files(data_dir: Path, dataset_id: int) -> str | None:
    """Remove a deleted dataset's index files; the note to report, if there were any."""
    directory = data_dir / "indexes" / str(dataset_id)
    if not directory.exists():
        return None
    shutil.rmtree(directory, ignore_errors=True)
    return f"index files removed ({directory})"


def delete_run(session: Session, run_id: int, cascade: bool) -> DeleteReport:
    """Delete a run; with ``cascade`` also its outputs (chunks, ratings, scores) and its jobs."""
    repo = DeletionRepository(session)
    run = RunRepository(session).get_for_update(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    jobs = _jobs_of(repo, {run_id}, None)
    what = f"run {run_id} ({run.name!r})"
    _no_active(jobs, what)
    outputs = repo.outputs_of_run(run_id)
    counts = {
        "outputs": repo.count(outputs),
        "ratings": repo.count(repo.ratings_on(outputs)),
        "metric scores": repo.count(repo.scores_on(outputs)),
        "ratings and scores": repo.count(repo.retired_on(outputs)),
        "jobs": len(jobs),
    }
    if any(counts.values()) and not cascade:
        raise _refuse(what, counts)
    total: Counter[str] = Counter()
    _merge(total, repo.delete_outputs(outputs))
    _merge(total, repo.delete_jobs([j.id for j in jobs]))
    total["run"] += repo.delete_run_rows(repo.run(run_id))
    return DeleteReport(deleted=what, rows=dict(total))


def delete_ratings(session: Session, run_id: int, rater: str) -> DeleteReport:
    """Delete one rater's ratings on one run, with those of earlier answers kept in history (the rater stays
    registered). Raises NotFound."""
    repo = DeletionRepository(session)
    if RunRepository(session).get_for_update(run_id) is None:
        raise NotFound(f"run {run_id} does not exist")
    who = repo.rater(rater)
    if who is None:
        raise NotFound(f"no rater named {rater!r}", [ItemError(None, "rater", "unknown")])
    ids = repo.ratings_of_rater(run_id, who.id)
    old = repo.ratings_of_rater(run_id, who.id, history=True)
    if not repo.count(ids) and not repo.count(old):
        raise NotFound(
            f"rater {rater!r} has no rating on run {run_id}", [ItemError(None, "rater", "no rating")]
        )
    rows = {"rating": repo.delete_ids(Rating, ids), "rating_history": repo.delete_ids(RatingHistory, old)}
    return DeleteReport(deleted=f"ratings of {rater!r} on run {run_id}", rows=rows)


def delete_scores(session: Session, run_id: int, metric: str) -> DeleteReport:
    """Delete an imported metric's scores (``external.*``) on one run. Raises NotFound, InvalidItems."""
    repo = DeletionRepository(session)
    if RunRepository(session).get_for_update(run_id) is None:
        raise NotFound(f"run {run_id} does not exist")
    if not metric.startswith("external."):
        raise InvalidItems(
            f"{metric!r} is computed by the service, not imported: its scores are replaced by a scoring job "
            "with recompute=true, or removed with the job's results (DELETE /jobs/{id}/results)",
            [ItemError(None, "metric", "not an imported (external.*) metric")],
        )
    ids = repo.scores_of_metric(run_id, metric)
    old = repo.scores_of_metric(run_id, metric, history=True)
    if not repo.count(ids) and not repo.count(old):
        raise NotFound(f"run {run_id} has no score of {metric!r}", [ItemError(None, "metric", "no score")])
    rows = {
        "metric_score": repo.delete_ids(MetricScore, ids),
        "metric_score_history": repo.delete_ids(MetricScoreHistory, old),
    }
    return DeleteReport(deleted=f"scores of {metric} on run {run_id}", rows=rows)


def delete_job_results(session: Session, job_id: int, cascade: bool) -> DeleteReport:
    """Delete what a job produced: a scoring job's metric scores; a pairwise judging job's verdicts (those it
    wrote last); a generation job's outputs (those still
    holding the generated answer), with ``cascade`` their ratings and scores too. The job record stays."""
    repo = DeletionRepository(session)
    job = JobRepository(session).get(job_id)
    if job is None:
        raise NotFound(f"job {job_id} does not exist")
    what = f"job {job_id} ({job.kind})"
    _no_active([job], what)
    params: dict[str, Any] = job.params or {}
    if job.kind == "scoring":
        rows = {
            "metric_score": repo.delete_ids(MetricScore, repo.scores_of_job(job_id)),
            "metric_score_history": repo.delete_ids(
                MetricScoreHistory, repo.scores_of_job(job_id, history=True)
            ),
        }
        return DeleteReport(deleted=f"results of {what}", rows=rows)
    if job.kind == "pair_judging":
        rows = {"pair_verdict": repo.delete_ids(PairVerdict, repo.verdicts_of_job(job_id))}
        return DeleteReport(deleted=f"results of {what}", rows=rows)
    if job.kind == "generate":
        keys = [int(k) for k in repo.job_keys(job_id) if k.isdigit()]
        outputs = repo.outputs_in(repo.generated_outputs(int(params.get("run_id", 0)), keys))
        counts = {
            "outputs": repo.count(outputs),
            "ratings": repo.count(repo.ratings_on(outputs)),
            "metric scores": repo.count(repo.scores_on(outputs)),
            "ratings and scores": repo.count(repo.retired_on(outputs)),
        }
        dependants = {k: v for k, v in counts.items() if k != "outputs"}
        if any(dependants.values()) and not cascade:
            raise _refuse(f"the output(s) of {what}", dependants)
        return DeleteReport(deleted=f"results of {what}", rows=repo.delete_outputs(outputs))
    raise InvalidItems(
        f"{what}: an index job's result is the dataset's search index, rebuilt by "
        "POST /datasets/{id}/index when the corpus changes; it is not deleted",
        [ItemError(None, "job", f"kind {job.kind}")],
    )
