"""services.rag: generation prompts, the loaded-index cache, chunking from the store, and the planning of
index and generation jobs (no index is built, no model loaded)."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from services.config import Settings
from services.datasets import service as datasets
from services.datasets.schemas import ChunkingConfig, DatasetCreate
from services.errors import Conflict, InvalidItems
from services.rag import index
from services.rag import service as rag
from services.rag.index import IndexCache, LoadedIndex
from services.rag.prompts import SYSTEM, build_messages
from services.rag.repository import IndexRepository
from services.retrieval.text import ANALYZER_VERSION
from services.runs import service as runs
from services.runs.schemas import RunCreate
from tests.unit.services.factories import DOC_TEXT, dataset, rows, run


def test_prompts_number_the_chunks_in_rank_order() -> None:
    system, user = build_messages("Where is Rome?", ["  Rome is in Italy. ", "Paris is in France."], "en-GB")
    assert system == {"role": "system", "content": SYSTEM["en"]}
    assert user["content"] == (
        "Excerpts (most relevant first):\n\n[1] Rome is in Italy.\n\n[2] Paris is in France.\n\n"
        "Question: Where is Rome?"
    )
    assert build_messages("Où ?", ["x"], "fr")[0]["content"] == SYSTEM["fr"]
    # A language without prompts is asked in English.
    assert build_messages("?", ["x"], "de")[0]["content"] == SYSTEM["en"]


def _loaded(tag: str) -> LoadedIndex:
    return LoadedIndex(fingerprint=tag, chunks=[], retriever=None)  # type: ignore[arg-type]


def _key(dataset_id: int, fp: str = "f1", mode: str = "bm25") -> Any:
    return (dataset_id, f"/idx/{dataset_id}", fp, mode, None)


def test_index_cache_is_lru_bounded_and_evicts_by_dataset() -> None:
    cache = IndexCache(size=2)
    loads: list[int] = []

    def load(d: int) -> Any:
        return lambda: loads.append(d) or _loaded(str(d))

    cache.get(_key(1), load(1))
    cache.get(_key(2), load(2))
    assert cache.get(_key(1), load(1)).fingerprint == "1"  # a hit: 1 is now the most recent
    cache.get(_key(3), load(3))  # over the bound: 2, the least recently used, goes
    assert loads == [1, 2, 3] and cache.datasets() == [1, 3]
    cache.get(_key(2), load(2))
    assert loads == [1, 2, 3, 2] and cache.datasets() == [3, 2]
    assert cache.evict(3) == 1 and cache.evict(3) == 0 and cache.datasets() == [2]


def test_a_new_fingerprint_replaces_the_older_index_of_that_mode() -> None:
    cache = IndexCache(size=10)
    cache.get(_key(1, "old", "bm25"), lambda: _loaded("old"))
    cache.get(_key(1, "old", "dense"), lambda: _loaded("old-dense"))
    cache.get(_key(1, "new", "bm25"), lambda: _loaded("new"))
    assert len(cache) == 2  # the old bm25 index is gone; the dense one (another mode) stays
    assert cache.get(_key(1, "old", "dense"), lambda: _loaded("again")).fingerprint == "old-dense"


def test_concurrent_gets_of_one_key_load_it_once() -> None:
    cache = IndexCache(size=2)
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> LoadedIndex:
        calls.append(1)
        started.set()
        release.wait(5)
        return _loaded("x")

    results: list[LoadedIndex] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(_key(1), slow))) for _ in range(3)]
    threads[0].start()
    started.wait(5)
    for t in threads[1:]:
        t.start()
    release.set()
    for t in threads:
        t.join(5)
    assert calls == [1] and len(results) == 3 and all(r is results[0] for r in results)


def test_chunks_are_spans_of_their_documents(db: Session) -> None:
    ds = datasets.create_dataset(
        db, DatasetCreate(name="c", chunking=ChunkingConfig(page_max_words=50, max_words=6, overlap_words=2))
    )
    datasets.import_documents(
        db,
        ds.id,
        rows({"external_id": "d1", "text": DOC_TEXT}, {"external_id": "d2", "text": "One two three."}),
    )
    chunks = index.make_chunks(db, ds.id)
    texts = {"d1": DOC_TEXT, "d2": "One two three."}
    assert {c.document_external_id for c in chunks} == {"d1", "d2"}
    for c in chunks:
        assert c.text == texts[c.document_external_id][c.start : c.end]
        assert len(c.text.split()) <= 6
    d1 = [c for c in chunks if c.document_external_id == "d1"]
    # 16 words in windows of 6 overlapping by 2: more than one chunk, covering the whole text.
    assert len(d1) > 1 and d1[0].start == 0 and d1[-1].end == len(DOC_TEXT.rstrip())


def test_index_job_plan_and_fingerprint(db: Session, settings: Settings) -> None:
    empty = datasets.create_dataset(db, DatasetCreate(name="empty"))
    with pytest.raises(InvalidItems) as exc:
        rag.create_index_job(db, settings, empty.id, force=False)
    assert [(e.field, e.reason) for e in exc.value.items] == [("documents", "empty")]
    ds = dataset(db)
    job = rag.create_index_job(db, settings, ds, force=False)
    assert (job.kind, job.total, job.params.dataset_id, job.params.force) == ("index", 3, ds, False)
    n, latest = IndexRepository(db).corpus_version(ds)
    config = {
        "corpus": [n, latest],
        "chunking": {"page_max_words": 1000, "max_words": 200, "overlap_words": 0},
        "language": "en",
        "analyzer": ANALYZER_VERSION,
        "model": Path(index._model(settings)).name,
    }
    if settings.embeddings.backend != "torch":
        config["backend"] = settings.embeddings.backend
    expected = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:24]
    assert job.summary.fingerprint == expected and job.summary.up_to_date is False
    assert n == 1
    # Nothing built: every mode is refused, naming what is missing.
    with pytest.raises(Conflict, match=r"dataset is not indexed for mode 'bm25' \(missing: chunks, bm25\)"):
        index.require(db, settings, ds, "bm25")


def test_generate_job_refusals(db: Session, settings: Settings) -> None:
    ds = dataset(db)
    foreign = runs.create_run(db, ds, RunCreate(name="foreign", system={"retriever": "colbert"}))
    with pytest.raises(InvalidItems) as exc:
        rag.create_generate_job(db, settings, foreign.id, regenerate=False)
    assert [e.field for e in exc.value.items] == ["system.retriever"]
    llm = runs.create_run(db, ds, RunCreate(name="llm", system={"retriever": "bm25", "generator": "llm"}))
    if not settings.generator.configured:
        with pytest.raises(InvalidItems) as exc:
            rag.create_generate_job(db, settings, llm.id, regenerate=False)
        assert [e.field for e in exc.value.items] == ["system.generator"]
    plain = run(db, ds, "plain")
    with pytest.raises(Conflict, match="not indexed"):
        rag.create_generate_job(db, settings, plain, regenerate=False)
