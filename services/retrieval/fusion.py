"""Reciprocal rank fusion and the bm25 / dense / hybrid retriever."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from .bm25 import BM25Index
from .dense import DenseIndex
from .results import ScoredChunk

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_RRF_K",
    "HybridRetriever",
    "Mode",
    "ScoredChunk",
    "reciprocal_rank_fusion",
    "retrieve",
]

Mode = Literal["bm25", "dense", "hybrid"]
MODES: tuple[str, ...] = get_args(Mode)
DEFAULT_RRF_K = 60
#: How many results each retriever contributes to the fusion in hybrid mode.
DEFAULT_CANDIDATES = 100


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[int]],
    *,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[ScoredChunk]:
    """Fuse ranked lists of chunk indices: ``score(d) = sum_r weight_r / (k + rank_r(d))``.

    ``rankings`` maps a retriever name to its chunk indices, best first (ranks are 1-based; a
    repeated index keeps its best rank). Missing weights default to 1; a weight of 0 ignores that
    retriever. Ties are broken by the best individual rank, then by lower chunk index. Returns at
    most ``limit`` results (all when ``None``). Raises ``ValueError`` if ``k < 0`` or a weight is
    negative or names an unknown retriever.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    weights = dict(weights or {})
    unknown = set(weights) - set(rankings)
    if unknown:
        raise ValueError(f"weights for unknown retrievers: {sorted(unknown)}")
    if any(w < 0 for w in weights.values()):
        raise ValueError("weights must be >= 0")
    totals: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for name, ranking in rankings.items():
        weight = weights.get(name, 1.0)
        if weight == 0:
            continue
        seen: set[int] = set()
        for rank, idx in enumerate(ranking, start=1):
            if idx in seen:
                continue
            seen.add(idx)
            totals[idx] = totals.get(idx, 0.0) + weight / (k + rank)
            best_rank[idx] = min(best_rank.get(idx, rank), rank)
    ordered = sorted(totals, key=lambda i: (-totals[i], best_rank[i], i))
    if limit is not None:
        ordered = ordered[: max(limit, 0)]
    return [ScoredChunk(idx, totals[idx], rank) for rank, idx in enumerate(ordered, start=1)]


class HybridRetriever:
    """Retrieves chunks with BM25, dense similarity, or their reciprocal rank fusion.

    Either index may be ``None`` as long as the requested mode does not need it. Both indexes must
    be built over the same chunk list (same ``chunk_idx`` meaning).
    """

    def __init__(
        self,
        bm25: BM25Index | None = None,
        dense: DenseIndex | None = None,
        *,
        rrf_k: int = DEFAULT_RRF_K,
        weights: Mapping[str, float] | None = None,
        candidates: int = DEFAULT_CANDIDATES,
    ) -> None:
        """Raises ``ValueError`` if the indexes differ in size or a weight is not for bm25/dense."""
        unknown = set(weights or {}) - {"bm25", "dense"}
        if unknown:
            raise ValueError(f"weights for unknown retrievers: {sorted(unknown)}")
        if bm25 is not None and dense is not None and bm25.n_docs != dense.n_docs:
            raise ValueError(f"bm25 has {bm25.n_docs} chunks but dense has {dense.n_docs}")
        self.bm25 = bm25
        self.dense = dense
        self.rrf_k = rrf_k
        self.weights = dict(weights or {"bm25": 1.0, "dense": 1.0})
        self.candidates = candidates

    def retrieve(
        self,
        query: str,
        k: int = 5,
        mode: Mode = "hybrid",
        *,
        query_vector: NDArray[Any] | None = None,
        query_tokens: Sequence[str] | None = None,
    ) -> list[ScoredChunk]:
        """Top ``k`` chunks for ``query`` in ``mode``; scores are BM25, cosine or RRF scores.

        BM25 only returns chunks containing a query term, so "bm25" (and "hybrid" on an empty dense
        index) can return fewer than ``k`` results.

        ``query_tokens`` / ``query_vector`` skip the analysis / encoding of ``query`` (the model is
        loaded lazily otherwise). Raises ``ValueError`` for an unknown mode or a missing index.
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        if k <= 0:
            return []
        n = k if mode != "hybrid" else max(k, self.candidates)
        bm25_hits = self._bm25(query, n, query_tokens) if mode in ("bm25", "hybrid") else []
        dense_hits = self._dense(query, n, query_vector) if mode in ("dense", "hybrid") else []
        if mode == "bm25":
            return bm25_hits
        if mode == "dense":
            return dense_hits
        rankings = {"bm25": [h.chunk_idx for h in bm25_hits], "dense": [h.chunk_idx for h in dense_hits]}
        weights = {name: w for name, w in self.weights.items() if name in rankings}
        return reciprocal_rank_fusion(rankings, k=self.rrf_k, weights=weights, limit=k)

    def _bm25(self, query: str, n: int, tokens: Sequence[str] | None) -> list[ScoredChunk]:
        if self.bm25 is None:
            raise ValueError("this retriever has no BM25 index")
        if tokens is None:
            return self.bm25.search_text(query, n)
        return self.bm25.search(tokens, n)

    def _dense(self, query: str, n: int, vector: NDArray[Any] | None) -> list[ScoredChunk]:
        if self.dense is None:
            raise ValueError("this retriever has no dense index")
        if vector is None:
            return self.dense.search_text(query, n)
        return self.dense.search(np.asarray(vector), n)


def retrieve(
    query: str,
    k: int = 5,
    mode: Mode = "hybrid",
    *,
    bm25: BM25Index | None = None,
    dense: DenseIndex | None = None,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
    candidates: int = DEFAULT_CANDIDATES,
    query_vector: NDArray[Any] | None = None,
) -> list[ScoredChunk]:
    """Functional form of :meth:`HybridRetriever.retrieve`; same failure modes."""
    retriever = HybridRetriever(bm25, dense, rrf_k=rrf_k, weights=weights, candidates=candidates)
    return retriever.retrieve(query, k, mode, query_vector=query_vector)
