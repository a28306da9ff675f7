"""Reference retrieval metrics computed by the service itself (word-level positional recall and precision,
document-level recall).

Words are identified by their *position* in their document (``word_spans``), never by their value: a
retrieved chunk that does not overlap a reference passage adds nothing even if it repeats the same words.
What a word is comes from the job's ``word_rule`` (``services.retrieval.segment.WORD_RULES``), recorded in
each score's configuration: the two rules count hyphenated and apostrophised words differently, so the
same retrieval can score differently under each.
A passage word counts as retrieved when its character span overlaps a top-k chunk of the same document.
Undefined cases (no passage, unlocated chunks) give a reason, never 0 or 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from services.metrics.base import BaseAdapter, RetrievedSpan, Sample, SampleScore, Span
from services.retrieval.segment import WordRule, word_spans

if TYPE_CHECKING:
    from services.metrics.context import ScoringContext

Word = tuple[int, int, int]  # document id, start, end


def _words(spans: Sequence[Span], texts: Mapping[int, str], rule: WordRule) -> set[Word]:
    out: set[Word] = set()
    for span in spans:
        text = texts[span.document_id]
        for s, e in word_spans(text[span.start : span.end], rule):
            out.add((span.document_id, span.start + s, span.start + e))
    return out


def _covered(words: set[Word], chunks: Sequence[RetrievedSpan]) -> set[Word]:
    by_doc: dict[int, list[tuple[int, int]]] = {}
    for c in chunks:
        if c.document_id is not None and c.start is not None and c.end is not None:
            by_doc.setdefault(c.document_id, []).append((c.start, c.end))
    return {w for w in words if any(cs < w[2] and w[1] < ce for cs, ce in by_doc.get(w[0], ()))}


def _unlocated(sample: Sample) -> str | None:
    lost = [c for c in sample.retrieved if c.start is None]
    if lost:
        return (
            f"{len(lost)} of the top {len(sample.retrieved)} retrieved chunks could not be located "
            "in the corpus, so word positions are unknown"
        )
    return None


def word_recall(sample: Sample, rule: WordRule = "joined") -> SampleScore:
    if reason := _unlocated(sample):
        return SampleScore(reason=reason)
    words = _words(sample.passages, sample.documents, rule)
    if not words:
        return SampleScore(reason="the reference passages contain no word")
    covered = _covered(words, sample.retrieved)
    return SampleScore(
        value=len(covered) / len(words),
        details={"passage_words": len(words), "retrieved_words": len(covered)},
    )


def word_precision(sample: Sample, rule: WordRule = "joined") -> SampleScore:
    if reason := _unlocated(sample):
        return SampleScore(reason=reason)
    if not sample.retrieved:
        return SampleScore(reason="nothing was retrieved")
    retrieved_words = _words(
        [
            Span(c.document_id, c.start, c.end)
            for c in sample.retrieved
            if c.document_id is not None and c.start is not None and c.end is not None
        ],
        sample.documents,
        rule,
    )
    if not retrieved_words:
        return SampleScore(reason="the retrieved chunks contain no word")
    passage_spans = [RetrievedSpan(p.document_id, p.start, p.end, "given") for p in sample.passages]
    inside = _covered(retrieved_words, passage_spans)
    return SampleScore(
        value=len(inside) / len(retrieved_words),
        details={"retrieved_words": len(retrieved_words), "relevant_words": len(inside)},
    )


def doc_recall(sample: Sample, rule: WordRule = "joined") -> SampleScore:
    del rule  # documents, not words: the same under every word rule
    docs = {c.document_id for c in sample.retrieved if c.document_id is not None}
    found = [p for p in sample.passages if p.document_id in docs]
    unknown = [c for c in sample.retrieved if c.document_id is None]
    if len(found) < len(sample.passages) and unknown:
        return SampleScore(
            reason=f"{len(unknown)} retrieved chunks come from no known document, "
            "so document recall is unknown"
        )
    return SampleScore(value=len(found) / len(sample.passages), details={"passages": len(sample.passages)})


class ReferenceAdapter(BaseAdapter):
    """Pure-Python reference metrics; ``options["measure"]`` picks the function."""

    _FUNCS: ClassVar[dict[str, Callable[[Sample, WordRule], SampleScore]]] = {
        "word_recall": word_recall,
        "word_precision": word_precision,
        "doc_recall": doc_recall,
    }

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        cfg = super().config(ctx)
        if self.options.get("words"):
            cfg["word_rule"] = ctx.word_rule
        return cfg

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        fn = self._FUNCS[str(self.options["measure"])]
        return [fn(s, ctx.word_rule) for s in samples]
