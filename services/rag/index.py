"""Per-dataset retrieval indexes: chunks, BM25 and dense, persisted under the data directory and rebuilt
only when the corpus or the settings change.

An index is identified by a fingerprint of the corpus version (document count and latest change), the
chunking configuration, the language, the analyzer version and the embedding model. Loaded indexes are
kept in an ``IndexCache`` owned by the process's resources (``services.resources``): the least recently
used past its bound are dropped, and so are a dataset's when it is deleted or its index is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.datasets.service import get_dataset
from services.errors import Conflict
from services.rag.repository import IndexRepository
from services.retrieval import (
    ANALYZER_VERSION,
    BM25Index,
    DenseSearch,
    HybridRetriever,
    ModelStore,
    SentenceTransformerEncoder,
    chunk_document,
    default_model_path,
    get_analyzer,
    load_or_build_bm25,
    load_or_build_dense,
    open_dense,
)

PARTS = ("chunks", "bm25", "dense")
NEEDS = {"bm25": ("chunks", "bm25"), "dense": ("chunks", "dense"), "hybrid": PARTS}


@dataclass(frozen=True)
class ChunkRecord:
    document_id: int
    document_external_id: str
    start: int
    end: int
    text: str


@dataclass
class LoadedIndex:
    fingerprint: str
    chunks: list[ChunkRecord]
    retriever: HybridRetriever


# dataset id, index directory, corpus fingerprint, mode, dense search settings
CacheKey = tuple[int, str, str, str, DenseSearch]


class IndexCache:
    """Loaded indexes (with their query encoders' models, in ``models``), at most ``size`` of them, the least
    recently used dropped first. A dataset's entries are dropped when it is deleted (``evict``) and when one
    of its modes is loaded at a new fingerprint (the older one can never be asked for again)."""

    def __init__(self, size: int, models: ModelStore | None = None) -> None:
        self.size = max(1, size)
        self.models = models if models is not None else ModelStore()
        self._entries: OrderedDict[CacheKey, LoadedIndex] = OrderedDict()
        self._lock = threading.Lock()
        # Loads run outside ``_lock`` (they read files for seconds), one at a time per key.
        self._loading: dict[CacheKey, threading.Lock] = {}

    def get(self, key: CacheKey, load: Callable[[], LoadedIndex]) -> LoadedIndex:
        with self._lock:
            hit = self._hit(key)
            if hit is not None:
                return hit
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                hit = self._hit(key)
                if hit is not None:
                    return hit
            loaded = load()
            with self._lock:
                self._loading.pop(key, None)
                for other in [k for k in self._entries if k[0] == key[0] and k[3:] == key[3:]]:
                    del self._entries[other]
                self._entries[key] = loaded
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
            return loaded

    def _hit(self, key: CacheKey) -> LoadedIndex | None:
        loaded = self._entries.get(key)
        if loaded is not None:
            self._entries.move_to_end(key)
        return loaded

    def evict(self, dataset_id: int) -> int:
        """Drop every loaded index of the dataset; how many there were."""
        with self._lock:
            gone = [k for k in self._entries if k[0] == dataset_id]
            for key in gone:
                del self._entries[key]
            return len(gone)

    def datasets(self) -> list[int]:
        """The datasets with a loaded index, least recently used first."""
        with self._lock:
            return list(dict.fromkeys(k[0] for k in self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
        self.models.clear()


def _model(settings: Settings) -> str:
    return settings.embeddings.model or default_model_path()


def _encoder(settings: Settings, models: ModelStore | None) -> SentenceTransformerEncoder:
    e = settings.embeddings
    return SentenceTransformerEncoder(
        _model(settings),
        batch_size=e.batch_size,
        backend=e.backend,
        cache_dir=e.cache_dir,
        threads=e.threads,
        models=models,
    )


def _dense_search(settings: Settings) -> DenseSearch:
    r = settings.retrieval
    return DenseSearch(exact_below=r.dense_exact_below, rerank=r.dense_rerank)


def fingerprint(session: Session, settings: Settings, dataset_id: int) -> tuple[str, dict[str, Any]]:
    dataset = get_dataset(session, dataset_id)
    n_docs, latest = IndexRepository(session).corpus_version(dataset_id)
    config = {
        "corpus": [n_docs, latest],
        "chunking": dataset.chunking,
        "language": dataset.language,
        "analyzer": ANALYZER_VERSION,
        "model": Path(_model(settings)).name,
    }
    if settings.embeddings.backend != "torch":  # torch indexes keep their fingerprint
        config["backend"] = settings.embeddings.backend
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:24]
    return digest, config


def index_dir(settings: Settings, dataset_id: int) -> Path:
    # One directory per dataset: the BM25 and dense layers check their own content fingerprint there, so
    # an unchanged corpus is loaded, not rebuilt, whatever the bookkeeping says.
    return settings.data_dir / "indexes" / str(dataset_id)


def make_chunks(session: Session, dataset_id: int) -> list[ChunkRecord]:
    dataset = get_dataset(session, dataset_id)
    cfg = dataset.chunking or {}
    out = []
    for doc in IndexRepository(session).documents(dataset_id):
        for c in chunk_document(
            doc.external_id,
            doc.text,
            page_words=int(cfg.get("page_max_words", 1000)),
            chunk_words=int(cfg.get("max_words", 200)),
            overlap_words=int(cfg.get("overlap_words", 0)),
        ):
            out.append(ChunkRecord(doc.id, doc.external_id, c.start, c.end, c.text))
    return out


def build_part(
    session: Session, settings: Settings, dataset_id: int, part: str, models: ModelStore | None = None
) -> dict[str, Any]:
    """Build (or load when up to date) one part of the dataset's index and record its state.

    The build reads the corpus and can take minutes (encoding): callers that share the database should use
    ``build_part_files`` in a read transaction and ``record_part`` in a short write transaction.
    """
    fp, directory, details = build_part_files(session, settings, dataset_id, part, models)
    record_part(session, dataset_id, part, fp, directory, details)
    return details


def record_part(
    session: Session, dataset_id: int, part: str, fp: str, directory: Path, details: dict[str, Any]
) -> None:
    IndexRepository(session).upsert(dataset_id, part, fp, str(directory), details)


def build_part_files(
    session: Session, settings: Settings, dataset_id: int, part: str, models: ModelStore | None = None
) -> tuple[str, Path, dict[str, Any]]:
    """Write one part of the index to disk (or keep it when up to date), encoding with the models of
    ``models`` (None: a model loaded for this build).

    Returns the corpus fingerprint, the index directory and the part's details."""
    fp, config = fingerprint(session, settings, dataset_id)
    directory = index_dir(settings, dataset_id)
    directory.mkdir(parents=True, exist_ok=True)
    chunks = make_chunks(session, dataset_id)
    texts = [c.text for c in chunks]
    details: dict[str, Any] = {"chunks": len(chunks), **config}
    if part == "chunks":
        (directory / "chunks.json").write_text(
            json.dumps([c.__dict__ for c in chunks], ensure_ascii=False), encoding="utf-8"
        )
    elif part == "bm25":
        language = get_dataset(session, dataset_id).language
        load_or_build_bm25(directory / "bm25", texts, get_analyzer(language))
    elif part == "dense":
        load_or_build_dense(
            directory / "dense",
            texts,
            encoder=_encoder(settings, models),
            search=_dense_search(settings),
        )
    else:
        raise ValueError(f"unknown index part {part!r}")
    return fp, directory, details


def up_to_date(session: Session, settings: Settings, dataset_id: int) -> bool:
    fp, _ = fingerprint(session, settings, dataset_id)
    states = IndexRepository(session).states(dataset_id)
    return all(p in states and states[p].fingerprint == fp for p in PARTS)


def require(session: Session, settings: Settings, dataset_id: int, mode: str) -> str:
    """The fingerprint of the dataset's index for ``mode``; raises Conflict (409) when it is missing or
    stale. Reads the store only, no index file: a write transaction can check it without loading the index
    (a cold load can take seconds, and would hold the transaction's locks meanwhile)."""
    fp, _ = fingerprint(session, settings, dataset_id)
    states = IndexRepository(session).states(dataset_id)
    missing = [p for p in NEEDS[mode] if p not in states or states[p].fingerprint != fp]
    if missing:
        stale = any(p in states for p in missing)
        raise Conflict(
            f"the {'index is out of date' if stale else 'dataset is not indexed'} for mode {mode!r} "
            f"(missing: {', '.join(missing)}); build it with POST /datasets/{dataset_id}/index"
        )
    return fp


def load(session: Session, settings: Settings, dataset_id: int, mode: str, cache: IndexCache) -> LoadedIndex:
    """The dataset's index for ``mode``, from ``cache`` or read into it; raises Conflict (409) when it is
    missing or stale."""
    fp = require(session, settings, dataset_id, mode)
    directory = index_dir(settings, dataset_id)
    search = _dense_search(settings)

    def read() -> LoadedIndex:
        raw = json.loads((directory / "chunks.json").read_text(encoding="utf-8"))
        chunks = [ChunkRecord(**c) for c in raw]
        bm25 = BM25Index.load(directory / "bm25") if "bm25" in NEEDS[mode] else None
        dense = (
            open_dense(
                directory / "dense",
                search,
                cache_dir=settings.embeddings.cache_dir,
                threads=settings.embeddings.threads,
                models=cache.models,
            )
            if "dense" in NEEDS[mode]
            else None
        )
        r = settings.retrieval
        retriever = HybridRetriever(
            bm25, dense, rrf_k=r.rrf_k, weights={"bm25": r.bm25_weight, "dense": r.dense_weight}
        )
        return LoadedIndex(fp, chunks, retriever)

    return cache.get((dataset_id, str(directory), fp, mode, search), read)
