from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from services.retrieval.dense import (
    DenseIndex,
    SentenceTransformerEncoder,
    default_model_path,
    dense_fingerprint,
    load_or_build_dense,
    normalize_rows,
)

from .conftest import HashingEncoder

TEXTS = [
    "Le chat dort sur le canapé du salon.",
    "La facture est payable sous trente jours.",
    "Python est un langage de programmation.",
    "Les colis sont livrés en trois jours.",
]
REPO = Path(__file__).resolve().parents[3]


def test_importing_does_not_load_torch() -> None:
    code = (
        "import sys, services.retrieval, services.retrieval.dense, services.retrieval.fusion;"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers', 'faiss') if m in sys.modules];"
        "assert not bad, bad"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}
    )


def test_default_model_path_is_the_packaged_minilm() -> None:
    path = default_model_path()
    assert os.path.isfile(os.path.join(path, "modules.json"))
    assert SentenceTransformerEncoder().model_path == os.path.abspath(path)


def test_top_k_is_exact_cosine_with_stable_ties() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    vectors[10] = vectors[3] * 2  # same direction: tie with index 3
    index = DenseIndex(vectors)
    np.testing.assert_allclose(np.linalg.norm(index.embeddings, axis=1), 1.0, rtol=1e-5)
    query = vectors[3] + 0.0
    hits = index.search(query, 7)
    assert [h.chunk_idx for h in hits[:2]] == [3, 10]
    expected = np.argsort(-(normalize_rows(vectors) @ normalize_rows(query)), kind="stable")[:7]
    assert [h.chunk_idx for h in hits] == expected.tolist()
    assert [h.rank for h in hits] == list(range(1, 8))
    assert len(index.search(query, 10_000)) == 500
    assert index.search(query, 0) == []
    with pytest.raises(ValueError, match="dimension"):
        index.search(np.ones(3), 1)


def test_build_with_encoder_and_search_text(hashing_encoder: HashingEncoder) -> None:
    index = DenseIndex.build(TEXTS, encoder=hashing_encoder)
    assert index.n_docs == 4 and index.dimension == hashing_encoder.dimension
    assert index.fingerprint == dense_fingerprint(TEXTS, hashing_encoder.model_path)
    assert index.search_text("facture payable", 1)[0].chunk_idx == 1


def test_zero_vectors_and_bad_shapes() -> None:
    index = DenseIndex(np.zeros((2, 4)))
    assert [h.score for h in index.search(np.ones(4), 2)] == [0.0, 0.0]
    with pytest.raises(ValueError):
        DenseIndex(np.zeros(4))
    assert DenseIndex(np.zeros((0, 4))).search(np.ones(4), 3) == []


def test_save_load_roundtrip(tmp_path: Path, hashing_encoder: HashingEncoder) -> None:
    index = DenseIndex.build(TEXTS, encoder=hashing_encoder)
    index.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dense.json", "embeddings.npy"]
    for mmap in (False, True):
        loaded = DenseIndex.load(tmp_path, mmap=mmap)
        np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
        assert loaded.fingerprint == index.fingerprint and loaded.model_path == index.model_path
        assert loaded.search(index.embeddings[2], 2) == index.search(index.embeddings[2], 2)
    with pytest.raises(FileNotFoundError):
        DenseIndex.load(tmp_path / "missing")


def test_fingerprint_includes_model_path() -> None:
    assert dense_fingerprint(TEXTS, "/models/a") != dense_fingerprint(TEXTS, "/models/b")
    assert dense_fingerprint(TEXTS, "/models/a") != dense_fingerprint(TEXTS[:-1], "/models/a")
    assert dense_fingerprint(TEXTS, "/models/a") == dense_fingerprint(list(TEXTS), "/models/a")


def test_load_or_build_reencodes_only_when_stale(tmp_path: Path) -> None:
    encoder = HashingEncoder()
    load_or_build_dense(tmp_path, TEXTS, encoder=encoder)
    assert encoder.calls == 1
    load_or_build_dense(tmp_path, TEXTS, encoder=encoder)
    assert encoder.calls == 1
    load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(model_path="/fake/other"))
    load_or_build_dense(tmp_path, TEXTS[:2], encoder=encoder)
    assert encoder.calls == 2


def test_real_minilm_model(tmp_path: Path) -> None:
    encoder = SentenceTransformerEncoder(batch_size=2)
    index = DenseIndex.build(TEXTS, encoder=encoder)
    assert index.embeddings.shape == (4, 384) and index.embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(index.embeddings, axis=1), 1.0, rtol=1e-5)
    assert index.search_text("Quand dois-je payer la facture ?", 1)[0].chunk_idx == 1
    assert index.search_text("programming language", 1)[0].chunk_idx == 2
    index.save(tmp_path)
    loaded = DenseIndex.load(tmp_path)
    # The loaded index lazily rebuilds an encoder from its stored model path.
    assert loaded.search_text("livraison des colis", 1)[0].chunk_idx == 3
    assert encoder([]).shape == (0, 384)
