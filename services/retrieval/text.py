"""Language-aware analyzer turning text into BM25 terms.

Pipeline for each word of :data:`~services.retrieval.segment.WORD_RE` (the same word definition as
chunking and the positional metrics):

1. lowercase, and ``’`` becomes ``'``;
2. French elision: a leading ``l' d' j' m' n' s' t' c' qu' jusqu' lorsqu' puisqu' quoiqu'`` is
   dropped ("l’offre" -> "offre", "qu'il" -> "il"); "aujourd'hui" is kept whole;
3. hyphenated compounds are split into their parts ("porte-monnaie" -> "porte", "monnaie");
4. accent folding: NFKD then removal of combining marks ("économie" -> "economie");
5. stop words (``stop_words`` package, compared after folding) are removed;
6. Snowball stemming for French and English; other languages are not stemmed.

Folding happens *before* stemming so that a query typed without accents produces exactly the same
terms as the accented document text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import snowballstemmer  # type: ignore[import-untyped,unused-ignore]
from stop_words import StopWordError, get_stop_words  # type: ignore[import-untyped,unused-ignore]

from .segment import HYPHENS, WORD_RE

__all__ = [
    "ANALYZER_VERSION",
    "Analyzer",
    "analyzer_for",
    "fold_accents",
    "get_analyzer",
    "normalize_language",
]

#: Bumped whenever the analysis of a given text changes, so persisted indexes get rebuilt.
ANALYZER_VERSION = 2

_LANGUAGE_NAMES = {"french": "fr", "francais": "fr", "english": "en", "anglais": "en"}
_STEMMERS = {"fr": "french", "en": "english"}
_FR_ELISIONS = frozenset(
    {"l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu", "quoiqu"}
)
# Bound the per-analyzer memo so that analysing an open-ended stream of texts cannot grow forever.
_CACHE_LIMIT = 1 << 20


def normalize_language(language: str) -> str:
    """Lower-case ISO 639-1 code for ``language`` ("fr-FR" -> "fr", "French" -> "fr").

    Unknown or empty values are returned lower-cased and stripped (possibly ``""``); never raises.
    """
    code = language.strip().lower().replace("_", "-").split("-", 1)[0]
    return _LANGUAGE_NAMES.get(fold_accents(code), code)


def fold_accents(text: str) -> str:
    """NFKD-decompose ``text`` and drop combining marks ("Œuvre é" -> "Œuvre e"; ligatures stay)."""
    decomposed = unicodedata.normalize("NFKD", text)
    if decomposed.isascii():
        return decomposed
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _stop_words(code: str) -> frozenset[str]:
    if not code:
        return frozenset()
    try:
        words = get_stop_words(code)
    except StopWordError:
        return frozenset()
    return frozenset(fold_accents(w.lower().replace("’", "'")) for w in words)


@dataclass(eq=False)
class Analyzer:
    """Callable ``text -> list of terms`` for one language (see the module docstring).

    Use :func:`analyzer_for` to build one. Instances memoise per-word results and are safe to share
    between threads (the memo is a dict whose worst race is a recomputation).
    """

    language: str
    stem: bool = True
    remove_stop_words: bool = True
    stemmer_name: str | None = field(init=False)
    stop_words: frozenset[str] = field(init=False)
    _stemmer: Any = field(init=False, repr=False)
    _cache: _Memo = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cache = _Memo(self._analyze_word)
        self.language = normalize_language(self.language)
        self.stemmer_name = _STEMMERS.get(self.language) if self.stem else None
        self._stemmer = snowballstemmer.stemmer(self.stemmer_name) if self.stemmer_name else None
        self.stop_words = _stop_words(self.language) if self.remove_stop_words else frozenset()

    @property
    def config(self) -> dict[str, Any]:
        """JSON-serialisable description of everything that influences the produced terms."""
        return {
            "analyzer_version": ANALYZER_VERSION,
            "language": self.language,
            "stemmer": self.stemmer_name,
            "stop_words": sorted(self.stop_words),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Analyzer:
        """Rebuild an analyzer from :attr:`config`; raises ``ValueError`` if it would differ."""
        analyzer = cls(
            str(config["language"]),
            stem=config.get("stemmer") is not None,
            remove_stop_words=bool(config.get("stop_words")),
        )
        if analyzer.config != config:
            raise ValueError("analyzer configuration was produced by a different analyzer version")
        return analyzer

    def _analyze_word(self, word: str) -> tuple[str, ...]:
        token = word.lower().replace("’", "'")
        if self.language == "fr" and "'" in token:
            head, tail = token.split("'", 1)
            # Compared folded, like every term: "ç'a" elides as "c'a" does.
            if fold_accents(head) in _FR_ELISIONS and tail:
                token = tail
        terms: list[str] = []
        for part in _split_hyphens(token):
            folded = fold_accents(part)
            if not folded or folded in self.stop_words:
                continue
            if self._stemmer is not None:
                folded = self._stemmer.stemWord(folded)
            if folded:
                terms.append(folded)
        return tuple(terms)

    def __call__(self, text: str) -> list[str]:
        """Analyse ``text`` into terms; returns ``[]`` for text without words. Never raises."""
        # map/chain keep the per-word loop in C; only unseen words reach Python (_Memo.__missing__).
        return list(chain.from_iterable(map(self._cache.__getitem__, WORD_RE.findall(text))))


class _Memo(dict[str, tuple[str, ...]]):
    """Word -> terms memo computing misses on lookup; cleared when it reaches ``_CACHE_LIMIT``."""

    def __init__(self, compute: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        terms = self[word] = self._compute(word)
        return terms


def _split_hyphens(token: str) -> list[str]:
    for hyphen in HYPHENS[1:]:
        token = token.replace(hyphen, HYPHENS[0])
    return token.split(HYPHENS[0])


_ANALYZERS: dict[str, Analyzer] = {}


def analyzer_for(language: str) -> Callable[[str], list[str]]:
    """Shared :class:`Analyzer` for ``language`` (ISO code such as "fr", "en", "fr-FR", or a name).

    French and English get Snowball stemming; any other code gets no stemming and the stop words of
    the ``stop_words`` package when it knows the language (none otherwise). Never raises.
    """
    return get_analyzer(language)


def get_analyzer(language: str) -> Analyzer:
    """Same as :func:`analyzer_for` but typed as :class:`Analyzer` (exposes ``config``)."""
    code = normalize_language(language)
    analyzer = _ANALYZERS.get(code)
    if analyzer is None:
        analyzer = _ANALYZERS.setdefault(code, Analyzer(code))
    return analyzer
