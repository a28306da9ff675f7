"""Scoring jobs: every requested metric on every output of a run, each batch's scores stored together.

Items are ``"<metric full name>|<output id>"``, output by output (all metrics of an output, then the next), so
that a batch holds every metric of its outputs and scores them all at once (``services.metrics.batch``).
Creating a job skips scores already computed under the same configuration (same config key) unless
``recompute``; a score in error is always computed again.

``repeats = k`` asks the judge k independent times per (judge metric, output): items of repeat i > 0 are
``"<metric>|<output id>|<i>"``, their samples carry the repeat (so the judge gateway keys their requests
apart, and re-running the job reads each repeat's own cached answers), and each repeat is its own score row
(``metric_score.repeat``). Metrics without a judge are deterministic and are scored once whatever k is.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.config import Settings
from services.datasets.service import get_dataset
from services.errors import InvalidItems, ItemError
from services.jobs.processes import job_workers
from services.jobs.registry import JobContext
from services.jobs.repository import JobRepository
from services.jobs.service import create_job, job_read, typed
from services.jobs.worker import even_batches
from services.judge.gateway import Usage
from services.metrics import registry
from services.metrics.base import MetricAdapter, SampleScore
from services.metrics.batch import BatchResult, MetricWork, batch_context, score_batch
from services.metrics.context import ScoringContext
from services.metrics.memo import Candidate, keys_for, memo_key, memoizable
from services.metrics.memo import entry as memo_entry
from services.metrics.memo import lookup as memo_lookup
from services.metrics.memo import store as store_memo
from services.metrics.resources import ScoringResources
from services.metrics.samples import build_samples
from services.metrics.schemas import ScoringJobRead
from services.models import Job
from services.retrieval.segment import WordRule
from services.runs.repository import RunRepository
from services.runs.service import get_run, lock_run
from services.scores.repository import ScoreRepository
from services.types import Int


class ScoringRequest(BaseModel):
    metrics: list[str] | None = Field(
        default=None,
        description="metric names (library.metric[:variant][@k]); all available ones when omitted",
    )
    k: Int = Field(default=5, ge=1, le=100, description="top k retrieved chunks, recorded with each score")
    word_rule: WordRule = Field(
        default="joined",
        description=(
            "what a word is for the word-level reference metrics (ref.word_recall, ref.word_precision), "
            "recorded in each score's configuration: 'joined' joins runs across one apostrophe or hyphen "
            "(' \u2019 - \u2010 \u2011: \"royalty-free\" and \"you're\" are one word each); 'w_runs' "
            "makes every run of \\w characters a word, as re.findall(r'\\w+') does (two words each)"
        ),
    )
    recompute: bool = Field(default=False, strict=True, description="compute again scores already stored")
    refresh_judge_cache: bool = Field(
        default=False,
        strict=True,
        description="ask the judge again instead of reusing its cached answers (after malformed output)",
    )
    repeats: Int = Field(
        default=1,
        ge=1,
        le=10,
        description=(
            "independent judge askings per (judge metric, output), each stored with its repeat index "
            "(0..repeats-1) and cached apart; reports use their mean. Metrics without a judge are "
            "deterministic and are scored once"
        ),
    )


def item_key(name: str, output_id: int, repeat: int = 0) -> str:
    return f"{name}|{output_id}" if repeat == 0 else f"{name}|{output_id}|{repeat}"


def parse_item(key: str) -> tuple[str, int, int]:
    """(metric full name, output id, repeat) of a job item."""
    name, output_id, *rest = key.split("|")
    return name, int(output_id), int(rest[0]) if rest else 0


def judge_settings(settings: Settings) -> dict[str, Any]:
    """What a repeat is asked with: the endpoint sets no seed (so repeats are as independent as the
    judge's sampling at that temperature makes them)."""
    return {"model": settings.judge.model, "temperature": settings.judge.temperature, "seed": None}


def config_key(full_name: str, config: dict[str, Any]) -> str:
    blob = json.dumps({"metric": full_name, **config}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _adapters(resolved: list[registry.Resolved]) -> dict[str, tuple[registry.Resolved, MetricAdapter]]:
    return {r.full_name: (r, registry.load_adapter(r)) for r in resolved}


def create_scoring_job(
    session: Session, settings: Settings, run_id: int, request: ScoringRequest
) -> ScoringJobRead:
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
    adapters = _adapters(resolved)
    # The word rule is part of each word metric's configuration key: scores stored under the other rule
    # are not "already computed" for this job.
    planning = ScoringContext(settings, language=dataset.language, word_rule=request.word_rule)
    skipped = 0
    configs = {}
    repo = ScoreRepository(session)
    todo: dict[tuple[str, int], set[int]] = {}
    repeats = {name: request.repeats if r.spec.needs_judge else 1 for name, (r, _) in adapters.items()}
    for name, (r, adapter) in adapters.items():
        ckey = config_key(name, adapter.config(planning.for_k(r.k)))
        configs[name] = ckey
        for repeat in range(repeats[name]):
            existing = {} if request.recompute else repo.existing(outputs, name, ckey, repeat)
            todo[(name, repeat)] = set()
            for oid in outputs:
                prev = existing.get(oid)
                if prev is not None and prev.error is None:
                    skipped += 1
                    continue
                todo[(name, repeat)].add(oid)
    # Output by output: a claimed batch holds all the metrics (and repeats) of its outputs, scored together.
    keys = [
        item_key(name, oid, repeat)
        for oid in outputs
        for name in adapters
        for repeat in range(repeats[name])
        if oid in todo[(name, repeat)]
    ]
    params = {
        "run_id": run_id,
        "metrics": list(adapters),
        "k": request.k,
        "word_rule": request.word_rule,
        "recompute": request.recompute,
        "refresh_judge_cache": request.refresh_judge_cache,
        "repeats": request.repeats,
    }
    summary: dict[str, Any] = {
        "skipped_already_computed": skipped,
        "outputs": len(outputs),
        "config_keys": configs,
    }
    if request.repeats > 1:
        summary["repeats"] = {
            "k": request.repeats,
            "judge": judge_settings(settings),
            "repeated": sorted(n for n, k in repeats.items() if k > 1),
            "deterministic": sorted(n for n, k in repeats.items() if k == 1),
            "note": (
                f"each judge metric is asked {request.repeats} independent times per output (repeats "
                f"0..{request.repeats - 1}, cached apart); metrics without a judge are deterministic and "
                "are scored once; reports use the mean of the repeats"
            ),
        }
    job = create_job(session, "scoring", params, keys, summary, settings=settings)
    return typed(job_read(session, job), ScoringJobRead)


@dataclass(frozen=True)
class ScoreRow:
    """One computed score to store: metric full name, configuration (and its key), k, output, result."""

    metric: str
    config_key: str
    config: dict[str, Any]
    k: int | None
    output_id: int
    result: SampleScore
    repeat: int = 0


def _store(session: Session, job_id: int, rows: list[ScoreRow]) -> None:
    """Write a batch's scores as set operations: one query for the ids of the rows they replace, one bulk
    UPDATE and one bulk INSERT (committed by the caller)."""
    repo = ScoreRepository(session)
    ids = repo.ids_of({r.output_id for r in rows}, {r.metric for r in rows})
    job = session.get(Job, job_id)
    repeats = int(job.params.get("repeats", 1)) if job is not None else 1
    asked = judge_settings_of(job) if job is not None and repeats > 1 else None
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    for row in rows:
        res = row.result
        values = {
            "config": row.config,
            "k": row.k,
            "value": res.value,
            "reason": res.reason,
            "error": res.error,
            "details": res.details if asked is None else {**res.details, "judge_settings": asked},
            "tokens": res.tokens,
            "latency_ms": res.latency_ms,
            "job_id": job_id,
        }
        stored = ids.get((row.output_id, row.metric, row.config_key, row.repeat))
        if stored is None:
            inserts.append(
                {
                    "output_id": row.output_id,
                    "metric": row.metric,
                    "config_key": row.config_key,
                    "repeat": row.repeat,
                    **values,
                }
            )
        else:
            updates.append({"id": stored, **values})
    repo.update_many(updates)
    repo.insert_many(inserts)


def judge_settings_of(job: Job) -> dict[str, Any]:
    """The judge settings a repeated job stated when it was planned."""
    stated = (job.summary or {}).get("repeats", {}).get("judge")
    return dict(stated) if isinstance(stated, dict) else {}


def add_judge_usage(session: Session, job_id: int, usage: dict[str, dict[str, Any]]) -> None:
    """Add a batch's judge calls to the job's totals (per accounted metric)."""
    stored = session.get(Job, job_id)
    if stored is None or not usage:
        return
    totals = dict((stored.summary or {}).get("judge_usage", {}))
    for metric, figures in usage.items():
        total = Usage()
        total.add(totals.get(metric, {}))
        total.add(figures)
        totals[metric] = total.as_dict()
    stored.summary = {**(stored.summary or {}), "judge_usage": totals}


def _add_memo_hits(session: Session, job_id: int, hits: int) -> None:
    stored = session.get(Job, job_id)
    if stored is not None:
        summary = dict(stored.summary or {})
        summary["score_memo_hits"] = int(summary.get("score_memo_hits", 0)) + hits
        stored.summary = summary


class _Memo:
    """A batch's use of the score memo (services/metrics/memo.py): which (metric, sample) scores it
    supplies, the work left for the libraries, and the entries of what they computed."""

    def __init__(
        self, settings: Settings, work: list[MetricWork], language: str, use: bool, word_rule: WordRule
    ) -> None:
        self.work = work
        self.ctx = batch_context(settings, None, language=language, job="memo", word_rule=word_rule)
        self.adapters = [registry.load_adapter(w.resolved) for w in work]
        self.active = use and any(memoizable(a) for a in self.adapters)
        self.hits: dict[Candidate, SampleScore] = {}
        self._left: list[list[int]] = [list(range(len(w.samples))) for w in work]
        self._configs: list[str] = [
            config_key(w.resolved.full_name, a.config(self.ctx.for_k(w.resolved.k)))
            for a, w in zip(self.adapters, work, strict=True)
        ]

    def lookup(self, session: Session) -> None:
        candidates: list[Candidate] = []
        for i, (adapter, w) in enumerate(zip(self.adapters, self.work, strict=True)):
            if not memoizable(adapter):
                continue
            keys = keys_for(
                adapter, w.resolved.full_name, self._configs[i], w.samples, self.ctx.for_k(w.resolved.k)
            )
            candidates += [Candidate(i, j, key) for j, key in enumerate(keys) if key is not None]
        self.hits = memo_lookup(session, candidates)
        found = {(c.item, c.index) for c in self.hits}
        self._left = [[j for j in left if (i, j) not in found] for i, left in enumerate(self._left)]

    def remaining(self) -> list[MetricWork]:
        return [
            MetricWork(w.resolved, [w.samples[j] for j in left])
            for w, left in zip(self.work, self._left, strict=True)
        ]

    def merge(self, computed: BatchResult | None) -> BatchResult:
        """Every work item's scores in sample order: memo hits and computed ones."""
        by_pos = {(c.item, c.index): res for c, res in self.hits.items()}
        scores: list[list[SampleScore]] = []
        for i, w in enumerate(self.work):
            done = iter(computed.scores[i]) if computed is not None else iter(())
            left = set(self._left[i])
            scores.append([next(done) if j in left else by_pos[(i, j)] for j in range(len(w.samples))])
        if computed is not None:
            return BatchResult(scores, computed.configs, computed.judge_usage)
        configs = [
            a.config(self.ctx.for_k(w.resolved.k)) for a, w in zip(self.adapters, self.work, strict=True)
        ]
        return BatchResult(scores, configs, {})

    def entries(self, computed: BatchResult | None, job_id: int) -> list[dict[str, Any]]:
        """Memo rows for the scores the libraries just computed."""
        if not self.active or computed is None:
            return []
        rows: list[dict[str, Any]] = []
        for i, (adapter, w) in enumerate(zip(self.adapters, self.work, strict=True)):
            if not memoizable(adapter):
                continue
            ctx = self.ctx.for_k(w.resolved.k)
            for j, res in zip(self._left[i], computed.scores[i], strict=True):
                sample = w.samples[j]
                basis = res.memo_basis if res.memo_basis is not None else adapter.memo_basis(sample, ctx)  # type: ignore[attr-defined]
                if basis is None:
                    continue
                key = memo_key(w.resolved.full_name, self._configs[i], basis, sample, self.ctx.language)
                row = memo_entry(key, w.resolved.full_name, basis, res, job_id)
                if row is not None:
                    rows.append(row)
        return rows


def _score_rows(
    work: list[MetricWork],
    present: list[list[int]],
    repeat_of: list[int],
    result: BatchResult,
    versions: dict[int, int],
    current: dict[int, int],
    outcome: dict[str, str | None],
) -> list[ScoreRow]:
    """The rows to store, each item's outcome written to ``outcome``: a score of an output whose answer
    changed while it was scored (its version is not the one read) is not stored, its item is stale."""
    rows: list[ScoreRow] = []
    for w, found, scores, config, repeat in zip(
        work, present, result.scores, result.configs, repeat_of, strict=True
    ):
        name = w.resolved.full_name
        ckey = config_key(name, config)
        row_k = w.resolved.k if w.resolved.spec.uses_k else None
        for oid, res in zip(found, scores, strict=True):
            if current.get(oid) != versions.get(oid):
                outcome[item_key(name, oid, repeat)] = (
                    "stale: the output's answer changed while it was scored; score the run again"
                )
                continue
            rows.append(ScoreRow(name, ckey, config, row_k, oid, res, repeat))
            outcome[item_key(name, oid, repeat)] = res.error
    return rows


class ScoringHandler:
    batch_size = 512

    def batch_size_for(self, settings: Settings, items: int | None = None) -> int:
        """At most ``jobs.scoring_batch_size`` items, cut so that a job of ``items`` items gives every
        worker (``services.jobs.processes.job_workers``: by default one per core) the same share: the
        processes finish together instead of one scoring a full batch alone at the end. Items come output by
        output, so each batch holds every metric of its outputs, whatever its size."""
        cap = settings.jobs.scoring_batch_size
        if items is None:
            return cap
        return even_batches(items, job_workers(settings), cap)

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        # One work item per (metric, repeat).
        by_metric: dict[tuple[str, int], list[int]] = defaultdict(list)
        for key in keys:
            name, output_id, repeat = parse_item(key)
            by_metric[(name, repeat)].append(output_id)
        # Samples are read, then scored with no transaction open (judge calls take seconds).
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
            if params is None:
                return dict.fromkeys(keys, "missing: the job was deleted")
            resolved = {name: registry.resolve(name, int(params.get("k", 5))) for name, _ in by_metric}
            run = get_run(session, int(params["run_id"]))
            language = get_dataset(session, run.dataset_id).language
            samples = {}
            for k in {r.k for r in resolved.values()}:
                oids = sorted({o for (n, _), os in by_metric.items() if resolved[n].k == k for o in os})
                samples[k] = build_samples(session, oids, k)
            versions = RunRepository(session).output_versions(
                sorted({o for os in by_metric.values() for o in os})
            )
        outcome: dict[str, str | None] = {}
        work: list[MetricWork] = []
        present: list[list[int]] = []
        repeat_of: list[int] = []
        for (name, repeat), oids in by_metric.items():
            k_samples = samples[resolved[name].k]
            found = [oid for oid in oids if oid in k_samples]
            for oid in set(oids) - set(found):
                outcome[item_key(name, oid, repeat)] = "missing: the output was deleted"
            chosen = [k_samples[o] for o in found]
            if repeat:
                chosen = [replace(s, repeat=repeat) for s in chosen]
            work.append(MetricWork(resolved[name], chosen))
            present.append(found)
            repeat_of.append(repeat)
        refresh = bool(params.get("refresh_judge_cache"))
        # Jobs planned before the word rule was a parameter used the joined rule.
        word_rule: WordRule = "w_runs" if params.get("word_rule") == "w_runs" else "joined"
        memo = _Memo(ctx.settings, work, language, use=ctx.settings.scoring.score_memo, word_rule=word_rule)
        if memo.active and not refresh:
            with ctx.read_factory() as session:
                memo.lookup(session)
        computed = self._compute(ctx, memo, job_id, language, refresh, word_rule)
        result = memo.merge(computed)
        memo_rows = memo.entries(computed, job_id)
        # The batch's scores are stored in one short write transaction.
        with ctx.session_factory() as session:
            lock_run(session, int(params["run_id"]))
            # An output re-imported with a new answer while it was being scored: the score describes the
            # old answer and is not stored (its item fails with the reason; a new job scores it).
            current = RunRepository(session).output_versions(sorted({o for ps in present for o in ps}))
            rows = _score_rows(work, present, repeat_of, result, versions, current, outcome)
            _store(session, job_id, rows)
            add_judge_usage(session, job_id, result.judge_usage)
            if memo_rows:
                store_memo(session, memo_rows)
            if memo.hits:
                _add_memo_hits(session, job_id, len(memo.hits))
            session.commit()
        return outcome

    @staticmethod
    def _compute(
        ctx: JobContext, memo: _Memo, job_id: int, language: str, refresh: bool, word_rule: WordRule
    ) -> BatchResult | None:
        """The scores the memo did not supply, computed by the libraries (None: nothing left to compute)."""
        # The process's long-lived resources carry scoring's (services.resources); none: this batch's own.
        resources: ScoringResources | None = getattr(ctx.resources, "scoring", None)
        own = resources is None
        if resources is None:  # a worker without long-lived resources (tools): this batch's own
            resources = ScoringResources(ctx.settings, ctx.session_factory)
        if not isinstance(resources, ScoringResources):
            raise TypeError(f"scoring runs on ScoringResources, not {type(resources).__name__}")
        try:
            todo = memo.remaining()
            return (
                resources.run(
                    score_batch(
                        ctx.settings,
                        resources,
                        todo,
                        language=language,
                        job=str(job_id),
                        refresh=refresh,
                        word_rule=word_rule,
                    )
                )
                if any(w.samples for w in todo)
                else None
            )
        finally:
            if own:
                resources.close()
