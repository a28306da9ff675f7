"""Scoring one batch: every (metric, sample) pair of it at once, on one event loop, through one judge session.

``score_batch`` is what a scoring job's worker and ``POST /score`` both call. It builds the batch's
``ScoringContext`` (settings, language, job, cache policy, a window of samples in flight), opens a judge
session at the gateway when a judge metric is asked for (its ledger accounts the batch's calls and is
released at the end), schedules every metric's samples together (no metric waits for another: the gateway's
bound is the only throttle on judge calls), and fills each judge score's tokens and calls from the ledger.

Failure modes: a metric's library failing on the whole batch gives each of its samples the error; a judge
gateway that cannot be reached gives each judge score a ``connection`` error; nothing raises for one bad
sample. Stores nothing: callers decide what to keep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from services.config import Settings
from services.metrics import registry
from services.metrics.base import MetricAdapter, Sample, SampleScore
from services.metrics.context import ScoringContext, open_judge
from services.metrics.resources import ScoringResources
from services.retrieval.segment import WordRule


@dataclass(frozen=True)
class MetricWork:
    """One metric (with its k) on some samples (built with that k)."""

    resolved: registry.Resolved
    samples: Sequence[Sample]


@dataclass
class BatchResult:
    scores: list[list[SampleScore]]  # per work item, per sample, in order
    configs: list[dict[str, Any]]  # per work item: what identifies its scores
    judge_usage: dict[str, dict[str, Any]]  # per accounted metric: the batch's judge calls


def batch_context(
    settings: Settings,
    resources: ScoringResources | None,
    *,
    language: str,
    job: str,
    refresh: bool = False,
    metrics: Sequence[str] = (),
    word_rule: WordRule = "joined",
) -> ScoringContext:
    judge = settings.judge
    window = judge.samples_in_flight or 4 * max(1, judge.max_concurrency)
    return ScoringContext(
        settings=settings,
        language=language,
        word_rule=word_rule,
        job=job,
        refresh=refresh,
        resources=resources,
        batch_metrics=frozenset(metrics),
        slots=asyncio.Semaphore(window),
    )


async def score_batch(
    settings: Settings,
    resources: ScoringResources,
    work: Sequence[MetricWork],
    *,
    language: str,
    job: str,
    refresh: bool = False,
    word_rule: WordRule = "joined",
) -> BatchResult:
    """Score every work item at once; one list of SampleScore per item, in order."""
    base = batch_context(
        settings,
        resources,
        language=language,
        job=job,
        refresh=refresh,
        metrics=[w.resolved.spec.name for w in work],
        word_rule=word_rule,
    )
    adapters = [registry.load_adapter(w.resolved) for w in work]
    configs = [a.config(base.for_k(w.resolved.k)) for a, w in zip(adapters, work, strict=True)]
    judged = [i for i, w in enumerate(work) if w.resolved.spec.needs_judge]
    results: list[list[SampleScore] | None] = [None] * len(work)

    async def run(i: int, ctx: ScoringContext) -> None:
        results[i] = await _score(adapters[i], work[i], ctx.for_k(work[i].resolved.k))

    plain = [i for i in range(len(work)) if i not in judged]
    report: dict[str, Any] | None = None
    url = await asyncio.to_thread(resources.gateway_url) if judged else None
    if judged and url is None:
        for i in judged:
            results[i] = _all(work[i], "unavailable: no judge configured")
    if url is None:
        await asyncio.gather(*(run(i, base) for i in plain))
    else:
        timeout = settings.judge.timeout_s * (settings.judge.retries + 1) * 2 * 6
        try:
            # Requests to the gateway at once: twice the judge's bound, so that its slots never wait for
            # this process (the gateway queues the rest) while the HTTP pool stays small.
            connections = 2 * max(1, settings.judge.max_concurrency)
            async with open_judge(url, job, refresh, timeout, connections) as session:
                ctx = replace(base, judge=session)
                await asyncio.gather(*(run(i, ctx) for i in range(len(work))))
            report = session.report
        except httpx.HTTPError as exc:  # opening the session: the gateway cannot be reached
            error = f"connection: the judge gateway cannot be reached: {type(exc).__name__}: {exc}"[:500]
            for i in judged:
                results[i] = _all(work[i], error)
            await asyncio.gather(*(run(i, base) for i in plain if results[i] is None))
    scores = [
        r if r is not None else _all(w, "internal: no result") for r, w in zip(results, work, strict=True)
    ]
    if report is not None:
        _account(report, adapters, work, scores)
    return BatchResult(scores, configs, dict((report or {}).get("metrics", {})))


async def _score(adapter: MetricAdapter, work: MetricWork, ctx: ScoringContext) -> list[SampleScore]:
    t0 = time.perf_counter()
    try:
        scores = await adapter.score(list(work.samples), ctx)
    except Exception as exc:  # a library failing on the whole batch: every sample gets the error
        return _all(work, f"exception: {type(exc).__name__}: {exc}"[:2000])
    per_sample_ms = (time.perf_counter() - t0) * 1000 / max(len(scores), 1)
    for res in scores:
        if res.latency_ms is None:
            res.latency_ms = per_sample_ms
    return scores


def _all(work: MetricWork, error: str) -> list[SampleScore]:
    return [SampleScore(error=error) for _ in work.samples]


def _account(
    report: dict[str, Any],
    adapters: Sequence[MetricAdapter],
    work: Sequence[MetricWork],
    scores: Sequence[list[SampleScore]],
) -> None:
    """Each judge score's tokens, calls and cache hits, from the batch ledger's figures for its scope."""
    scopes: dict[str, dict[str, dict[str, Any]]] = report.get("scopes", {})
    answers: dict[str, dict[str, dict[str, str]]] = report.get("answers", {})
    for adapter, w, results in zip(adapters, work, scores, strict=True):
        ledger_metric = getattr(adapter, "ledger_metric", None)
        scope_of = getattr(adapter, "scope", None)
        if ledger_metric is None or scope_of is None:
            continue
        name = ledger_metric()
        for sample, res in zip(w.samples, results, strict=True):
            if res.error is None:
                res.judge_answers = dict(answers.get(name, {}).get(scope_of(sample), {}))
            usage = scopes.get(name, {}).get(scope_of(sample))
            if usage is None:
                if res.value is None and res.error is None:
                    continue  # undefined before any judge call (a missing input)
                usage = {"calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0}
            res.tokens = int(usage["prompt_tokens"]) + int(usage["completion_tokens"])
            res.details.setdefault("judge_calls", usage["calls"])
            res.details.setdefault("cache_hits", usage["cache_hits"])
            if name != w.resolved.spec.name:
                res.details.setdefault("judge_calls_of", f"the {name} pass over this sample (shared)")
