"""A compressed copy of the dense embeddings that yields candidates for dense retrieval on large corpora.

Exact float32 search reads every embedding for every query (1.5 GB at 1M chunks x 384 dimensions), so it is
bound by memory bandwidth, and slows down further when other processes share the memory bus. This index
keeps 4-bit product-quantisation codes, one per pair of dimensions (96 bytes per 384-dimension row, a
sixteenth of the float32 row), and scans them with faiss's fast-scan kernels, which keep the query's
lookup tables in SIMD registers. A random rotation comes first, so that no pair of dimensions holds most
of the variance (sentence embeddings have a few dominant dimensions; without it, recall fell to 0.55 on
such data in tests/unit/retrieval/test_quantized.py). It is still an exhaustive scan, so its recall does
not depend on how clustered the embeddings are; the codes only reorder near neighbours, and the dense
index re-scores a generous candidate list with the float32 vectors, so returned scores are the exact
cosines.

bench/retrieval.py measures the choice against exact search, the int8 scan this replaced (4x the bytes),
RaBitQ, PQ without the rotation, IVF and HNSW, by recall@5 against exact search.

``spec`` is a faiss index-factory string, recorded with the index, so the bench can build the
alternatives through the same class. Corpora under :data:`MIN_TRAIN_ROWS` rows get an exact ``Flat``
index: too few rows to train codes on, and small enough to scan in full.

faiss is imported on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .files import write_json_atomic

__all__ = ["MIN_TRAIN_ROWS", "QuantizedIndex", "default_spec", "quantized_fingerprint"]

FORMAT_VERSION = 1
_INDEX_FILE = "index.faiss"
_META_FILE = "index.json"
_BLOCK = 65_536
#: Rows drawn (seeded) to train the codes; faiss itself keeps at most 256 per centroid of each sub-space.
TRAIN_SAMPLE = 65_536
#: Below this many rows the index is exact (``Flat``).
MIN_TRAIN_ROWS = 256


def _faiss() -> Any:
    import faiss  # type: ignore[import-untyped,unused-ignore]

    # One query is one sequential scan: OpenMP threads over it were twice as slow on 2 shared cores (they
    # wait on each other), and the service already searches in parallel across requests.
    faiss.omp_set_num_threads(1)
    return faiss


def default_spec(dimension: int) -> str:
    """The service's index for ``dimension``: a random rotation, then 4-bit PQ over pairs of dimensions in
    the fast-scan layout (over single dimensions when ``dimension`` is odd)."""
    sub = dimension // 2 if dimension % 2 == 0 else dimension
    return f"RR{dimension},PQ{sub}x4fs"


def quantized_fingerprint(dense_fingerprint: str, spec: str) -> str:
    """Fingerprint of the ``spec`` index of the dense index whose fingerprint is given."""
    return f"quantized-v{FORMAT_VERSION}:{spec}:{dense_fingerprint}"


class QuantizedIndex:
    """A faiss index over a float32 embedding matrix, searched by inner product for candidate rows."""

    def __init__(self, index: Any, spec: str, fingerprint: str) -> None:
        self._index = index
        self.spec = spec
        self.fingerprint = fingerprint

    @classmethod
    def build(
        cls,
        embeddings: NDArray[np.float32],
        *,
        spec: str | None = None,
        fingerprint: str = "",
        seed: int = 0,
    ) -> QuantizedIndex:
        """Train (on a seeded sample of rows) and fill a ``spec`` index (default :func:`default_spec`).

        ``embeddings`` is 2-D float32 and may be memory-mapped: it is read block by block. Under
        :data:`MIN_TRAIN_ROWS` rows the index is ``Flat`` whatever ``spec`` says. Raises ``ValueError``
        unless ``embeddings`` is 2-D, and faiss's ``RuntimeError`` for a spec it cannot build.
        """
        faiss = _faiss()
        if embeddings.ndim != 2:
            raise ValueError("embeddings must be a 2-D array")
        n, dim = embeddings.shape
        spec = spec or default_spec(dim)
        if n < MIN_TRAIN_ROWS:
            spec = "Flat"
        index = faiss.index_factory(dim, spec, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            rows = np.arange(n)
            if n > TRAIN_SAMPLE:
                rows = np.sort(np.random.default_rng(seed).choice(n, size=TRAIN_SAMPLE, replace=False))
            index.train(np.ascontiguousarray(embeddings[rows], dtype=np.float32))
        for lo in range(0, n, _BLOCK):
            index.add(np.ascontiguousarray(embeddings[lo : lo + _BLOCK], dtype=np.float32))
        return cls(index, spec, fingerprint)

    @property
    def n_docs(self) -> int:
        """Number of indexed rows."""
        return int(self._index.ntotal)

    @property
    def dimension(self) -> int:
        """Vector dimension."""
        return int(self._index.d)

    @property
    def nbytes(self) -> int:
        """Bytes held by the codes (rows x code size; the fast-scan layout pads to blocks of 32 rows)."""
        return self.n_docs * int(self._index.sa_code_size())

    def candidates(self, query: NDArray[np.float32], n: int) -> NDArray[np.intp]:
        """Row ids of the ``n`` best rows for ``query`` (1-D) by approximate inner product, best first.

        Raises ``ValueError`` on a dimension mismatch.
        """
        if query.shape[-1] != self.dimension:
            raise ValueError(f"query has dimension {query.shape[-1]}, index has {self.dimension}")
        n = min(n, self.n_docs)
        if n <= 0:
            return np.empty(0, dtype=np.intp)
        _, ids = self._index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), n)
        found: NDArray[np.intp] = ids[0][ids[0] >= 0].astype(np.intp)
        return found

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``index.faiss`` and ``index.json`` in ``directory`` by atomic renames; raises ``OSError``."""
        faiss = _faiss()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path, suffix=".faiss")
        os.close(fd)
        try:
            faiss.write_index(self._index, tmp)
            os.replace(tmp, path / _INDEX_FILE)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        meta = {"format": FORMAT_VERSION, "spec": self.spec, "fingerprint": self.fingerprint}
        write_json_atomic(path / _META_FILE, meta)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> QuantizedIndex:
        """Load an index written by :meth:`save`.

        Raises ``FileNotFoundError`` if files are missing, ``ValueError`` on a format mismatch or an
        unreadable index file.
        """
        faiss = _faiss()
        path = Path(directory)
        meta = json.loads((path / _META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported quantized index format {meta.get('format')!r}")
        if not (path / _INDEX_FILE).is_file():
            raise FileNotFoundError(path / _INDEX_FILE)
        try:
            index = faiss.read_index(str(path / _INDEX_FILE))
        except RuntimeError as exc:  # faiss reports unreadable files as RuntimeError
            raise ValueError(f"unreadable quantized index: {exc}") from exc
        return cls(index, str(meta["spec"]), str(meta["fingerprint"]))
