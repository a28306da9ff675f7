"""The score memo: a judge score reused, not recomputed, when every judge answer it rests on is unchanged.

Re-scoring outputs whose judge answers are all cached makes no judge call, but the libraries still parse
every cached answer again (~12 ms of CPU each). Their scores are a deterministic function of what they are
given: the metric and its configuration (library version, judge, language, prompt templates: the score's
``config_key``), the library-side state they read (the translated Ragas prompts of the metric itself,
RAGChecker's checkpoint: the adapter's ``memo_basis``), the sample's content, and the judge's answers. Given
the same prompts and sample, the first request a metric sends is the same; if its cached answer is the same,
so is the next request, and so on: the same answers give the same requests, the same answers again and the
same score. So a score computed once from answers ``A`` is what recomputing it would give as long as every
answer in ``A`` is still the cached one.

An entry (``score_memo`` table) is keyed on ``memo_key`` (metric, config key, basis, sample content) and
records the score (value or undefined reason, with its details) and ``A`` as {judge-call cache key: digest
of the answer}, taken from the batch's gateway ledger. A lookup is a hit only when the entry exists and
every answer in ``A`` is in the judge-call cache with the same digest; anything else (an answer refreshed
or evicted, a changed prompt, judge, library or sample) is a miss and the libraries run. Failures are never
memoized (an error is always computed again), nor are scores that rest on no judge answer at all.
``refresh_judge_cache`` never reads the memo (it asks the judge again) and overwrites the entries it
recomputes. A hit is marked in its details (``score_memo``: the job that computed it, from how many judge
answers) and counts 0 judge calls.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from services.judge.gateway import answer_digest
from services.judge.repository import JudgeCallRepository, ScoreMemoRepository
from services.metrics.base import MetricAdapter, Sample, SampleScore
from services.metrics.context import ScoringContext

MEMO_VERSION = 1
# Details that describe one computation, not the score: set afresh on a hit.
_PER_RUN = ("judge_calls", "cache_hits", "judge_calls_of", "score_memo")


def memo_key(metric: str, config_key: str, basis: str, sample: Sample, language: str) -> str:
    # A repeat's score rests on its own answers: it is never another repeat's entry (repeat 0 keeps the
    # keys written before repeats existed).
    repeat = {"repeat": sample.repeat} if sample.repeat else {}
    blob = json.dumps(
        {
            **repeat,
            "v": MEMO_VERSION,
            "metric": metric,
            "config": config_key,
            "basis": basis,
            "language": language,
            "sample": [
                sample.question,
                sample.answer,
                sample.reference_answer,
                list(sample.contexts),
                sample.answerable,
                sample.k,
            ],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def memoizable(adapter: MetricAdapter) -> bool:
    return bool(adapter.spec.needs_judge) and hasattr(adapter, "memo_basis")


@dataclass(frozen=True)
class Candidate:
    """One (work item, sample) whose score may come from the memo."""

    item: int
    index: int
    key: str


def keys_for(
    adapter: MetricAdapter, metric: str, config_key: str, samples: Sequence[Sample], ctx: ScoringContext
) -> list[str | None]:
    """The memo key of each sample (None where the adapter cannot vouch for its library state now)."""
    out: list[str | None] = []
    for sample in samples:
        basis = adapter.memo_basis(sample, ctx)  # type: ignore[attr-defined]
        out.append(None if basis is None else memo_key(metric, config_key, basis, sample, ctx.language))
    return out


def lookup(session: Session, candidates: Sequence[Candidate]) -> dict[Candidate, SampleScore]:
    """The candidates whose entry exists and whose judge answers are all still the cached ones."""
    if not candidates:
        return {}
    t0 = time.perf_counter()
    entries = ScoreMemoRepository(session).get_many([c.key for c in candidates])
    needed = sorted({k for e in entries.values() for k in (e.answers or {})})
    digests = {k: answer_digest(r) for k, r in JudgeCallRepository(session).responses(needed).items()}
    hits: dict[Candidate, SampleScore] = {}
    for c in candidates:
        entry = entries.get(c.key)
        if entry is None:
            continue
        answers = dict(entry.answers or {})
        if any(digests.get(k) != d for k, d in answers.items()):
            continue  # an answer it rests on was refreshed or is gone: compute again
        details = {k: v for k, v in (entry.details or {}).items() if k not in _PER_RUN}
        details.update(judge_calls=0, cache_hits=0)
        details["score_memo"] = {"computed_by_job": entry.job_id, "judge_answers": len(answers)}
        hits[c] = SampleScore(value=entry.value, reason=entry.reason, details=details, tokens=0)
    per = (time.perf_counter() - t0) * 1000 / max(1, len(candidates))
    for res in hits.values():
        res.latency_ms = per
    return hits


def entry(key: str, metric: str, basis: str, res: SampleScore, job_id: int | None) -> dict[str, Any] | None:
    """The memo row for a freshly computed score, or None when it must not be memoized (a failure, or a
    score resting on no judge answer and no library state)."""
    if res.error is not None or res.judge_answers is None:
        return None
    if (res.value is None and res.reason is None) or not (res.judge_answers or basis):
        return None
    return {
        "key": key,
        "metric": metric,
        "value": res.value,
        "reason": res.reason,
        "details": {k: v for k, v in res.details.items() if k not in _PER_RUN},
        "answers": dict(res.judge_answers),
        "job_id": job_id,
    }


def store(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    ScoreMemoRepository(session).put_many(rows)
