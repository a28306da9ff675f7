"""Word-level positional recall/precision and document recall on hand-made cases."""

from __future__ import annotations

from services.metrics.base import RetrievedSpan, Sample, Span
from services.metrics.reference import doc_recall, word_precision, word_recall

# doc 1: the same sentence twice; doc 2: other words
D1 = "Le prix est de dix euros. Le prix est de dix euros."
D2 = "Autre document sans rapport avec la question posée."
DOCS = {1: D1, 2: D2}
FIRST = Span(1, 0, 25)  # "Le prix est de dix euros." (first occurrence): 6 words


def sample(passages: list[Span], chunks: list[RetrievedSpan], answerable: bool = True, k: int = 5) -> Sample:
    return Sample(
        output_id=1,
        question="q",
        answer="a",
        contexts=tuple("x" for _ in chunks[:k]),
        reference_answer="r",
        answerable=answerable,
        language="fr",
        passages=tuple(passages),
        retrieved=tuple(chunks[:k]),
        documents=DOCS,
        k=k,
    )


def chunk(doc: int | None, start: int | None, end: int | None, location: str = "given") -> RetrievedSpan:
    return RetrievedSpan(doc, start, end, location)


def test_exact_overlap_is_one() -> None:
    s = sample([FIRST], [chunk(1, 0, 25)])
    assert word_recall(s).value == 1.0
    assert word_precision(s).value == 1.0
    assert doc_recall(s).value == 1.0


def test_partial_overlap() -> None:
    # chunk covers "Le prix est" (3 of 6 words) and 2 words beyond the passage? no: inside only
    s = sample([FIRST], [chunk(1, 0, 11)])
    assert word_recall(s).value == 0.5
    assert word_precision(s).value == 1.0
    # a chunk spanning the passage's last 2 words and the next sentence's 6 words
    s = sample([FIRST], [chunk(1, 15, 51)])
    assert word_recall(s).value == 2 / 6
    assert word_precision(s).value == 2 / 8


def test_same_words_at_other_positions_count_for_nothing() -> None:
    s = sample([FIRST], [chunk(1, 26, 51)])  # the identical second sentence
    assert D1[26:51] == D1[0:25]
    assert word_recall(s).value == 0.0
    assert word_precision(s).value == 0.0
    assert doc_recall(s).value == 1.0  # right document, wrong place


def test_several_passages_pool_their_words() -> None:
    other = Span(2, 0, 15)  # "Autre document": 2 words
    s = sample([FIRST, other], [chunk(2, 0, 51)])
    assert word_recall(s).value == 2 / 8
    assert doc_recall(s).value == 0.5


def test_k_limits_the_chunks() -> None:
    chunks = [chunk(2, 0, 10), chunk(1, 0, 11), chunk(1, 11, 25)]
    assert word_recall(sample([FIRST], chunks, k=1)).value == 0.0
    assert word_recall(sample([FIRST], chunks, k=2)).value == 0.5
    assert word_recall(sample([FIRST], chunks, k=3)).value == 1.0
    assert word_recall(sample([FIRST], chunks, k=5)).value == 1.0


def test_unlocated_chunk_makes_positions_undefined() -> None:
    s = sample([FIRST], [chunk(1, 0, 25), chunk(None, None, None, "unlocated")])
    for fn in (word_recall, word_precision):
        res = fn(s)
        assert res.value is None and "could not be located" in (res.reason or "")
    # the located chunk already finds the passage's document
    assert doc_recall(s).value == 1.0
    res = doc_recall(sample([FIRST], [chunk(2, 0, 5), chunk(None, None, None, "unlocated")]))
    assert res.value is None and "no known document" in (res.reason or "")


def test_nothing_retrieved() -> None:
    s = sample([FIRST], [])
    assert word_recall(s).value == 0.0
    assert word_precision(s).value is None and word_precision(s).reason == "nothing was retrieved"
