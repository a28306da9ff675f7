"""Heading-aware chunking of Markdown-ish documents with exact character offsets.

Two steps:

1. the document is split into *pages* of at most ``page_words`` words, cutting preferably at
   headings (``#`` before ``##`` … before ``######``), then at paragraphs (blank lines), sentences,
   lines and finally between words;
2. each page is split the same way into retrieval *chunks* of at most ``chunk_words`` words, with an
   optional overlap of ``overlap_words`` words taken from the end of the previous chunk of the page.

Adjacent small pieces are merged greedily as long as the limit holds, so small sections share a
page/chunk and only oversized pieces are split at a weaker boundary.

Invariants (tested with hypothesis): ``text[c.start:c.end] == c.text`` for every chunk; chunks and
pages never start or end with whitespace; the non-overlapping parts of the chunks of a page cover
every non-whitespace character of that page, and pages cover every non-whitespace character of the
document; word counts (as defined by :func:`word_spans`) respect the limits.

Markdown handling is deliberately small: ATX headings (``#`` … ``######`` followed by a space, a
tab or the end of the line, with at most three leading spaces) outside fenced code blocks (```` ``` ````
or ``~~~``). Setext headings, HTML and nested structures are plain text. Only CR, LF and CRLF end
lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import pairwise

from .segment import line_spans, sentence_spans, word_spans, words_in_range

__all__ = [
    "DEFAULT_CHUNK_WORDS",
    "DEFAULT_OVERLAP_WORDS",
    "DEFAULT_PAGE_WORDS",
    "Chunk",
    "Page",
    "chunk_document",
    "split_pages",
    "word_spans",
]

DEFAULT_PAGE_WORDS = 1000
DEFAULT_CHUNK_WORDS = 200
DEFAULT_OVERLAP_WORDS = 0


@dataclass(frozen=True, slots=True)
class Page:
    """A page: a whitespace-trimmed slice ``text[start:end]`` of the document."""

    document_id: str
    index: int
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrieval chunk; ``text == document_text[start:end]``.

    ``chunk_index`` counts chunks over the whole document (not per page), so
    ``(document_id, chunk_index)`` identifies a chunk. ``heading_path`` is the list of enclosing
    headings (outermost first) at the first character of the chunk's own content, i.e. ignoring the
    overlap borrowed from the previous chunk.
    """

    document_id: str
    start: int
    end: int
    text: str
    page_index: int
    chunk_index: int
    heading_path: tuple[str, ...]


_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)(.*)")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_CLOSING_HASHES_RE = re.compile(r"[ \t]+#+$")

# Split levels, strongest first: six heading levels, paragraphs, sentences, lines, then words.
_PARAGRAPH_LEVEL = 6
_SENTENCE_LEVEL = 7
_LINE_LEVEL = 8
_WORD_LEVEL = 9


def _heading_title(rest: str) -> str:
    title = rest.strip()
    if title and set(title) == {"#"}:
        return ""
    return _CLOSING_HASHES_RE.sub("", title).strip()


