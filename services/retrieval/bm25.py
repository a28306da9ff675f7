"""BM25 index over analysed chunks, score-for-score identical to ``rank_bm25.BM25Okapi``.

``rank_bm25`` scores a query by looping over every document in Python for every query term, which
takes seconds per query at 1M chunks. This index stores, for each term, the sorted ids of the chunks
containing it and the precomputed BM25 contribution of the term to each of them (a CSC sparse
matrix). A query then only touches the postings of its terms.

Exactness with ``BM25Okapi`` (same ``k1``, ``b``, ``epsilon``):

* idf is ``log(N - df + 0.5) - log(df + 0.5)`` computed with ``math.log``; negative idfs are
  replaced by ``epsilon * mean(idf)``, the mean being taken over the raw idfs summed in first-occurrence
  order, exactly as ``BM25Okapi._calc_idf`` does;
* per-posting weights use the very same floating-point expression and query-term contributions are
  accumulated in query order (a repeated query term counts twice), so the scores are bitwise equal;
* ranking breaks ties by lower chunk index (``rank_bm25.get_top_n`` uses an unstable argsort, so its
  order among exactly tied scores is arbitrary).

Unlike ``BM25Okapi``, an empty corpus or a corpus without any term is valid (every score is 0).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import reduce
from itertools import chain
from operator import add
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .files import write_json_atomic
from .results import ScoredChunk, corpus_fingerprint, scored, top_k
from .text import Analyzer, get_analyzer

__all__ = ["BM25Index", "BM25Params", "bm25_fingerprint", "load_or_build_bm25"]

FORMAT_VERSION = 1
_ARRAYS_FILE = "bm25.npz"
_META_FILE = "bm25.json"
_WEIGHT_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class BM25Params:
    """BM25Okapi parameters (defaults are ``rank_bm25``'s)."""

    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25


def bm25_fingerprint(texts: Iterable[str], analyzer: Analyzer, params: BM25Params = BM25Params()) -> str:
    """Fingerprint of an index built from ``texts`` with ``analyzer`` and ``params``.

    Changes whenever a text, the analyzer configuration, the parameters or the index format change.
    """
    settings = {
        "kind": "bm25",
        "format": FORMAT_VERSION,
        "params": asdict(params),
        "analyzer": analyzer.config,
    }
    return corpus_fingerprint(texts, settings)


class BM25Index:
    """Immutable BM25Okapi index; build with :meth:`from_tokens` or :meth:`build`."""

    def __init__(
        self,
        *,
        vocabulary: Sequence[str],
        indptr: NDArray[np.int64],
        postings: NDArray[np.int32],
        weights: NDArray[np.float64],
        idf: NDArray[np.float64],
        doc_lengths: NDArray[np.int64],
        params: BM25Params = BM25Params(),
        analyzer_config: dict[str, Any] | None = None,
        fingerprint: str = "",
    ) -> None:
        """Assemble an index from its arrays (used by the builders and :meth:`load`).

        Raises ``ValueError`` if the array shapes are inconsistent.
        """
        n_terms = len(vocabulary)
        if indptr.shape != (n_terms + 1,) or idf.shape != (n_terms,):
            raise ValueError("indptr/idf do not match the vocabulary size")
        if postings.shape != weights.shape or int(indptr[-1]) != postings.shape[0]:
            raise ValueError("postings/weights do not match indptr")
        self.vocabulary: tuple[str, ...] = tuple(vocabulary)
        self._term_ids = {term: i for i, term in enumerate(self.vocabulary)}
        self.indptr = indptr
        self.postings = postings
        self.weights = weights
        self.idf = idf
        self.doc_lengths = doc_lengths
        self.params = params
        self.analyzer_config = analyzer_config
        self.fingerprint = fingerprint
        self._analyzer: Analyzer | None = None

    # ------------------------------------------------------------------ building
    @classmethod
    def from_tokens(
        cls,
        corpus: Iterable[Sequence[str]],
        *,
        params: BM25Params = BM25Params(),
        analyzer_config: dict[str, Any] | None = None,
        fingerprint: str = "",
    ) -> BM25Index:
        """Index already-analysed documents (one token list per chunk, consumed once).

        Equivalent to ``rank_bm25.BM25Okapi(corpus, k1=..., b=..., epsilon=...)``.
        """
        term_ids: defaultdict[str, int] = defaultdict()
        # Unknown terms get the next id on first sight: first-occurrence order, as rank_bm25's dict.
        term_ids.default_factory = term_ids.__len__
        lengths: list[int] = []

        def id_streams() -> Iterator[Iterable[int]]:
            for doc in corpus:
                lengths.append(len(doc))
                yield map(term_ids.__getitem__, doc)

        flat_terms = np.fromiter(chain.from_iterable(id_streams()), dtype=np.int32)
        doc_lengths = np.asarray(lengths, dtype=np.int64)
        n_docs, n_terms = doc_lengths.shape[0], len(term_ids)
        flat_docs = np.repeat(np.arange(n_docs, dtype=np.int32), doc_lengths)
        # Imported here: the API process imports this module without building an index.
        import scipy.sparse  # type: ignore[import-untyped,unused-ignore]

        counts = scipy.sparse.csc_matrix(
            (np.ones(flat_terms.shape[0], dtype=np.int32), (flat_docs, flat_terms)), shape=(n_docs, n_terms)
        )
        del flat_terms, flat_docs
        counts.sum_duplicates()
        counts.sort_indices()
        indptr = counts.indptr.astype(np.int64)
        postings = counts.indices.astype(np.int32, copy=False)
        tf = counts.data
        del counts

        df = np.diff(indptr).tolist()
        raw_idf = [math.log(n_docs - f + 0.5) - math.log(f + 0.5) for f in df]
        # reduce(add) is a plain left fold, like rank_bm25's loop (sum() may compensate on 3.12+).
        average_idf = reduce(add, raw_idf, 0.0) / n_terms if n_terms else 0.0
        eps = params.epsilon * average_idf
        idf = np.array([v if v >= 0 else eps for v in raw_idf], dtype=np.float64)

        total = int(doc_lengths.sum())
        avgdl = total / n_docs if n_docs else 0.0
        weights = np.empty(postings.shape[0], dtype=np.float64)
        posting_terms = np.repeat(np.arange(n_terms, dtype=np.int32), np.diff(indptr))
        k1, b = params.k1, params.b
        # Blocks bound the float64 temporaries (several per posting) to a few MiB each.
        for lo in range(0, postings.shape[0], _WEIGHT_BLOCK):
            hi = lo + _WEIGHT_BLOCK
            f = tf[lo:hi].astype(np.int64)
            dl = doc_lengths[postings[lo:hi]]
            # Same expression and evaluation order as BM25Okapi.get_scores, for bitwise-equal scores.
            weights[lo:hi] = idf[posting_terms[lo:hi]] * (f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)))
        del posting_terms, tf
        return cls(
            vocabulary=list(term_ids),
            indptr=indptr,
            postings=postings,
            weights=weights,
            idf=idf,
            doc_lengths=doc_lengths,
            params=params,
            analyzer_config=analyzer_config,
            fingerprint=fingerprint,
        )

    @classmethod
    def build(
        cls, texts: Sequence[str], analyzer: Analyzer | str, *, params: BM25Params = BM25Params()
    ) -> BM25Index:
        """Analyse ``texts`` with ``analyzer`` (or the analyzer of a language code) and index them."""
        analyzer = get_analyzer(analyzer) if isinstance(analyzer, str) else analyzer
        return cls.from_tokens(
            (analyzer(t) for t in texts),
            params=params,
            analyzer_config=analyzer.config,
            fingerprint=bm25_fingerprint(texts, analyzer, params),
        )

    # ------------------------------------------------------------------ querying
    @property
    def n_docs(self) -> int:
        """Number of indexed chunks."""
        return int(self.doc_lengths.shape[0])

    @property
    def analyzer(self) -> Analyzer:
        """The analyzer the index was built with; ``ValueError`` if built from raw tokens."""
        if self._analyzer is None:
            if self.analyzer_config is None:
                raise ValueError("index was built from tokens without an analyzer configuration")
            self._analyzer = Analyzer.from_config(self.analyzer_config)
        return self._analyzer

    def _accumulate(
        self, query_tokens: Sequence[str], touched: NDArray[np.bool_] | None
    ) -> NDArray[np.float64]:
        scores = np.zeros(self.n_docs, dtype=np.float64)
        for token in query_tokens:
            term = self._term_ids.get(token)
            if term is None:
                continue
            lo, hi = int(self.indptr[term]), int(self.indptr[term + 1])
            docs = self.postings[lo:hi]
            # Doc ids are unique within a posting list, so fancy-index += adds each weight once.
            scores[docs] += self.weights[lo:hi]
            if touched is not None:
                touched[docs] = True
        return scores

    def get_scores(self, query_tokens: Sequence[str]) -> NDArray[np.float64]:
        """BM25 score of every chunk for the analysed query (equal to ``BM25Okapi.get_scores``)."""
        return self._accumulate(query_tokens, None)

    def search(self, query_tokens: Sequence[str], k: int, *, only_matching: bool = True) -> list[ScoredChunk]:
        """Top ``k`` chunks for the analysed query, best first (ties: lower chunk index first).

        With ``only_matching`` (default) only chunks containing at least one query term are
        returned, so the result may be shorter than ``k`` (empty for an out-of-vocabulary query).
        With ``only_matching=False`` all chunks compete, exactly like sorting ``get_scores``.
        """
        if k <= 0 or self.n_docs == 0:
            return []
        if not only_matching:
            scores = self._accumulate(query_tokens, None)
            return scored(top_k(scores, k), scores)
        touched = np.zeros(self.n_docs, dtype=np.bool_)
        scores = self._accumulate(query_tokens, touched)
        candidates = np.flatnonzero(touched)
        return scored(candidates[top_k(scores[candidates], k)], scores)

    def search_text(self, query: str, k: int, *, only_matching: bool = True) -> list[ScoredChunk]:
        """Analyse ``query`` with the index's analyzer, then :meth:`search`."""
        return self.search(self.analyzer(query), k, only_matching=only_matching)

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``bm25.npz`` and ``bm25.json`` into ``directory`` (created if needed).

        Files are written to temporary names and renamed, so a concurrent reader never sees a
        half-written file. Raises ``OSError`` on I/O failure.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT_VERSION,
            "params": asdict(self.params),
            "analyzer_config": self.analyzer_config,
            "fingerprint": self.fingerprint,
            "vocabulary": list(self.vocabulary),
        }
        with tempfile.NamedTemporaryFile(dir=path, suffix=".npz", delete=False) as tmp:
            np.savez(
                tmp,
                indptr=self.indptr,
                postings=self.postings,
                weights=self.weights,
                idf=self.idf,
                doc_lengths=self.doc_lengths,
            )
        os.replace(tmp.name, path / _ARRAYS_FILE)
        write_json_atomic(path / _META_FILE, meta)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> BM25Index:
        """Load an index written by :meth:`save` (no pickle involved).

        Raises ``FileNotFoundError`` if files are missing and ``ValueError`` if they are from another
        format version or inconsistent.
        """
        path = Path(directory)
        meta = json.loads((path / _META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported BM25 index format {meta.get('format')!r}")
        with np.load(path / _ARRAYS_FILE, allow_pickle=False) as arrays:
            return cls(
                vocabulary=meta["vocabulary"],
                indptr=arrays["indptr"].astype(np.int64, copy=False),
                postings=arrays["postings"].astype(np.int32, copy=False),
                weights=arrays["weights"].astype(np.float64, copy=False),
                idf=arrays["idf"].astype(np.float64, copy=False),
                doc_lengths=arrays["doc_lengths"].astype(np.int64, copy=False),
                params=BM25Params(**meta["params"]),
                analyzer_config=meta["analyzer_config"],
                fingerprint=meta["fingerprint"],
            )

    @property
    def nbytes(self) -> int:
        """Bytes held by the index arrays (excluding the Python vocabulary dict)."""
        arrays = (self.indptr, self.postings, self.weights, self.idf, self.doc_lengths)
        return sum(int(a.nbytes) for a in arrays)


def load_or_build_bm25(
    directory: str | os.PathLike[str],
    texts: Sequence[str],
    analyzer: Analyzer | str,
    *,
    params: BM25Params = BM25Params(),
) -> BM25Index:
    """Load the index saved in ``directory`` if its fingerprint matches, else build and save it.

    A missing, unreadable or stale index is rebuilt; raises ``OSError`` only if saving fails.
    """
    analyzer = get_analyzer(analyzer) if isinstance(analyzer, str) else analyzer
    expected = bm25_fingerprint(texts, analyzer, params)
    try:
        index = BM25Index.load(directory)
    except (OSError, ValueError, KeyError, TypeError):
        index = None
    if index is not None and index.fingerprint == expected:
        return index
    index = BM25Index.build(texts, analyzer, params=params)
    index.save(directory)
    return index
