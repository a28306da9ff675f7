"""Locating text given without offsets (gold passages, retrieved chunks) in a corpus of documents.

Three stages; the first that succeeds says how the text was found:
1. ``exact``: the text (stripped of surrounding whitespace) occurs verbatim in a document; score 100.
2. ``normalized``: it occurs once both sides are Unicode-normalised (NFKC, so ligatures and full-width forms
   compare equal to their plain letters; typographic quotes and dashes read as ASCII; soft hyphens and
   zero-width characters dropped) and whitespace-normalised (any run of spaces, tabs, non-breaking spaces and
   line ends compares equal to one space); score 100.
3. ``fuzzy``: the best alignment of the text inside a document, compared case-folded, without punctuation and
   with words hyphenated across a line end joined, scores at least the threshold. The score is rapidfuzz's
   ``partial_ratio`` (0-100: the Indel similarity of the text with the best-matching span of the document).
A text found by none is ``unlocated``, with the best score seen and where.

Only a few candidate documents are compared with each text: those sharing the most word bigrams with it,
found in a sorted numpy array of the corpus' bigram hashes (so a corpus is indexed in one pass and any
number of texts are looked up together); a document named with the text (a hint) is tried first.
"""

from __future__ import annotations

import bisect
import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from rapidfuzz import fuzz

How = Literal["exact", "normalized", "fuzzy", "unlocated"]
DEFAULT_THRESHOLD = 90.0
# A bigram shared by more documents than this ("of the") says nothing about where a text comes from.
_MAX_POSTINGS = 64
# The first vote uses only bigrams this rare; texts left without a candidate vote with the others.
_RARE_POSTINGS = 8
_MAX_SHINGLES = 32
_WINDOW = 160
_CANDIDATES = 4
_WORD = re.compile(r"\w+")

_PUNCT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)

# Level 1 (normalized): whitespace runs other than a single space, invisible characters, and any non-ASCII
# character (with the combining marks that follow it, so decomposed accents compose under NFKC).
_NORM = re.compile(
    r"(?P<ws>\s{2,}|[^\S ])|(?P<drop>[\u00ad\u200b\u200c\u200d\u2060\ufeff])"
    r"|(?P<unit>[^\x00-\x7f][\u0300-\u036f]*|[\x00-\x7f][\u0300-\u036f]+)"
)
# Level 2 (fuzzy): a hyphen at a line end between two word characters, invisible characters, letters with
# combining marks or outside ASCII, and runs of anything that is not a word character.
_FUZZ = re.compile(
    r"(?P<hyph>(?<=\w)[-\u00ad\u2010][ \t]*\r?\n\s*(?=\w))|(?P<drop>[\u00ad\u200b\u200c\u200d\u2060\ufeff])"
    r"|(?P<unit>\w[\u0300-\u036f]+|[^\x00-\x7f](?<=\w))|(?P<sep>[^\w]+)"
)


def _norm_unit(m: re.Match[str]) -> str:
    if m.lastgroup == "ws":
        return " "
    if m.lastgroup == "drop":
        return ""
    return unicodedata.normalize("NFKC", m.group()).translate(_PUNCT)


def _fuzz_unit(m: re.Match[str]) -> str:
    if m.lastgroup in ("hyph", "drop"):
        return ""
    if m.lastgroup == "sep":
        return " "
    return _WORD_ONLY.sub(" ", unicodedata.normalize("NFKC", m.group()).casefold())


_WORD_ONLY = re.compile(r"[^\w]+")


