"""The int8 dense search path: recall against exact search, exact path below the threshold, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from services.retrieval.dense import DenseIndex, DenseSearch, load_or_build_dense, open_dense
from services.retrieval.quantized import Int8Index, int8_fingerprint

from .conftest import HashingEncoder


def clustered(n: int, dim: int, seed: int) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Unit vectors around a common mean with a decaying spectrum, and queries near random rows."""
    rng = np.random.default_rng(seed)
    spectrum = (1.0 / np.arange(1, dim + 1)).astype(np.float32)
    mean = rng.normal(size=dim).astype(np.float32)
    mean *= 0.6 / np.linalg.norm(mean)
    rows = mean + rng.normal(size=(n, dim)).astype(np.float32) * spectrum * 0.3
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    picked = rows[rng.integers(n, size=200)]
    queries = picked + rng.normal(size=picked.shape).astype(np.float32) * spectrum * 0.3
    return rows.astype(np.float32), queries.astype(np.float32)


def test_int8_search_matches_exact_search() -> None:
    rows, queries = clustered(4000, 96, seed=1)
    exact = DenseIndex(rows)
    quantized = DenseIndex(rows)
    quantized.attach_int8(rerank=100)
    same = 0
    hits = 0
    for q in queries:
        want = exact.search(q, 5)
        got = quantized.search(q, 5)
        same += got == want  # same chunks, ranks and exact float32 scores
        hits += len({h.chunk_idx for h in got} & {h.chunk_idx for h in want})
    assert hits / (5 * len(queries)) >= 0.99
    assert same >= 0.98 * len(queries)
    # A hybrid retriever asks for 100 candidates: the re-scored list is exact there too.
    assert quantized.search(queries[0], 100) == exact.search(queries[0], 100)


def test_without_rescoring_the_int8_order_alone_is_not_exact() -> None:
    # Guards the value of the re-scoring step: the codes alone reorder near-ties.
    rows, queries = clustered(4000, 96, seed=2)
    exact = DenseIndex(rows)
    raw = DenseIndex(rows)
    raw.attach_int8(rerank=0)
    differing = sum(raw.search(q, 5) != exact.search(q, 5) for q in queries)
    assert differing > 0


def test_int8_index_edges() -> None:
    rows, _ = clustered(50, 8, seed=3)
    int8 = Int8Index.build(rows)
    assert int8.n_docs == 50 and int8.dimension == 8 and int8.nbytes == 400
    assert sorted(int8.candidates(rows[0], 1000).tolist()) == list(range(50))
    assert int8.candidates(rows[0], 0).shape == (0,)
    with pytest.raises(ValueError, match="dimension"):
        int8.candidates(np.ones(3, dtype=np.float32), 1)
    with pytest.raises(ValueError):
        Int8Index.build(np.ones(4, dtype=np.float32))
    empty = DenseIndex(np.zeros((0, 8)))
    empty.attach_int8()
    assert empty.search(np.ones(8), 3) == []


TEXTS = [f"document {i} parle de sujet {i % 7} et de theme {i % 11} numero {i}" for i in range(40)]


def test_exact_path_below_the_threshold(tmp_path: Path) -> None:
    below = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=DenseSearch(exact_below=41))
    assert below.int8 is None and not (tmp_path / "int8").exists()
    opened = open_dense(tmp_path, DenseSearch(exact_below=41))
    assert opened.int8 is None
    assert not isinstance(opened.embeddings, np.memmap)  # small indexes are read into memory

    at = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=DenseSearch(exact_below=40))
    assert at.int8 is not None and (tmp_path / "int8" / "int8.faiss").is_file()
    opened = open_dense(tmp_path, DenseSearch(exact_below=40, rerank=7))
    assert opened.int8 is not None and opened.rerank == 7
    assert isinstance(opened.embeddings, np.memmap)  # large ones stay on disk; only candidates are read
    query = below.embeddings[5]
    assert opened.search(query, 5) == below.search(query, 5)


def test_int8_copy_persists_and_reloads_without_rebuilding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    search = DenseSearch(exact_below=1)
    built = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=search)
    assert built.int8 is not None
    query = built.embeddings[3]

    def no_build(*args: object, **kwargs: object) -> Int8Index:
        raise AssertionError("the saved int8 index should have been loaded")

    monkeypatch.setattr(Int8Index, "build", no_build)
    reopened = open_dense(tmp_path, search)
    assert reopened.int8 is not None and reopened.int8.fingerprint == built.int8.fingerprint
    assert reopened.int8.scale == built.int8.scale
    assert reopened.search(query, 5) == built.search(query, 5)
    encoder = HashingEncoder()
    load_or_build_dense(tmp_path, TEXTS, encoder=encoder, search=search)
    assert encoder.calls == 0


def test_fingerprint_change_rebuilds_the_int8_copy(tmp_path: Path) -> None:
    search = DenseSearch(exact_below=1)
    first = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=search)
    changed = [*TEXTS[:-1], "un tout autre texte"]
    second = load_or_build_dense(tmp_path, changed, encoder=HashingEncoder(), search=search)
    assert second.fingerprint != first.fingerprint
    saved = Int8Index.load(tmp_path / "int8")
    assert saved.fingerprint == int8_fingerprint(second.fingerprint)
    assert second.search(second.embeddings[39], 1)[0].chunk_idx == 39

    # A copy left by another index (or half-written) is never used: it is rebuilt on open.
    meta = tmp_path / "int8" / "int8.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "fingerprint": "int8-v1:other"}))
    reopened = open_dense(tmp_path, search)
    assert reopened.int8 is not None and reopened.int8.fingerprint == int8_fingerprint(second.fingerprint)
    (tmp_path / "int8" / "int8.faiss").write_bytes(b"not an index")
    assert open_dense(tmp_path, search).search(second.embeddings[39], 1)[0].chunk_idx == 39
    assert Int8Index.load(tmp_path / "int8").n_docs == len(changed)
