"""Int8 exact search over the dense embeddings: the candidate stage of dense retrieval on large corpora.

Exact float32 search reads every embedding for every query (1.5 GB at 1M chunks x 384 dimensions), so it is
bound by memory bandwidth. This index keeps one signed byte per dimension (a quarter of the bytes) and scans
it with faiss's ``ScalarQuantizer`` kernels (``QT_8bit_direct_signed``: no training, the codes are the
rounded values). It is still an exhaustive scan, so unlike graph (HNSW) or partition (IVF) indexes its recall
does not depend on how clustered the embeddings are; the quantisation error only reorders near-ties, and the
dense index re-scores a generous candidate list with the float32 vectors, so returned scores are the exact
cosines. bench/retrieval.py measures the choice against exact search, IVF and HNSW.

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

__all__ = ["Int8Index", "int8_fingerprint"]

FORMAT_VERSION = 1
_INDEX_FILE = "int8.faiss"
_META_FILE = "int8.json"
_BLOCK = 65_536
# Largest magnitude a code may take; the scale maps the corpus's largest |component| onto it.
_CODE_MAX = 127.0


def _faiss() -> Any:
    import faiss  # type: ignore[import-untyped,unused-ignore]

    # One query is one sequential scan: OpenMP threads over it were twice as slow on 2 shared cores (they
    # wait on each other), and the service already searches in parallel across requests.
    faiss.omp_set_num_threads(1)
    return faiss


def int8_fingerprint(dense_fingerprint: str) -> str:
    """Fingerprint of the int8 index of the dense index whose fingerprint is given."""
    return f"int8-v{FORMAT_VERSION}:{dense_fingerprint}"


class Int8Index:
    """Signed 8-bit codes of a float32 embedding matrix, searched exhaustively by inner product."""

    def __init__(self, index: Any, scale: float, fingerprint: str) -> None:
        self._index = index
        self.scale = scale
        self.fingerprint = fingerprint

    @classmethod
    def build(cls, embeddings: NDArray[np.float32], *, fingerprint: str = "") -> Int8Index:
        """Quantise ``embeddings`` (2-D float32, any row norm) with one global scale, block by block.

        Raises ``ValueError`` unless ``embeddings`` is 2-D.
        """
        faiss = _faiss()
        if embeddings.ndim != 2:
            raise ValueError("embeddings must be a 2-D array")
        n, dim = embeddings.shape
        peak = 0.0
        for lo in range(0, n, _BLOCK):
            peak = max(peak, float(np.abs(embeddings[lo : lo + _BLOCK]).max(initial=0.0)))
        scale = _CODE_MAX / peak if peak > 0 else 1.0
        index = faiss.IndexScalarQuantizer(
            dim, faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
        )
        for lo in range(0, n, _BLOCK):
            index.add(cls._codes(embeddings[lo : lo + _BLOCK], scale))
        return cls(index, scale, fingerprint)

    @staticmethod
    def _codes(vectors: NDArray[Any], scale: float) -> NDArray[np.float32]:
        scaled = np.asarray(vectors, dtype=np.float32) * np.float32(scale)
        return np.ascontiguousarray(np.clip(np.rint(scaled), -_CODE_MAX, _CODE_MAX), dtype=np.float32)

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
        """Bytes held by the codes."""
        return self.n_docs * self.dimension

    def candidates(self, query: NDArray[np.float32], n: int) -> NDArray[np.intp]:
        """Row ids of the ``n`` best rows for ``query`` (1-D) by quantised inner product, best first.

        Raises ``ValueError`` on a dimension mismatch.
        """
        if query.shape[-1] != self.dimension:
            raise ValueError(f"query has dimension {query.shape[-1]}, index has {self.dimension}")
        n = min(n, self.n_docs)
        if n <= 0:
            return np.empty(0, dtype=np.intp)
        # The query keeps its float precision: only the stored side is quantised.
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32) * np.float32(self.scale)
        _, ids = self._index.search(q, n)
        found: NDArray[np.intp] = ids[0][ids[0] >= 0].astype(np.intp)
        return found

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``int8.faiss`` and ``int8.json`` in ``directory`` by atomic renames; raises ``OSError``."""
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
        meta = {"format": FORMAT_VERSION, "scale": self.scale, "fingerprint": self.fingerprint}
        write_json_atomic(path / _META_FILE, meta)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Int8Index:
        """Load an index written by :meth:`save`.

        Raises ``FileNotFoundError`` if files are missing, ``ValueError`` on a format mismatch.
        """
        faiss = _faiss()
        path = Path(directory)
        meta = json.loads((path / _META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported int8 index format {meta.get('format')!r}")
        if not (path / _INDEX_FILE).is_file():
            raise FileNotFoundError(path / _INDEX_FILE)
        try:
            index = faiss.read_index(str(path / _INDEX_FILE))
        except RuntimeError as exc:  # faiss reports unreadable files as RuntimeError
            raise ValueError(f"unreadable int8 index: {exc}") from exc
        return cls(index, float(meta["scale"]), str(meta["fingerprint"]))
