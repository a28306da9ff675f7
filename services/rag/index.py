"""Per-dataset retrieval indexes: chunks, BM25 and dense, persisted under the data directory and rebuilt
only when the corpus or the settings change.

An index is identified by a fingerprint of the corpus version (document count and latest change), the
chunking configuration, the language, the analyzer version and the embedding model. Loaded indexes are
kept in memory per fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import threading
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


_cache: dict[tuple[str, str, str, DenseSearch], LoadedIndex] = {}
_lock = threading.Lock()


def _model(settings: Settings) -> str:
    return settings.embeddings.model or default_model_path()


def _encoder(settings: Settings) -> SentenceTransformerEncoder:
    e = settings.embeddings
    return SentenceTransformerEncoder(
        _model(settings),
        batch_size=e.batch_size,
        backend=e.backend,
        cache_dir=e.cache_dir,
        threads=e.threads,
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


def build_part(session: Session, settings: Settings, dataset_id: int, part: str) -> dict[str, Any]:
    """Build (or load when up to date) one part of the dataset's index and record its state.

    The build reads the corpus and can take minutes (encoding): callers that share the database should use
    ``build_part_files`` in a read transaction and ``record_part`` in a short write transaction.
    """
    fp, directory, details = build_part_files(session, settings, dataset_id, part)
    record_part(session, dataset_id, part, fp, directory, details)
    return details


def record_part(
    session: Session, dataset_id: int, part: str, fp: str, directory: Path, details: dict[str, Any]
) -> None:
    IndexRepository(session).upsert(dataset_id, part, fp, str(directory), details)


def build_part_files(
    session: Session, settings: Settings, dataset_id: int, part: str
) -> tuple[str, Path, dict[str, Any]]:
    """Write one part of the index to disk (or keep it when up to date).

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
            encoder=_encoder(settings),
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


def load(session: Session, settings: Settings, dataset_id: int, mode: str) -> LoadedIndex:
    """The dataset's index for ``mode``; raises Conflict (409) when it is missing or stale."""
    fp = require(session, settings, dataset_id, mode)
    directory = index_dir(settings, dataset_id)
    search = _dense_search(settings)
    key = (str(directory), fp, mode, search)
    with _lock:
        if key in _cache:
            return _cache[key]
        raw = json.loads((directory / "chunks.json").read_text(encoding="utf-8"))
        chunks = [ChunkRecord(**c) for c in raw]
        bm25 = BM25Index.load(directory / "bm25") if "bm25" in NEEDS[mode] else None
        dense = (
            open_dense(
                directory / "dense",
                search,
                cache_dir=settings.embeddings.cache_dir,
                threads=settings.embeddings.threads,
            )
            if "dense" in NEEDS[mode]
            else None
        )
        r = settings.retrieval
        retriever = HybridRetriever(
            bm25, dense, rrf_k=r.rrf_k, weights={"bm25": r.bm25_weight, "dense": r.dense_weight}
        )
        loaded = LoadedIndex(fp, chunks, retriever)
        _cache[key] = loaded
        return loaded
