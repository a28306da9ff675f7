"""Scoring jobs: every requested metric on every output of a run, each score stored as soon as computed.

Items are ``"<metric full name>|<output id>"``. Creating a job skips scores already computed under the same
configuration (same config key) unless ``recompute``; a score in error is always computed again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.config import Settings
from services.datasets.service import get_dataset
from services.errors import InvalidItems, ItemError
from services.jobs.service import JobRead, create_job, job_read
from services.jobs.worker import JobContext
from services.metrics import registry
from services.metrics.base import MetricAdapter, SampleScore
from services.metrics.samples import build_samples
from services.models import Job, MetricScore
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.scores.repository import ScoreRepository


class ScoringRequest(BaseModel):
    metrics: list[str] | None = Field(
        default=None,
        description="metric names (library.metric[:variant][@k]); all available ones when omitted",
    )
    k: int = Field(default=5, ge=1, le=100, description="top k retrieved chunks, recorded with each score")
    recompute: bool = Field(default=False, strict=True, description="compute again scores already stored")
    refresh_judge_cache: bool = Field(
        default=False,
        strict=True,
        description="ask the judge again instead of reusing its cached answers (after malformed output)",
    )


def config_key(full_name: str, config: dict[str, Any]) -> str:
    blob = json.dumps({"metric": full_name, **config}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _adapters(
    resolved: list[registry.Resolved], settings: Settings, language: str
) -> dict[str, MetricAdapter]:
    return {r.full_name: registry.load_adapter(r, settings, language) for r in resolved}


def create_scoring_job(session: Session, settings: Settings, run_id: int, request: ScoringRequest) -> JobRead:
    """Plan a scoring job. Fails (InvalidItems) on unknown or unavailable metrics, naming each one."""
    run = get_run(session, run_id)
    dataset = get_dataset(session, run.dataset_id)
    if request.metrics is None:
        names = [s.name for s in registry.CATALOGUE if registry.availability(s, settings)[0]]
    else:
        names = request.metrics
    resolved = registry.resolve_all(names, request.k)
    errors = []
    for i, r in enumerate(resolved):
        ok, why = registry.availability(r.spec, settings)
        if not ok:
            errors.append(ItemError(None, f"metrics[{i}]", f"{r.full_name} is unavailable: {why}"))
    if errors:
        raise InvalidItems("some requested metrics cannot run here", errors)
    outputs = [o.id for o in RunRepository(session).outputs(run_id)]
    adapters = _adapters(resolved, settings, dataset.language)
    keys: list[str] = []
    skipped = 0
    configs = {}
    repo = ScoreRepository(session)
    for name, adapter in adapters.items():
        ckey = config_key(name, adapter.config())
        configs[name] = ckey
        existing = {} if request.recompute else repo.existing(outputs, name, ckey)
        for oid in outputs:
            prev = existing.get(oid)
            if prev is not None and prev.error is None:
                skipped += 1
                continue
            keys.append(f"{name}|{oid}")
    params = {
        "run_id": run_id,
        "metrics": list(adapters),
        "k": request.k,
        "recompute": request.recompute,
        "refresh_judge_cache": request.refresh_judge_cache,
    }
    summary = {"skipped_already_computed": skipped, "outputs": len(outputs), "config_keys": configs}
    return job_read(session, create_job(session, "scoring", params, keys, summary))


def _store(
    session: Session,
    job: Job,
    name: str,
    ckey: str,
    config: dict[str, Any],
    k: int | None,
    oid: int,
    res: SampleScore,
) -> None:
    repo = ScoreRepository(session)
    score = repo.existing([oid], name, ckey).get(oid)
    if score is None:
        score = MetricScore(output_id=oid, metric=name, config_key=ckey)
        repo.add(score)
    score.config, score.k, score.value = config, k, res.value
    score.reason, score.error, score.details = res.reason, res.error, res.details
    score.tokens, score.latency_ms, score.job_id = res.tokens, res.latency_ms, job.id


class ScoringHandler:
    batch_size = 64

    def process(self, ctx: JobContext, job: Job, keys: list[str]) -> dict[str, str | None]:
        by_metric: dict[str, list[int]] = defaultdict(list)
        for key in keys:
            name, _, output_id = key.rpartition("|")
            by_metric[name].append(int(output_id))
        outcome: dict[str, str | None] = {}
        with ctx.read_factory() as session:
            run = get_run(session, int(job.params["run_id"]))
            language = get_dataset(session, run.dataset_id).language
        for name, oids in by_metric.items():
            resolved = registry.resolve(name, int(job.params.get("k", 5)))
            adapter = registry.load_adapter(resolved, ctx.settings, language)
            # Judge adapters account their calls per job and metric (and may skip the judge cache).
            adapter.bind_job(job.id, bool(job.params.get("refresh_judge_cache")))
            config = adapter.config()
            ckey = config_key(name, config)
            # Samples are read, then scored with no transaction open (judge calls take seconds).
            with ctx.read_factory() as session:
                samples = build_samples(session, oids, resolved.k)
                versions = RunRepository(session).output_versions(oids)
            present = [oid for oid in oids if oid in samples]
            t0 = time.perf_counter()
            try:
                results = asyncio.run(adapter.score([samples[o] for o in present]))
            except Exception as exc:  # a library failing on the whole batch: every item gets the error
                err = f"exception: {type(exc).__name__}: {exc}"[:2000]
                results = [SampleScore(error=err) for _ in present]
            per_item_ms = (time.perf_counter() - t0) * 1000 / max(len(present), 1)
            # Each metric's scores are stored in one short write transaction as soon as they exist.
            with ctx.session_factory() as session:
                lock_run(session, int(job.params["run_id"]))
                # An output re-imported with a new answer while it was being scored: the score describes
                # the old answer and is not stored (its item fails with the reason; a new job scores it).
                current = RunRepository(session).output_versions(present)
                for oid, res in zip(present, results, strict=True):
                    if current.get(oid) != versions.get(oid):
                        outcome[f"{name}|{oid}"] = (
                            "stale: the output's answer changed while it was scored; score the run again"
                        )
                        continue
                    if res.latency_ms is None:
                        res.latency_ms = per_item_ms
                    k = resolved.k if resolved.spec.uses_k else None
                    _store(session, job, name, ckey, config, k, oid, res)
                    outcome[f"{name}|{oid}"] = res.error
                for oid in set(oids) - set(present):
                    outcome[f"{name}|{oid}"] = "missing: the output was deleted"
                usage = adapter.judge_usage()
                if usage is not None:
                    stored = session.get(Job, job.id)
                    if stored is not None:
                        judge_usage = dict((stored.summary or {}).get("judge_usage", {}))
                        judge_usage[name] = usage
                        stored.summary = {**(stored.summary or {}), "judge_usage": judge_usage}
                session.commit()
        return outcome
