from __future__ import annotations

import numpy as np
import pytest

from services.retrieval.bm25 import BM25Index
from services.retrieval.dense import DenseIndex
from services.retrieval.fusion import HybridRetriever, ScoredChunk, reciprocal_rank_fusion, retrieve

from .conftest import HashingEncoder


def test_rrf_scores_and_order() -> None:
    fused = reciprocal_rank_fusion({"bm25": [1, 2, 3], "dense": [3, 1, 4]})
    scores = {f.chunk_idx: f.score for f in fused}
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[2] == pytest.approx(1 / 62)
    assert [f.chunk_idx for f in fused] == [1, 3, 2, 4]
    assert [f.rank for f in fused] == [1, 2, 3, 4]


def test_rrf_weights_k_limit_and_duplicates() -> None:
    fused = reciprocal_rank_fusion({"a": [1, 2], "b": [2, 1]}, weights={"a": 2.0}, k=0, limit=1)
    assert fused == [ScoredChunk(1, 2.0 / 1 + 1.0 / 2, 1)]
    ignored = reciprocal_rank_fusion({"a": [1], "b": [2]}, weights={"b": 0.0})
    assert [f.chunk_idx for f in ignored] == [1]
    dup = reciprocal_rank_fusion({"a": [5, 5, 6]})
    assert [(f.chunk_idx, f.score) for f in dup] == [(5, 1 / 61), (6, 1 / 63)]
    assert reciprocal_rank_fusion({}) == []


def test_rrf_ties_prefer_best_single_rank_then_index() -> None:
    fused = reciprocal_rank_fusion({"a": [9, 4], "b": [4, 9], "c": [7]})
    # 9 and 4 tie on score; 7 has a lower score.
    assert [f.chunk_idx for f in fused] == [4, 9, 7]


@pytest.mark.parametrize("kwargs", [{"k": -1}, {"weights": {"a": -1.0}}, {"weights": {"unknown": 1.0}}])
def test_rrf_rejects_bad_parameters(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"a": [1]}, **kwargs)  # type: ignore[arg-type]


TEXTS = [
    "abonnement mensuel tarif douze euros",
    "livraison gratuite des colis",
    "garantie panne deux ans",
    "tarif de la livraison express",
    "service client du lundi au vendredi",
    "magasin de Lyon ouvert le dimanche",
]


def make_retriever(**kwargs: object) -> HybridRetriever:
    encoder = HashingEncoder()
    return HybridRetriever(
        BM25Index.build(TEXTS, "fr"),
        DenseIndex.build(TEXTS, encoder=encoder),
        **kwargs,  # type: ignore[arg-type]
    )


def test_modes() -> None:
    retriever = make_retriever()
    bm25 = retriever.retrieve("tarif livraison", 2, "bm25")
    assert bm25[0].chunk_idx == 3
    dense = retriever.retrieve("tarif livraison", 2, "dense")
    assert dense[0].chunk_idx == 3 and len(dense) == 2
    hybrid = retriever.retrieve("tarif livraison", 3, "hybrid")
    assert hybrid[0].chunk_idx == 3 and len(hybrid) == 3
    assert hybrid[0].score == pytest.approx(2 / 61)
    assert retriever.retrieve("tarif", 0) == []


def test_query_vector_and_tokens_bypass_encoding() -> None:
    retriever = make_retriever()
    vector = np.asarray(retriever.dense.embeddings[2]) if retriever.dense else np.zeros(64)
    hits = retriever.retrieve("ignored", 2, "hybrid", query_vector=vector, query_tokens=["garant"])
    assert hits[0].chunk_idx == 2


def test_weights_and_errors() -> None:
    bm25_only = make_retriever(weights={"bm25": 1.0, "dense": 0.0})
    assert bm25_only.retrieve("garantie", 4, "hybrid") == [ScoredChunk(2, 1 / 61, 1)]
    dense_heavy = make_retriever(weights={"bm25": 0.5, "dense": 2.0}, rrf_k=10)
    assert dense_heavy.retrieve("garantie", 1, "hybrid")[0].score == pytest.approx(0.5 / 11 + 2.0 / 11)
    with pytest.raises(ValueError, match="mode"):
        make_retriever().retrieve("x", 1, "sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dense"):
        HybridRetriever(BM25Index.build(TEXTS, "fr")).retrieve("x", 1, "hybrid")
    with pytest.raises(ValueError, match="BM25"):
        HybridRetriever(None, DenseIndex(np.eye(6))).retrieve("x", 1, "bm25")
    with pytest.raises(ValueError, match="chunks"):
        HybridRetriever(BM25Index.build(TEXTS, "fr"), DenseIndex(np.eye(4)))
    with pytest.raises(ValueError, match="unknown"):
        HybridRetriever(weights={"sparse": 1.0})


def test_functional_form() -> None:
    bm25 = BM25Index.build(TEXTS, "fr")
    assert retrieve("garantie", 1, "bm25", bm25=bm25)[0].chunk_idx == 2
