"""The quantized dense search path: recall against exact search, exact path below the threshold, files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from services.retrieval.dense import DEFAULT_RERANK, DenseIndex, DenseSearch, load_or_build_dense, open_dense
from services.retrieval.quantized import MIN_TRAIN_ROWS, QuantizedIndex, default_spec, quantized_fingerprint

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


def test_quantized_search_matches_exact_search() -> None:
    rows, queries = clustered(4000, 96, seed=1)
    exact = DenseIndex(rows)
    quantized = DenseIndex(rows)
    index = quantized.attach_quantized()  # the service's default re-scoring depth
    assert quantized.rerank == DEFAULT_RERANK
    assert (
        index.spec == default_spec(96) == "RR96,PQ48x4fs" and index.nbytes == 4000 * 24
    )  # 4 bits per 2 dims
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


def test_without_rescoring_the_codes_alone_are_not_exact() -> None:
    # Guards the value of the re-scoring step: the codes alone reorder near neighbours.
    rows, queries = clustered(4000, 96, seed=2)
    exact = DenseIndex(rows)
    raw = DenseIndex(rows)
    raw.attach_quantized(rerank=0)
    differing = sum(raw.search(q, 5) != exact.search(q, 5) for q in queries)
    assert differing > 0


def test_quantized_candidates_against_numpy() -> None:
    rows, queries = clustered(3000, 32, seed=4)
    index = QuantizedIndex.build(rows)
    assert index.spec == "RR32,PQ16x4fs" and index.n_docs == 3000 and index.dimension == 32
    hits = 0
    for q in queries:
        truth = set(np.argsort(-(rows @ q), kind="stable")[:5].tolist())
        found = index.candidates(q, 5 + DEFAULT_RERANK)
        assert len(found) == len(set(found.tolist())) == 5 + DEFAULT_RERANK
        hits += len(truth & set(found.tolist()))
    assert hits / (5 * len(queries)) >= 0.99
    # Other faiss index kinds go through the same class (the bench compares them).
    sq8 = QuantizedIndex.build(rows, spec="SQ8")
    assert sq8.spec == "SQ8" and sq8.nbytes == 3000 * 32


def test_quantized_index_edges() -> None:
    rows, _ = clustered(50, 8, seed=3)
    small = QuantizedIndex.build(rows)
    # Too few rows to train codes on: an exact flat index, every row a candidate.
    assert small.spec == "Flat" and small.n_docs == 50 and small.dimension == 8
    assert sorted(small.candidates(rows[0], 1000).tolist()) == list(range(50))
    assert small.candidates(rows[0], 5).tolist() == np.argsort(-(rows @ rows[0]), kind="stable")[:5].tolist()
    assert small.candidates(rows[0], 0).shape == (0,)
    with pytest.raises(ValueError, match="dimension"):
        small.candidates(np.ones(3, dtype=np.float32), 1)
    with pytest.raises(ValueError):
        QuantizedIndex.build(np.ones(4, dtype=np.float32))
    trained = QuantizedIndex.build(clustered(MIN_TRAIN_ROWS, 8, seed=5)[0])
    assert trained.spec == "RR8,PQ4x4fs"
    empty = DenseIndex(np.zeros((0, 8)))
    empty.attach_quantized()
    assert empty.search(np.ones(8), 3) == []


TEXTS = [f"document {i} parle de sujet {i % 7} et de theme {i % 11} numero {i}" for i in range(300)]
N = len(TEXTS)


def test_exact_path_below_the_threshold(tmp_path: Path) -> None:
    below = load_or_build_dense(
        tmp_path, TEXTS, encoder=HashingEncoder(), search=DenseSearch(exact_below=N + 1)
    )
    assert below.quantized is None and not (tmp_path / "quantized").exists()
    opened = open_dense(tmp_path, DenseSearch(exact_below=N + 1))
    assert opened.quantized is None
    assert not isinstance(opened.embeddings, np.memmap)  # small indexes are read into memory

    at = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=DenseSearch(exact_below=N))
    assert at.quantized is not None and at.quantized.spec == "RR64,PQ32x4fs"
    assert (tmp_path / "quantized" / "index.faiss").is_file()
    opened = open_dense(tmp_path, DenseSearch(exact_below=N, rerank=7))
    assert opened.quantized is not None and opened.rerank == 7
    assert isinstance(opened.embeddings, np.memmap)  # large ones stay on disk; only candidates are read
    query = below.embeddings[5]
    assert opened.search(query, 5) == below.search(query, 5)


def test_quantized_copy_persists_and_reloads_without_rebuilding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    search = DenseSearch(exact_below=1)
    built = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=search)
    assert built.quantized is not None
    query = built.embeddings[3]

    def no_build(*args: object, **kwargs: object) -> QuantizedIndex:
        raise AssertionError("the saved quantized index should have been loaded")

    monkeypatch.setattr(QuantizedIndex, "build", no_build)
    reopened = open_dense(tmp_path, search)
    assert reopened.quantized is not None and reopened.quantized.fingerprint == built.quantized.fingerprint
    assert reopened.quantized.spec == built.quantized.spec
    assert reopened.search(query, 5) == built.search(query, 5)
    found = built.quantized.candidates(query, 50).tolist()
    assert reopened.quantized.candidates(query, 50).tolist() == found
    encoder = HashingEncoder()
    load_or_build_dense(tmp_path, TEXTS, encoder=encoder, search=search)
    assert encoder.calls == 0


def test_fingerprint_change_rebuilds_the_quantized_copy(tmp_path: Path) -> None:
    search = DenseSearch(exact_below=1)
    first = load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=search)
    changed = [*TEXTS[:-1], "un tout autre texte"]
    second = load_or_build_dense(tmp_path, changed, encoder=HashingEncoder(), search=search)
    assert second.fingerprint != first.fingerprint
    saved = QuantizedIndex.load(tmp_path / "quantized")
    assert saved.fingerprint == quantized_fingerprint(second.fingerprint, "RR64,PQ32x4fs")
    assert second.search(second.embeddings[N - 1], 1)[0].chunk_idx == N - 1

    # A copy left by another index or of another kind (or half-written) is never used: it is rebuilt.
    meta = tmp_path / "quantized" / "index.json"
    for other in ("quantized-v1:RR64,PQ32x4fs:other", quantized_fingerprint(second.fingerprint, "SQ8")):
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "fingerprint": other}))
        reopened = open_dense(tmp_path, search)
        assert reopened.quantized is not None
        assert reopened.quantized.fingerprint == quantized_fingerprint(second.fingerprint, "RR64,PQ32x4fs")
    (tmp_path / "quantized" / "index.faiss").write_bytes(b"not an index")
    assert open_dense(tmp_path, search).search(second.embeddings[N - 1], 1)[0].chunk_idx == N - 1
    assert QuantizedIndex.load(tmp_path / "quantized").n_docs == len(changed)


def test_the_int8_copy_of_earlier_versions_is_removed(tmp_path: Path) -> None:
    search = DenseSearch(exact_below=1)
    load_or_build_dense(tmp_path, TEXTS, encoder=HashingEncoder(), search=search)
    legacy = tmp_path / "int8"
    legacy.mkdir()
    (legacy / "int8.faiss").write_bytes(b"x" * 100)
    (legacy / "int8.json").write_text("{}")
    assert open_dense(tmp_path, search).quantized is not None
    assert not legacy.exists()
