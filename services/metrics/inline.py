"""Scoring samples given inline (``POST /score``): a few (question, answer, contexts, reference) and metric
names in, scores out, synchronously, through the same adapters, judge gateway (bound and cache) and batch
scheduling as a scoring job. Nothing is stored but the judge's answers in the gateway's cache.

Failure modes (``InvalidItems``, 422, each naming its field): an unknown metric (with "did you mean"), a
metric that cannot run here (no judge configured, a library missing), a metric needing what inline samples
cannot carry (reference passages, located chunks), more samples than ``scoring.max_inline_samples`` (use a
run and a scoring job), a sample missing an input one of the metrics needs. A judge failure on one sample is
that score's ``error``, never a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.config import Settings
from services.errors import InvalidItems, ItemError
from services.metrics import registry
from services.metrics.base import Sample, SampleScore, package_version
from services.metrics.batch import MetricWork, score_batch
from services.metrics.resources import ScoringResources
from services.types import Int

# What an inline sample carries, by the adapter input names.
_CARRIED = {"question", "answer", "contexts", "reference_answer"}
_FIELD = {"question": "question", "answer": "answer", "contexts": "contexts", "reference_answer": "reference"}


class InlineSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=20_000)
    answer: str = Field(max_length=100_000)
    contexts: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="retrieved contexts in rank order; the first k are used",
    )
    reference: str | None = Field(default=None, max_length=100_000, description="reference answer")


class InlineScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = Field(
        min_length=1, max_length=64, description="metric names (library.metric[:variant][@k])"
    )
    samples: list[InlineSample] = Field(
        min_length=1,
        max_length=1000,
        description="at most scoring.max_inline_samples (10 by default); more go through a run and a job",
    )
    language: str = Field(
        default="en", pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$", description="language of the samples"
    )
    k: Int = Field(default=5, ge=1, le=100, description="top k contexts used, recorded with each score")


class InlineScore(BaseModel):
    metric: str
    value: float | None = None
    reason: str | None = Field(default=None, description="why the value is undefined (null)")
    error: str | None = Field(default=None, description="what failed (cause: message); never a number")
    explanation: str | None = None
    judge_calls: int | None = None
    cache_hits: int | None = None
    tokens: int | None = None
    latency_ms: float | None = None


class InlineSampleScores(BaseModel):
    index: int
    scores: list[InlineScore]


class InlineMetric(BaseModel):
    name: str
    library: str
    library_version: str | None
    higher_is_better: bool
    judge_model: str | None = None
    prompts: str | None = Field(default=None, description="language the judge's prompts ran in")


class InlineScoreResponse(BaseModel):
    metrics: list[InlineMetric]
    samples: list[InlineSampleScores]


def check_request(settings: Settings, request: InlineScoreRequest) -> list[registry.Resolved]:
    """The resolved metrics, or InvalidItems naming every problem of the request."""
    limit = settings.scoring.max_inline_samples
    if len(request.samples) > limit:
        raise InvalidItems(
            "too many samples to score inline",
            [
                ItemError(
                    None,
                    "samples",
                    f"{len(request.samples)} samples, at most {limit} are scored inline; "
                    "import them as a run and use POST /runs/{id}/scoring-jobs",
                )
            ],
        )
    resolved = registry.resolve_all(request.metrics, request.k)
    errors: list[ItemError] = []
    for i, r in enumerate(resolved):
        ok, why = registry.availability(r.spec, settings)
        if not ok:
            errors.append(ItemError(None, f"metrics[{i}]", f"{r.full_name} is unavailable: {why}"))
            continue
        lacking = [x for x in r.spec.inputs if x not in _CARRIED]
        if lacking:
            errors.append(
                ItemError(
                    None,
                    f"metrics[{i}]",
                    f"{r.full_name} needs {', '.join(lacking)}, which inline samples do not carry; "
                    "score it on a run",
                )
            )
    if errors:
        raise InvalidItems("some requested metrics cannot be scored inline", errors)
    for i, sample in enumerate(request.samples):
        for r in resolved:
            for needed in r.spec.inputs:
                if needed == "reference_answer" and not (sample.reference or "").strip():
                    errors.append(ItemError(i, "reference", f"required by {r.full_name}"))
                elif needed == "contexts" and not sample.contexts:
                    errors.append(ItemError(i, "contexts", f"required by {r.full_name}"))
    if errors:
        raise InvalidItems("some samples lack an input a requested metric needs", errors)
    return resolved


def _sample(i: int, s: InlineSample, k: int, language: str) -> Sample:
    # Negative ids: never a stored output's (RAGChecker checkpoints and gateway scopes are named by it).
    return Sample(
        output_id=-(i + 1),
        question=s.question,
        answer=s.answer,
        contexts=tuple(s.contexts[:k]),
        reference_answer=s.reference,
        answerable=True,
        language=language,
        passages=(),
        retrieved=(),
        documents={},
        k=k,
    )


def _score(name: str, res: SampleScore) -> InlineScore:
    details: dict[str, Any] = res.details or {}
    explanation = details.get("explanation")
    calls, hits = details.get("judge_calls"), details.get("cache_hits")
    return InlineScore(
        metric=name,
        value=res.value,
        reason=res.reason,
        error=res.error,
        explanation=str(explanation) if explanation is not None else None,
        judge_calls=int(calls) if calls is not None else None,
        cache_hits=int(hits) if hits is not None else None,
        tokens=res.tokens,
        latency_ms=res.latency_ms,
    )


async def score_inline(
    settings: Settings, resources: ScoringResources, request: InlineScoreRequest
) -> InlineScoreResponse:
    """Score the request's samples with its metrics (checked by ``check_request`` first)."""
    resolved = check_request(settings, request)
    samples: Sequence[Sample] = [
        _sample(i, s, request.k, request.language) for i, s in enumerate(request.samples)
    ]
    work: list[MetricWork] = []
    for r in resolved:
        k_samples = [_sample(i, s, r.k, request.language) for i, s in enumerate(request.samples)]
        work.append(MetricWork(r, k_samples if r.k != request.k else samples))
    result = await score_batch(settings, resources, work, language=request.language, job="inline")
    metrics = []
    for r, config in zip(resolved, result.configs, strict=True):
        judge = config.get("judge") if isinstance(config.get("judge"), dict) else None
        metrics.append(
            InlineMetric(
                name=r.full_name,
                library=r.spec.library,
                library_version=package_version(r.spec.package) if r.spec.package != "ragmeta" else None,
                higher_is_better=r.spec.higher_is_better,
                judge_model=judge.get("model") if judge else None,
                prompts=judge.get("prompts") if judge else None,
            )
        )
    rows = [
        InlineSampleScores(
            index=i,
            scores=[
                _score(r.full_name, scores[i]) for r, scores in zip(resolved, result.scores, strict=True)
            ],
        )
        for i in range(len(request.samples))
    ]
    return InlineScoreResponse(metrics=metrics, samples=rows)
