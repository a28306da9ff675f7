"""Extractive baseline generator used when no LLM is configured.

The answer is made of the 1–3 retrieved sentences that best cover the question's terms. Relevance
of a sentence is the idf-weighted fraction of the question's distinct analysed terms (stemmed, stop
words removed, accents folded) that it contains, with idf computed over the candidate sentences::

    idf(t) = ln(1 + (n - df(t) + 0.5) / (df(t) + 0.5))
    relevance(s) = sum(idf(t) for t in Q & terms(s)) / sum(idf(t) for t in Q)

so it lies in [0, 1], and question terms found in no sentence (df = 0) weigh the most: a question
whose key terms are absent from the documents scores low and is declined. Interrogative words
("combien", "pourquoi", "how", ...) are dropped from the question terms: answers rarely contain them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .segment import sentence_spans
from .text import analyzer_for, normalize_language

__all__ = [
    "DEFAULT_MAX_SENTENCES",
    "DEFAULT_MIN_RATIO",
    "DEFAULT_THRESHOLD",
    "I_DONT_KNOW",
    "ExtractiveAnswer",
    "SelectedSentence",
    "extractive_answer",
    "i_dont_know",
]

I_DONT_KNOW = {
    "fr": "Je ne sais pas : les documents fournis ne contiennent pas la réponse à cette question.",
    "en": "I don't know: the provided documents do not contain the answer to this question.",
}
DEFAULT_THRESHOLD = 0.5
DEFAULT_MAX_SENTENCES = 3
#: Extra sentences must reach this fraction of the best relevance to be added to the answer.
DEFAULT_MIN_RATIO = 0.6

# Interrogatives that survive the stop-word lists but never carry the answer's content.
_QUESTION_WORDS = {
    "fr": "combien comment pourquoi quand quel quelle quels quelles qui quoi où lequel laquelle lesquels "
    "lesquelles est-ce",
    "en": "what which who whom whose when where why how",
}
_HEADING_RE = re.compile(r"#{1,6}(?:\s|$)")
_LIST_MARKER_RE = re.compile(r"(?:[-*+•>]|\d{1,9}[.)])\s+")


def i_dont_know(language: str) -> str:
    """The "I don't know" phrase for ``language`` (English for languages without a translation)."""
    return I_DONT_KNOW.get(normalize_language(language), I_DONT_KNOW["en"])


@dataclass(frozen=True, slots=True)
class SelectedSentence:
    """A sentence of ``chunks[chunk_position]``: ``chunks[chunk_position][start:end] == text``."""

    chunk_position: int
    start: int
    end: int
    text: str
    relevance: float


@dataclass(frozen=True, slots=True)
class ExtractiveAnswer:
    """Answer text, whether the generator declined, the sentences used and the best relevance."""

    answer: str
    declined: bool
    sentences: tuple[SelectedSentence, ...]
    best_relevance: float


def _clean(text: str) -> str:
    return _LIST_MARKER_RE.sub("", " ".join(text.split()), count=1)


def extractive_answer(
    question: str,
    language: str,
    chunks: Sequence[str],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_sentences: int = DEFAULT_MAX_SENTENCES,
    min_ratio: float = DEFAULT_MIN_RATIO,
    analyzer: Callable[[str], list[str]] | None = None,
) -> ExtractiveAnswer:
    """Answer ``question`` with the most relevant sentences of ``chunks`` (ranked chunk texts).

    Sentences are returned in document order: by chunk position in ``chunks``, then by offset.
    Markdown headings are never selected and duplicated sentences (overlapping chunks) count once.
    Declines with :func:`i_dont_know` when the best relevance is below ``threshold``, when there is
    no candidate sentence, or when the question has no term left after analysis (only stop words).
    Raises ``ValueError`` if ``threshold`` or ``min_ratio`` is outside [0, 1] or ``max_sentences < 1``.
    """
    if not 0.0 <= threshold <= 1.0 or not 0.0 <= min_ratio <= 1.0:
        raise ValueError("threshold and min_ratio must be in [0, 1]")
    if max_sentences < 1:
        raise ValueError("max_sentences must be >= 1")
    analyze = analyzer or analyzer_for(language)
    query_terms = set(analyze(question)) - set(analyze(_QUESTION_WORDS.get(normalize_language(language), "")))

    candidates: list[tuple[int, int, int, str, frozenset[str]]] = []
    seen: set[str] = set()
    for pos, chunk in enumerate(chunks):
        for start, end in sentence_spans(chunk):
            text = chunk[start:end]
            key = " ".join(text.split()).casefold()
            if _HEADING_RE.match(text) or key in seen:
                continue
            seen.add(key)
            candidates.append((pos, start, end, text, frozenset(analyze(text))))

    declined = ExtractiveAnswer(i_dont_know(language), True, (), 0.0)
    if not query_terms or not candidates:
        return declined
    n = len(candidates)
    idf = {
        t: math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for t in query_terms
        for df in [sum(1 for c in candidates if t in c[4])]
    }
    total = sum(idf.values())
    relevance = [sum(idf[t] for t in query_terms & c[4]) / total for c in candidates]
    ranked = sorted(range(n), key=lambda i: (-relevance[i], i))
    best = relevance[ranked[0]]
    if best < threshold or best == 0.0:
        return ExtractiveAnswer(declined.answer, True, (), best)
    # The threshold decides whether to answer at all; extra sentences only need to be close to the best.
    floor = min_ratio * best
    chosen = sorted(i for i in ranked[:max_sentences] if relevance[i] >= floor)
    sentences = tuple(
        SelectedSentence(candidates[i][0], candidates[i][1], candidates[i][2], candidates[i][3], relevance[i])
        for i in chosen
    )
    answer = " ".join(_clean(s.text) for s in sentences)
    return ExtractiveAnswer(answer, False, sentences, best)
