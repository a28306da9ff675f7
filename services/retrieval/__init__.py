"""Retrieval domain logic: chunking, text analysis, BM25 and dense indexes, fusion, extraction.

Pure Python (no web framework, no database). ``dense`` imports torch/sentence-transformers only
when a model is actually used, so importing this package stays cheap.
"""

from .bm25 import BM25Index, BM25Params, bm25_fingerprint, load_or_build_bm25
from .chunking import (
    DEFAULT_CHUNK_WORDS,
    DEFAULT_OVERLAP_WORDS,
    DEFAULT_PAGE_WORDS,
    Chunk,
    Page,
    chunk_document,
    split_pages,
)
from .dense import (
    DenseIndex,
    DenseSearch,
    Encoder,
    ModelStore,
    SentenceTransformerEncoder,
    default_model_path,
    dense_fingerprint,
    load_or_build_dense,
    normalize_rows,
    open_dense,
)
from .extractive import (
    I_DONT_KNOW,
    ExtractiveAnswer,
    SelectedSentence,
    extractive_answer,
    i_dont_know,
)
from .fusion import HybridRetriever, Mode, reciprocal_rank_fusion, retrieve
from .quantized import QuantizedIndex
from .results import ScoredChunk, corpus_fingerprint, top_k
from .segment import WORD_RE, count_words, sentence_spans, word_spans
from .text import ANALYZER_VERSION, Analyzer, analyzer_for, fold_accents, get_analyzer, normalize_language

__all__ = [
    "ANALYZER_VERSION",
    "DEFAULT_CHUNK_WORDS",
    "DEFAULT_OVERLAP_WORDS",
    "DEFAULT_PAGE_WORDS",
    "I_DONT_KNOW",
    "WORD_RE",
    "Analyzer",
    "BM25Index",
    "BM25Params",
    "Chunk",
    "DenseIndex",
    "DenseSearch",
    "Encoder",
    "ExtractiveAnswer",
    "HybridRetriever",
    "Mode",
    "ModelStore",
    "Page",
    "QuantizedIndex",
    "ScoredChunk",
    "SelectedSentence",
    "SentenceTransformerEncoder",
    "analyzer_for",
    "bm25_fingerprint",
    "chunk_document",
    "corpus_fingerprint",
    "count_words",
    "default_model_path",
    "dense_fingerprint",
    "extractive_answer",
    "fold_accents",
    "get_analyzer",
    "i_dont_know",
    "load_or_build_bm25",
    "load_or_build_dense",
    "normalize_language",
    "normalize_rows",
    "open_dense",
    "reciprocal_rank_fusion",
    "retrieve",
    "sentence_spans",
    "split_pages",
    "top_k",
    "word_spans",
]