class _Structure:
    """Boundaries of one document, computed once so the recursive splitter only does bisects."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.word_starts = [s for s, _ in word_spans(text)]
        self.heading_pos: list[int] = []
        self.heading_paths: list[tuple[str, ...]] = []
        heading_levels: list[int] = []
        paragraphs: list[int] = []
        lines: list[int] = []
        stack: list[str | None] = [None] * 6
        fence: str | None = None
        prev_blank = True
        for ls, le in line_spans(text):
            line = text[ls:le]
            if not line.strip():
                prev_blank = True
                continue
            lines.append(ls)
            fm = _FENCE_RE.match(line)
            heading = None if fence is not None else _HEADING_RE.match(line)
            if fm is not None:
                marker = fm.group(1)
                if fence is None:
                    fence = marker
                elif marker[0] == fence[0] and len(marker) >= len(fence):
                    fence = None
            if heading is not None:
                level = len(heading.group(1))
                stack[level - 1] = _heading_title(heading.group(2))
                for deeper in range(level, 6):
                    stack[deeper] = None
                self.heading_pos.append(ls)
                heading_levels.append(level)
                self.heading_paths.append(tuple(h for h in stack if h))
                paragraphs.append(ls)
            elif prev_blank:
                paragraphs.append(ls)
            # A heading is glued to the paragraph that follows it, so it is never left alone at the
            # end of a page or chunk when the next paragraph does not fit.
            prev_blank = False
        self.cuts: list[list[int]] = [
            [p for p, lv in zip(self.heading_pos, heading_levels, strict=True) if lv <= level + 1]
            for level in range(6)
        ]
        self.cuts.append(paragraphs)
        self.cuts.append([s for s, _ in sentence_spans(text)])
        self.cuts.append(lines)

    def words(self, start: int, end: int) -> int:
        return words_in_range(self.word_starts, start, end)

    def cuts_inside(self, level: int, start: int, end: int) -> list[int]:
        positions = self.cuts[level]
        return positions[bisect_right(positions, start) : bisect_left(positions, end)]

    def heading_path_at(self, pos: int) -> tuple[str, ...]:
        i = bisect_right(self.heading_pos, pos) - 1
        return self.heading_paths[i] if i >= 0 else ()

    def trim(self, start: int, end: int) -> tuple[int, int]:
        text = self.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        return start, end


def _split(doc: _Structure, start: int, end: int, limit: int, level: int) -> list[tuple[int, int]]:
    """Partition ``[start, end)`` into contiguous spans of at most ``limit`` words each."""
    if doc.words(start, end) <= limit:
        return [(start, end)]
    if level == _WORD_LEVEL:
        first = bisect_left(doc.word_starts, start)
        last = bisect_left(doc.word_starts, end)
        cuts = doc.word_starts[first + limit : last : limit]
    else:
        cuts = doc.cuts_inside(level, start, end)
        if not cuts:
            return _split(doc, start, end, limit, level + 1)
    bounds = [start, *cuts, end]
    out: list[tuple[int, int]] = []
    group_start: int | None = None
    group_words = 0
    for ps, pe in pairwise(bounds):
        words = doc.words(ps, pe)
        if words > limit:
            if group_start is not None:
                out.append((group_start, ps))
                group_start = None
            out.extend(_split(doc, ps, pe, limit, level + 1))
        elif group_start is not None and group_words + words <= limit:
            group_words += words
        else:
            if group_start is not None:
                out.append((group_start, ps))
            group_start, group_words = ps, words
    if group_start is not None:
        out.append((group_start, end))
    return out


def _trimmed_spans(doc: _Structure, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    spans = (doc.trim(s, e) for s, e in _split(doc, start, end, limit, 0))
    return [(s, e) for s, e in spans if e > s]


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


def split_pages(document_id: str, text: str, *, page_words: int = DEFAULT_PAGE_WORDS) -> list[Page]:
    """Split ``text`` into pages of at most ``page_words`` words (step 1 of the chunking).

    Returns ``[]`` for empty or whitespace-only text. Raises ``ValueError`` if ``page_words < 1``.
    """
    _check_positive("page_words", page_words)
    return _pages(document_id, _Structure(text), page_words)


def _pages(document_id: str, doc: _Structure, page_words: int) -> list[Page]:
    return [
        Page(document_id, i, s, e, doc.text[s:e], doc.heading_path_at(s))
        for i, (s, e) in enumerate(_trimmed_spans(doc, 0, len(doc.text), page_words))
    ]


def chunk_document(
    document_id: str,
    text: str,
    *,
    page_words: int = DEFAULT_PAGE_WORDS,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = DEFAULT_OVERLAP_WORDS,
) -> list[Chunk]:
    """Split ``text`` into pages, then into chunks of at most ``chunk_words`` words.

    Every chunk but the first of a page starts ``min(overlap_words, words of the previous chunk's
    own content)`` words before its own content, so consecutive chunks of a page share exactly that
    many words and no chunk exceeds ``chunk_words`` words. Overlap never crosses pages. Returns
    ``[]`` for empty or whitespace-only text. Raises ``ValueError`` if ``page_words < 1``,
    ``chunk_words < 1`` or not ``0 <= overlap_words < chunk_words``.
    """
    _check_positive("page_words", page_words)
    _check_positive("chunk_words", chunk_words)
    if not 0 <= overlap_words < chunk_words:
        raise ValueError(f"overlap_words must be in [0, chunk_words), got {overlap_words}")
    doc = _Structure(text)
    starts = doc.word_starts
    chunks: list[Chunk] = []
    for page in _pages(document_id, doc, page_words):
        base = _trimmed_spans(doc, page.start, page.end, chunk_words - overlap_words)
        prev_start: int | None = None
        for own_start, end in base:
            start = own_start
            if prev_start is not None and overlap_words:
                first = bisect_left(starts, own_start)
                borrowed = min(overlap_words, first - bisect_left(starts, prev_start))
                if borrowed > 0:
                    start = starts[first - borrowed]
            chunks.append(
                Chunk(
                    document_id=document_id,
                    start=start,
                    end=end,
                    text=text[start:end],
                    page_index=page.index,
                    chunk_index=len(chunks),
                    heading_path=doc.heading_path_at(own_start),
                )
            )
            prev_start = own_start
    return chunks