class MappedText:
    """A transformed copy of a text and the map from its offsets back to the original's.

    The text is cut into segments: stretches copied verbatim (one character for one, possibly lower-cased)
    and the pattern's matches, each replaced as a whole (so any offset inside a replacement maps to the
    replaced span)."""

    def __init__(
        self,
        text: str,
        pattern: re.Pattern[str],
        replace: Callable[[re.Match[str]], str],
        verbatim: Callable[[str], str] = str,
    ) -> None:
        parts: list[str] = []
        # Per segment: start in the new text, start and end in the original, copied verbatim or not.
        self._new: list[int] = []
        self._orig: list[tuple[int, int, bool]] = []
        pos = npos = 0
        for m in pattern.finditer(text):
            if m.start() > pos:
                parts.append(verbatim(text[pos : m.start()]))
                self._new.append(npos)
                self._orig.append((pos, m.start(), True))
                npos += m.start() - pos
            rep = replace(m)
            if rep:
                parts.append(rep)
                self._new.append(npos)
                self._orig.append((m.start(), m.end(), False))
                npos += len(rep)
            pos = m.end()
        if pos < len(text):
            parts.append(verbatim(text[pos:]))
            self._new.append(npos)
            self._orig.append((pos, len(text), True))
        self.text = "".join(parts)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of ``text[start:end]`` (end exclusive; ``end > start``)."""
        k = bisect.bisect_right(self._new, start) - 1
        o_start, _, exact = self._orig[k]
        begin = o_start + (start - self._new[k]) if exact else o_start
        k = bisect.bisect_right(self._new, end - 1) - 1
        o_start, o_end, exact = self._orig[k]
        finish = o_start + (end - 1 - self._new[k]) + 1 if exact else o_end
        return begin, finish


def normalized_view(text: str) -> MappedText:
    return MappedText(text, _NORM, _norm_unit)


def fuzzy_view(text: str) -> MappedText:
    return MappedText(text, _FUZZ, _fuzz_unit, str.lower)


def normalize(text: str) -> str:
    return normalized_view(text).text.strip()


def fuzzy_form(text: str) -> str:
    return fuzzy_view(text).text.strip()


@dataclass(frozen=True)
class Match:
    """Where a text was found: document index in the corpus, character span, how, and the match score
    (0-100). Unlocated: ``doc`` and the span are None; ``score`` is the best seen (None if no candidate
    document shared two consecutive words with the text) and ``best_doc`` where it was seen."""

    doc: int | None
    start: int | None
    end: int | None
    how: How
    score: float | None
    best_doc: int | None = None

    @property
    def located(self) -> bool:
        return self.how != "unlocated"


_SENTINEL = "ragmetaxsep"  # a word no text is expected to contain: marks where one text ends


def _bigrams(texts: Sequence[str]) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """Hashes of the word bigrams of every text, and which text each comes from, in one vectorised pass.

    Words are runs of word characters of the NFKC, case-folded text. Python's string hash is salted per
    process: hashes are only compared within one process."""
    if not texts:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    joined = f" {_SENTINEL} ".join(texts)
    words = _WORD.findall(unicodedata.normalize("NFKC", joined).casefold())
    h = np.fromiter(map(hash, words), dtype=np.int64, count=len(words))
    ends = h == hash(_SENTINEL)
    owner = np.cumsum(ends)
    if len(h) < 2:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    u = h.view(np.uint64)
    pairs = u[:-1] * np.uint64(0x9E3779B97F4A7C15) + u[1:]
    # A bigram that spans the end of one text and the start of the next is dropped.
    keep = ~(ends[:-1] | ends[1:])
    return pairs[keep], owner[:-1][keep]


def _windows(text: str) -> str:
    """What is enough of a text to find its document: its start, middle and end when it is long."""
    if len(text) <= 3 * _WINDOW:
        return text
    mid = len(text) // 2
    return " ".join((text[:_WINDOW], text[mid - _WINDOW // 2 : mid + _WINDOW // 2], text[-_WINDOW:]))


class Corpus:
    """Documents (texts, in a fixed order) in which texts given without offsets are located.

    Views of a document (normalised, fuzzy) are built on first use and kept; the bigram index is built on
    the first lookup. Not thread-safe: one import uses one Corpus."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self._sorted: NDArray[np.uint64] | None = None
        self._docs: NDArray[np.int64] | None = None
        self._norm: dict[int, MappedText] = {}
        self._fuzz: dict[int, MappedText] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def _index(self) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
        if self._sorted is None or self._docs is None:
            shingles, docs = _bigrams(self.texts)
            order = np.lexsort((docs, shingles))
            shingles, docs = shingles[order], docs[order]
            if len(shingles):
                keep = np.ones(len(shingles), dtype=bool)
                keep[1:] = (shingles[1:] != shingles[:-1]) | (docs[1:] != docs[:-1])
                shingles, docs = shingles[keep], docs[keep]
            self._sorted, self._docs = shingles, docs
        return self._sorted, self._docs

    def candidates(self, texts: Sequence[str], limit: int = _CANDIDATES) -> list[list[int]]:
        """For each text, the documents sharing most word bigrams with it (best first, at most ``limit``).

        Bigrams found in more than a few documents are left out of the vote (they say little and cost
        much); a text with nothing left votes again with the common ones, and a text whose bigrams are all
        everywhere (boilerplate) gets the documents of its rarest one."""
        if not texts or not self.texts:
            return [[] for _ in texts]
        sorted_sh, _ = self._index()
        query, owner = _bigrams([_windows(t) for t in texts])
        # At most _MAX_SHINGLES bigrams per text, spread over it.
        first = np.searchsorted(owner, owner, "left")
        sizes = np.bincount(owner, minlength=len(texts))
        step = np.maximum(1, -(-sizes // _MAX_SHINGLES))
        spread = ((np.arange(len(owner)) - first) % step[owner]) == 0
        query, owner = query[spread], owner[spread]
        out: list[list[int]] = [[] for _ in texts]
        if not len(query):
            return out
        by_text = np.searchsorted(owner, np.arange(len(texts) + 1))
        grouped = query
        # Sorted keys make the binary searches walk the index in order (several times faster than at random).
        order = np.argsort(query)
        query, owner = query[order], owner[order]
        lo = np.searchsorted(sorted_sh, query, "left")
        counts = np.searchsorted(sorted_sh, query, "right") - lo
        for cap in (_RARE_POSTINGS, _MAX_POSTINGS):
            waiting = np.fromiter((not found for found in out), dtype=bool, count=len(out))
            keep = (counts > 0) & (counts <= cap) & waiting[owner]
            if keep.any():
                self._vote(out, lo[keep], counts[keep], owner[keep], limit)
        for i, found in enumerate(out):
            mine = grouped[by_text[i] : by_text[i + 1]]
            if not found and len(mine):
                out[i] = self._common(mine)
        return out

    def _vote(
        self,
        out: list[list[int]],
        starts: NDArray[np.int64],
        counts: NDArray[np.int64],
        owner: NDArray[np.int64],
        limit: int,
    ) -> None:
        _, docs = self._index()
        total = int(counts.sum())
        # Expand every [lo, hi) range of postings into one flat array, with the text that asked for it.
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(total, dtype=np.int64)
        n_docs = len(self.texts)
        keys = np.repeat(owner, counts) * n_docs + docs[offsets]
        uniq, votes = np.unique(keys, return_counts=True)
        who, doc = uniq // n_docs, uniq % n_docs
        # Per text: documents by votes, ties broken by the lowest index (a stable sort keeps uniq's order).
        most = int(votes.max())
        order = np.argsort(who * (most + 1) + (most - votes), kind="stable")
        who, doc = who[order], doc[order]
        first = np.searchsorted(who, who, "left")
        top = (np.arange(len(who)) - first) < limit
        for i, d in zip(who[top].tolist(), doc[top].tolist(), strict=True):
            out[i].append(d)

    def _common(self, shingles: NDArray[np.uint64]) -> list[int]:
        """Documents holding the rarest bigram of a text whose every bigram is common (boilerplate)."""
        sorted_sh, docs = self._index()
        lo = np.searchsorted(sorted_sh, shingles, "left")
        counts = np.searchsorted(sorted_sh, shingles, "right") - lo
        if not counts.any():
            return []
        k = int(np.argmin(np.where(counts > 0, counts, np.iinfo(np.int64).max)))
        return sorted(set(docs[lo[k] : lo[k] + counts[k]].tolist()))

    def normalized(self, doc: int) -> MappedText:
        if doc not in self._norm:
            self._norm[doc] = normalized_view(self.texts[doc])
        return self._norm[doc]

    def fuzzy(self, doc: int) -> MappedText:
        if doc not in self._fuzz:
            self._fuzz[doc] = fuzzy_view(self.texts[doc])
        return self._fuzz[doc]

    def _scan(self, needle: str, allowed: Callable[[int], bool] | None) -> list[int]:
        # A text of one word has no bigram: look for it in every document (exact only).
        return [i for i, t in enumerate(self.texts) if needle in t and (allowed is None or allowed(i))][
            :_CANDIDATES
        ]

    def locate(
        self,
        text: str,
        candidates: Sequence[int] | None = None,
        hint: int | None = None,
        threshold: float | None = DEFAULT_THRESHOLD,
        allowed: Callable[[int], bool] | None = None,
    ) -> Match:
        """Locate ``text``; ``threshold`` None skips the fuzzy stage. ``candidates`` (from ``candidates``)
        saves the bigram lookup when many texts are located together; ``allowed`` filters documents."""
        needle = text.strip()
        if not needle:
            return Match(None, None, None, "unlocated", None)
        docs = list(self.candidates([needle], _CANDIDATES * 4)[0] if candidates is None else candidates)
        if allowed is not None:
            docs = [d for d in docs if allowed(d)]
        if not docs and len(_WORD.findall(needle)) < 2:
            docs = self._scan(needle, allowed)
        if hint is not None and (allowed is None or allowed(hint)):
            docs = [hint, *(d for d in docs if d != hint)]
        for d in docs:
            i = self.texts[d].find(needle)
            if i >= 0:
                return Match(d, i, i + len(needle), "exact", 100.0)
        docs = docs[: _CANDIDATES + (hint is not None)]
        norm = normalize(needle)
        if norm:
            for d in docs:
                view = self.normalized(d)
                i = view.text.find(norm)
                if i >= 0:
                    start, end = view.span(i, i + len(norm))
                    return Match(d, start, end, "normalized", 100.0)
        if threshold is None:
            return Match(None, None, None, "unlocated", None, None)
        form = fuzzy_form(needle)
        best: tuple[float, int, int, int] | None = None
        if form:
            for d in docs:
                view = self.fuzzy(d)
                if not view.text.strip():
                    continue
                if len(form) > len(view.text):
                    score, s, e = fuzz.ratio(form, view.text), 0, len(view.text)
                else:
                    al = fuzz.partial_ratio_alignment(form, view.text)
                    if al is None:  # only with a score_cutoff, which is not given
                        continue
                    score, s, e = al.score, al.dest_start, al.dest_end
                if best is None or score > best[0]:
                    best = (score, d, s, e)
        if best is None:
            return Match(None, None, None, "unlocated", None, None)
        score, d, s, e = best
        score = round(score, 2)
        if score < threshold or e <= s:
            return Match(None, None, None, "unlocated", score, d)
        start, end = self.fuzzy(d).span(s, e)
        original = self.texts[d]
        # An alignment may stop a letter short of a word's end (or start): widen it to whole words.
        while start > 0 and original[start - 1].isalnum() and original[start].isalnum():
            start -= 1
        while end < len(original) and original[end - 1].isalnum() and original[end].isalnum():
            end += 1
        while start < end and original[start].isspace():
            start += 1
        while end > start and original[end - 1].isspace():
            end -= 1
        return Match(d, start, end, "fuzzy", score)


def word_changes(given: str, found: str) -> list[tuple[str, str]]:
    """The words of ``given`` that differ from ``found`` (the span a fuzzy match located), as (given, found)
    pairs of word runs; either side is empty for a word added or left out. Words compare as the fuzzy stage
    compares them (NFKC, case-folded, punctuation ignored), so a passage that differs only in case, accents
    written as combining marks or punctuation changes no word."""
    a = [(m.group(), unicodedata.normalize("NFKC", m.group()).casefold()) for m in _WORD.finditer(given)]
    b = [(m.group(), unicodedata.normalize("NFKC", m.group()).casefold()) for m in _WORD.finditer(found)]
    matcher = difflib.SequenceMatcher(None, [k for _, k in a], [k for _, k in b], autojunk=False)
    return [
        (" ".join(w for w, _ in a[i1:i2]), " ".join(w for w, _ in b[j1:j2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    ]
