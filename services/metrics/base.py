"""The adapter protocol every metric implements, whatever library computes it.

    spec              MetricSpec: name, library, kind, inputs, needs_judge / needs_embeddings, direction
    config(ctx)       what identifies a score's configuration (library version, k, model, layer, judge
                      fingerprint) in a scoring context
    score(samples, ctx)  async, one SampleScore per sample, in order; each a value, an undefined reason, or
                      an error

Adapters are stateless: whatever a call needs (job, judge session, cache policy, language, k, loaded
models) comes in the ``ScoringContext`` (``services.metrics.context``), so one adapter serves any number of
jobs at once.

Failure modes: ``score`` never raises for a bad sample; an undefined case (no reference passage, unlocated
chunks) is ``SampleScore(reason=...)`` and a failure (judge timeout, library exception) is
``SampleScore(error="cause: message")``. Raising is reserved for failures of the whole batch.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from services.metrics.context import ScoringContext

Kind = Literal["retrieval", "overall", "generation"]
Input = Literal["question", "answer", "contexts", "reference_answer", "reference_passages", "retrieved_spans"]


@dataclass(frozen=True)
class MetricSpec:
    name: str  # library.metric[:variant], without @k
    library: str
    package: str | None  # distribution whose version is recorded with every score
    kind: Kind
    inputs: tuple[Input, ...]
    higher_is_better: bool
    target: str  # "module:Class", imported on first use
    description: str
    needs_judge: bool = False
    needs_embeddings: bool = False
    uses_k: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def full_name(self, k: int) -> str:
        return f"{self.name}@{k}" if self.uses_k else self.name


@dataclass(frozen=True)
class Span:
    document_id: int
    start: int
    end: int


@dataclass(frozen=True)
class RetrievedSpan:
    document_id: int | None
    start: int | None
    end: int | None
    location: str


@dataclass(frozen=True)
class Sample:
    """Everything a metric may read about one output; ``contexts`` and ``retrieved`` are the top k."""

    output_id: int
    question: str
    answer: str | None
    contexts: tuple[str, ...]
    reference_answer: str | None
    answerable: bool
    language: str
    passages: tuple[Span, ...]
    retrieved: tuple[RetrievedSpan, ...]
    documents: Mapping[int, str]
    k: int
    # The independent judge asking this sample is scored for (a scoring job's ``repeats``): part of the
    # judge requests' scope, so a repeat is never answered from another repeat's cached answer.
    repeat: int = 0


@dataclass
class SampleScore:
    value: float | None = None
    reason: str | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    tokens: int | None = None
    latency_ms: float | None = None
    # The judge answers the score rests on (request key -> answer digest, from the batch ledger); not
    # stored with the score, only in the score memo (services.metrics.memo).
    judge_answers: dict[str, str] | None = None
    # The library-side state the score was computed from (``memo_basis``), when the adapter took it then.
    memo_basis: str | None = None


class MetricAdapter(Protocol):
    spec: MetricSpec

    def config(self, ctx: ScoringContext) -> dict[str, Any]: ...

    async def score(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]: ...


@functools.cache
def package_version(package: str | None) -> str | None:
    """The installed version of a distribution (looked up once per process: it cannot change under it)."""
    if package is None:
        return None
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def missing_input(spec: MetricSpec, sample: Sample) -> str | None:
    """The reason a sample cannot be scored by ``spec`` for lack of an input, checked before computing."""
    if "answer" in spec.inputs and (sample.answer is None):
        return "no answer (generation failed for this question)"
    if "reference_answer" in spec.inputs and not sample.reference_answer:
        return (
            "no reference answer (unanswerable question)"
            if not sample.answerable
            else "the question has no reference answer"
        )
    if "reference_passages" in spec.inputs and not sample.passages:
        return (
            "no reference passage (unanswerable question)"
            if not sample.answerable
            else "the question has no reference passage"
        )
    if "contexts" in spec.inputs and not sample.contexts:
        return "no retrieved context"
    return None


T = TypeVar("T")


async def in_thread(fn: Callable[[], T], limit: asyncio.Semaphore | None = None) -> T:
    """Run a synchronous library call in a worker thread, under a concurrency limit when given."""
    if limit is None:
        return await asyncio.to_thread(fn)
    async with limit:
        return await asyncio.to_thread(fn)


class BaseAdapter:
    """Common parts: the spec and its options, the recorded configuration, the input checks."""

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        self.spec = spec
        self.options = {**spec.options, **options}

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        cfg: dict[str, Any] = {"library": self.spec.library, "version": package_version(self.spec.package)}
        if self.spec.uses_k:
            cfg["k"] = ctx.k
        return cfg

    async def score(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        results: list[SampleScore | None] = []
        todo: list[int] = []
        for i, sample in enumerate(samples):
            reason = missing_input(self.spec, sample)
            results.append(SampleScore(reason=reason) if reason else None)
            if not reason:
                todo.append(i)
        if todo:
            try:
                computed = await self.compute([samples[i] for i in todo], ctx)
            except Exception as exc:  # the library failed on the batch: each computed item records it
                err = f"exception: {type(exc).__name__}: {exc}"[:2000]
                computed = [SampleScore(error=err) for _ in todo]
            for i, res in zip(todo, computed, strict=True):
                results[i] = res
        return [r if r is not None else SampleScore(error="internal: no result") for r in results]

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        """Score samples whose inputs are all present."""
        raise NotImplementedError
