"""Result type and deterministic top-k selection shared by the BM25, dense and fused retrievers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["ScoredChunk", "corpus_fingerprint", "scored", "top_k"]


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """One retrieved chunk: its index in the indexed corpus, its score and its 1-based rank."""

    chunk_idx: int
    score: float
    rank: int


def top_k(scores: NDArray[np.floating[Any]], k: int) -> NDArray[np.intp]:
    """Indices of the ``k`` highest ``scores``, best first; ties go to the lower index.

    Runs in O(n + k log k). Returns fewer than ``k`` indices when there are fewer scores, and none
    when ``k <= 0``. Scores must not contain NaN (the selection is then unspecified).
    """
    n = int(scores.shape[0])
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        above = np.flatnonzero(scores > kth)
        # flatnonzero is ascending, so keeping the first ties keeps the lowest indices.
        ties = np.flatnonzero(scores == kth)[: k - above.shape[0]]
        cand = np.concatenate((above, ties))
    else:
        cand = np.arange(n, dtype=np.intp)
    order = np.lexsort((cand, -scores[cand]))
    return cand[order[:k]]


def scored(indices: NDArray[np.intp], scores: NDArray[np.floating[Any]]) -> list[ScoredChunk]:
    """``ScoredChunk`` list for ``indices`` (already ranked) with ``scores`` indexed by chunk."""
    return [ScoredChunk(int(i), float(scores[i]), rank) for rank, i in enumerate(indices.tolist(), start=1)]


def corpus_fingerprint(texts: Iterable[str], settings: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of ``settings`` (JSON, sorted keys) and of every text, in order.

    Texts are length-prefixed, so ``["ab", "c"]`` and ``["a", "bc"]`` differ. Raises ``TypeError``
    if ``settings`` is not JSON-serialisable.
    """
    h = hashlib.sha256()
    h.update(json.dumps(settings, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    count = 0
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
        count += 1
    h.update(count.to_bytes(8, "little"))
    return h.hexdigest()
