"""Retrieval benchmark: BM25 build/query cost, dense and hybrid latency, rank-bm25 comparison, encoding.

Not a test. Run from the repository root::

    python bench/retrieval.py                    # 10k, 100k and 1M chunks + MiniLM encoding
    python bench/retrieval.py --sizes 10k,100k   # fewer sizes
    python bench/retrieval.py --encode-texts 0   # skip the model
    python bench/retrieval.py --sizes "" --backends torch,torch:1,onnx,onnx-int8   # encoder backends only

Each corpus size runs in its own subprocess so that memory measurements start from a clean process:
the peak-memory column is the resident-set high-water mark during the build (``VmHWM``, reset
through ``/proc/self/clear_refs`` just before) minus the resident set just before the build
(``VmRSS``). When ``/proc`` is unavailable it falls back to the ``ru_maxrss`` delta, which only sees
growth beyond the process's previous peak; the output says which method was used.

Corpora are synthetic and French-like: pseudo-words built from French syllables (with accents),
drawn with Zipf frequencies (exponent 1.05 over 50,000 words) whose 40 most frequent ranks are real
French stop words. Queries are 2-5 content words of a random chunk plus 1-2 stop words.

Dense vectors cannot be encoded at 1M chunks here (MiniLM encodes ~25 chunks/s on 2 cores), so they are
drawn to look like MiniLM's: the model encodes the demo corpus's sentences once (--spectrum-sentences), and
chunk vectors are drawn from a Gaussian with that sample's mean and covariance, then normalised (random pairs
then have MiniLM's mean cosine, ~0.36, and its effective dimension). A query vector is correlated with one
random chunk's latent draw so that its cosine to that chunk matches the mean best cosine of the demo's real
questions to the demo sentences (~0.68). This is a single cloud without topic clusters: harder for partition
(IVF) and graph (HNSW) indexes than real corpora, where chunks of one document sit close together.

Dense search paths, side by side on the same vectors and queries (timings interleaved query by query, so
load from other processes hits every path alike): exact float32 (numpy, the path below the threshold),
the quantized index of the service (random rotation + 4-bit PQ fast scan) + exact re-scoring of k + rerank
candidates (the path from RAGMETA_RETRIEVAL__DENSE_EXACT_BELOW chunks on), the int8 exhaustive scan it
replaced (signed bytes under one scale, faiss QT_8bit_direct_signed, + the same re-scoring), and, for
the choice, faiss RaBitQ fast scan, PQ without the rotation, IVF-SQ8 (+ the same re-scoring) and HNSW
(up to --hnsw-max chunks: its build is slow).
recall@5 = share of the exact top-5 chunks found in the path's top-5. Hybrid is measured the same way
(BM25 + each dense path + RRF) against hybrid with exact dense search.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from services.retrieval.bm25 import BM25Index  # noqa: E402
from services.retrieval.dense import DEFAULT_RERANK, DenseIndex, DenseSearch, open_dense  # noqa: E402
from services.retrieval.fusion import HybridRetriever  # noqa: E402
from services.retrieval.quantized import QuantizedIndex, default_spec  # noqa: E402
from services.retrieval.text import get_analyzer  # noqa: E402

K = 5
DIM = 384
VOCAB_SIZE = 50_000
ZIPF_EXPONENT = 1.05
SYLLABLES = (
    "ma ti on re pri cha lé vé ment té ou in eau ca pé son ber dre ve gué tion è ré pa lo mi ra qué "
    "ein ist bou gre fon dé nou ssi é cor tan lai è au œu vi ni gna teur ai geon"
).split()
STOP_WORDS = (
    "de la le et les des en un du une que est pour qui dans a par plus pas au sur ne se ce il sont "
    "avec son à ou mais comme aux elle ses nous vous leur été où"
).split()
FRENCH_SENTENCES = [
    "L’abonnement mensuel coûte douze euros et peut être résilié à tout moment depuis l'espace client.",
    "Les étudiants bénéficient d'une réduction de moitié sur présentation d'un justificatif valide.",
    "La facture est envoyée par courriel au début de chaque mois et reste disponible en ligne.",
    "Le paiement par carte bancaire est accepté, tout comme le prélèvement automatique.",
    "Les colis sont livrés en trois à cinq jours ouvrés en France métropolitaine.",
    "Un retour est possible sous trente jours ; le remboursement intervient sous quinze jours.",
    "La garantie couvre les pannes pendant deux ans, mais pas les dommages causés par une chute.",
    "Le service client répond du lundi au vendredi, de neuf heures à dix-huit heures.",
    "Les données personnelles sont hébergées en Europe et ne sont jamais revendues à des tiers.",
    "Le mot de passe doit contenir au moins douze caractères, dont un chiffre et un symbole.",
    "La réunion du conseil municipal s'est tenue jeudi soir dans la salle des fêtes.",
    "Les chercheurs ont mesuré la température de l'eau à différentes profondeurs du lac.",
    "Le musée propose des visites guidées gratuites le premier dimanche de chaque mois.",
    "La nouvelle ligne de tramway reliera la gare au campus universitaire d'ici deux ans.",
    "Le rapport annuel souligne une hausse de la fréquentation des bibliothèques publiques.",
    "Les agriculteurs s'inquiètent de la sécheresse qui menace les récoltes de cet été.",
    "Le contrat prévoit une période d'essai de trois mois renouvelable une fois.",
    "L'entreprise a ouvert un second site de production près de Lyon l'année dernière.",
    "Pour toute réclamation, il convient d'écrire au service concerné en joignant les pièces utiles.",
    "Le festival accueille chaque année plusieurs milliers de visiteurs venus de toute l'Europe.",
]


# --------------------------------------------------------------------------- measurement helpers
def _proc_status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _release_free_memory() -> None:
    gc.collect()
    # Give freed heap pages back to the OS so that reusing them later shows up as RSS growth.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakMemory:
    """Peak and retained resident-memory growth of the enclosed block, in MiB."""

    def __init__(self) -> None:
        self.method = ""
        self.mib = 0.0
        self.retained_mib = 0.0

    def __enter__(self) -> PeakMemory:
        _release_free_memory()
        self._before = _proc_status_kib("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")  # resets VmHWM to the current RSS
            self.method = "VmHWM (reset via /proc/self/clear_refs) - VmRSS before"
        except OSError:
            self._before = None
        if self._before is None:
            self._before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.method = "ru_maxrss delta (only growth beyond the previous peak)"
        return self

    def __exit__(self, *exc: object) -> None:
        after = _proc_status_kib("VmHWM") if self.method.startswith("VmHWM") else None
        if after is None:
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.mib = max(0, after - int(self._before or 0)) / 1024
        _release_free_memory()
        now = _proc_status_kib("VmRSS")
        if now is not None and self.method.startswith("VmHWM"):
            self.retained_mib = max(0, now - int(self._before or 0)) / 1024


def timed_queries(fn: Callable[[int], object], n: int, warmup: int = 3) -> list[float]:
    for i in range(min(warmup, n)):
        fn(i)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- corpus generation
def make_vocabulary(rng: np.random.Generator) -> np.ndarray:
    words: set[str] = set()
    stops = set(STOP_WORDS)
    while len(words) < VOCAB_SIZE - len(STOP_WORDS):
        word = "".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 5))))
        if word not in stops:
            words.add(word)
    pseudo = sorted(words)
    rng.shuffle(pseudo)
    return np.array(STOP_WORDS + pseudo[: VOCAB_SIZE - len(STOP_WORDS)], dtype=object)


def _stride(words_per_chunk: int) -> int:
    return int(words_per_chunk * 1.2)


def make_corpus(n_chunks: int, words_per_chunk: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    vocab = make_vocabulary(rng)
    probs = 1.0 / np.arange(1, VOCAB_SIZE + 1) ** ZIPF_EXPONENT
    probs /= probs.sum()
    stride = _stride(words_per_chunk)
    ids = rng.choice(VOCAB_SIZE, size=n_chunks * stride, p=probs).astype(np.int32)
    # Chunk lengths vary by +-20% around the target, as real chunks do.
    lengths = rng.integers(int(words_per_chunk * 0.8), stride + 1, size=n_chunks)
    offsets = np.arange(n_chunks) * stride
    texts = [" ".join(vocab[ids[o : o + n]]) for o, n in zip(offsets.tolist(), lengths.tolist(), strict=True)]
    return vocab, ids, texts


def make_queries(
    vocab: np.ndarray, ids: np.ndarray, n_chunks: int, words_per_chunk: int, count: int, seed: int
) -> list[str]:
    rng = np.random.default_rng(seed + 1)
    queries = []
    for _ in range(count):
        c = int(rng.integers(n_chunks))
        start = c * _stride(words_per_chunk)
        chunk_ids = ids[start : start + int(words_per_chunk * 0.8)]
        content = np.unique(chunk_ids[chunk_ids >= 100])
        picked = rng.choice(content, size=min(len(content), int(rng.integers(2, 6))), replace=False)
        stops = rng.choice(len(STOP_WORDS), size=int(rng.integers(1, 3)))
        words = [str(vocab[i]) for i in picked] + [STOP_WORDS[i] for i in stops]
        rng.shuffle(words)
        queries.append(" ".join(words))
    return queries


# --------------------------------------------------------------------------- size worker
def run_size(n_chunks: int, args: argparse.Namespace) -> dict[str, Any]:
    words_per_chunk = 150 if n_chunks <= 100_000 else args.words_at_1m
    res: dict[str, Any] = {"chunks": n_chunks, "words_per_chunk": words_per_chunk}
    t0 = time.perf_counter()
    vocab, ids, texts = make_corpus(n_chunks, words_per_chunk, args.seed)
    queries = make_queries(vocab, ids, n_chunks, words_per_chunk, args.queries, args.seed)
    res["generate_s"] = time.perf_counter() - t0
    log(f"{n_chunks}: corpus generated in {res['generate_s']:.1f}s")

    analyzer = get_analyzer("fr")
    t0 = time.perf_counter()
    tokens = [analyzer(t) for t in texts]
    res["analyze_s"] = time.perf_counter() - t0
    res["avg_words"] = sum(len(t.split()) for t in texts) / n_chunks
    res["tokens"] = sum(map(len, tokens))
    del texts
    # Freeze the corpus objects so the cyclic GC does not rescan them during every later build.
    gc.collect()
    gc.freeze()
    log(f"{n_chunks}: analysed {res['tokens']:,} tokens in {res['analyze_s']:.1f}s")

    with PeakMemory() as mem:
        t0 = time.perf_counter()
        index = BM25Index.from_tokens(tokens, analyzer_config=analyzer.config)
        res["build_s"] = time.perf_counter() - t0
    res["build_peak_mib"], res["memory_method"] = mem.mib, mem.method
    res["build_retained_mib"] = mem.retained_mib
    res["index_mib"] = index.nbytes / 2**20
    res["vocabulary"] = len(index.vocabulary)
    log(f"{n_chunks}: BM25 built in {res['build_s']:.1f}s")

    query_tokens = [analyzer(q) for q in queries]
    bm25_ms = timed_queries(lambda i: index.search_text(queries[i], K), len(queries))
    res["bm25_p50_ms"], res["bm25_p95_ms"] = pct(bm25_ms, 50), pct(bm25_ms, 95)

    # rank-bm25 reference, within a time budget.
    res.update(run_rank_bm25(tokens, query_tokens, index, bm25_ms, args))

    res.update(run_dense(n_chunks, args, index, queries))
    return res


# --------------------------------------------------------------------------- dense paths
def run_spectrum(args: argparse.Namespace) -> dict[str, Any]:
    """Encode the demo's sentences and questions; save the Gaussian the size workers draw vectors from."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from services.retrieval.dense import SentenceTransformerEncoder

    sentences, questions = demo_sentences(args.spectrum_sentences)
    encoder = SentenceTransformerEncoder(batch_size=args.batch_size)
    rows, qvecs = encoder(sentences), encoder(questions)
    mean = rows.mean(axis=0)
    eigenvalues, basis = np.linalg.eigh(np.cov(rows - mean, rowvar=False))
    eigenvalues = np.clip(eigenvalues, 0, None)
    factor = (basis * np.sqrt(eigenvalues)).astype(np.float32)
    target = float((qvecs @ rows.T).max(axis=1).mean())
    pairs = rows @ rows.T
    pair_cos = float((pairs.sum() - np.trace(pairs)) / (len(rows) * (len(rows) - 1)))
    np.savez(args.spectrum_file, mean=mean.astype(np.float32), factor=factor, target=target)
    return {
        "sentences": len(sentences),
        "questions": len(questions),
        "pair_cos": pair_cos,
        "query_best_cos": target,
        "effective_dim": float(eigenvalues.sum() ** 2 / (eigenvalues**2).sum()),
    }


def draw_vectors(
    n: int, n_queries: int, spectrum_file: Path, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Chunk vectors, query vectors, each query's source chunk, and the queries' mean cosine to it."""
    spec = np.load(spectrum_file)
    mean, factor, target = spec["mean"], spec["factor"], float(spec["target"])
    dim = mean.shape[0]
    rng = np.random.default_rng(seed + 2)
    sources = rng.integers(n, size=n_queries)
    latent = np.empty((n_queries, dim), dtype=np.float32)
    vectors = np.empty((n, dim), dtype=np.float32)
    block = 1 << 16
    for lo in range(0, n, block):
        z = rng.standard_normal((min(block, n - lo), dim), dtype=np.float32)
        rows = mean + z @ factor.T
        vectors[lo : lo + len(z)] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        inside = (sources >= lo) & (sources < lo + len(z))
        latent[inside] = z[sources[inside] - lo]
    noise = rng.standard_normal((n_queries, dim), dtype=np.float32)

    def queries(rho: float) -> np.ndarray:
        rows = mean + (rho * latent + np.sqrt(1 - rho**2) * noise) @ factor.T
        out: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out

    def cosine(rho: float) -> float:
        return float(np.mean(np.sum(queries(rho) * vectors[sources], axis=1)))

    lo_rho, hi_rho = 0.0, 1.0  # the cosine grows with rho: bisect to the real questions' mean
    for _ in range(30):
        mid = (lo_rho + hi_rho) / 2
        lo_rho, hi_rho = (mid, hi_rho) if cosine(mid) < target else (lo_rho, mid)
    rho = (lo_rho + hi_rho) / 2
    return vectors, queries(rho).astype(np.float32), sources, cosine(rho)


def rss_kib() -> dict[str, int]:
    return {f: _proc_status_kib(f) or 0 for f in ("RssAnon", "RssFile")}


def interleaved(paths: dict[str, Callable[[int], Any]], n: int) -> tuple[dict[str, list[float]], dict]:
    """Run every path on query i before query i + 1, so that load from other processes hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    results: dict[str, list[Any]] = {name: [] for name in paths}
    for i in range(min(3, n)):
        for fn in paths.values():
            fn(i)
    for i in range(n):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            out = fn(i)
            times[name].append((time.perf_counter() - t0) * 1000)
            results[name].append([getattr(h, "chunk_idx", h) for h in out])
    return times, results


def recall_at(results: list[list[int]], truth: list[list[int]], k: int = K) -> float:
    found = sum(len(set(r[:k]) & set(t[:k])) for r, t in zip(results, truth, strict=True))
    return found / sum(min(k, len(t)) for t in truth)


class FaissPath:
    """An alternative candidate index (IVF-SQ8 or HNSW) with the dense index's exact re-scoring."""

    def __init__(self, index: Any, dense: DenseIndex, rerank: int) -> None:
        self.index, self.dense, self.rerank = index, dense, rerank

    def __call__(self, query: np.ndarray, k: int) -> list[int]:
        _, ids = self.index.search(query.reshape(1, -1), k + self.rerank)
        found = np.sort(ids[0][ids[0] >= 0])
        exact = self.dense.embeddings[found] @ query
        return found[np.lexsort((found, -exact))][:k].tolist()


def alternatives(
    vectors: np.ndarray, dense: DenseIndex, args: argparse.Namespace
) -> list[tuple[str, FaissPath, float, float]]:
    """RaBitQ and PQ fast scans, IVF-SQ8 (nprobe sweep) and, up to --hnsw-max chunks, HNSW: (label, path,
    build s, index MiB). The first two are built as the service builds its index (one thread)."""
    import faiss

    n, dim = vectors.shape
    out = []
    sub = dim // 2 if dim % 2 == 0 else dim
    for spec in (f"RR{dim},RaBitQfs", f"PQ{sub}x4fs"):
        t0 = time.perf_counter()
        flat = QuantizedIndex.build(vectors, spec=spec)
        build_s = time.perf_counter() - t0
        log(f"{n}: {spec} built in {build_s:.1f}s")
        path = FaissPath(flat._index, dense, args.rerank)
        out.append((f"{spec} + re-scoring", path, build_s, flat.nbytes / 2**20))
    faiss.omp_set_num_threads(2)  # builds use both cores; searches below run on one
    nlist = max(16, int(np.sqrt(n)))
    t0 = time.perf_counter()
    ivf = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(dim), dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    sample = np.random.default_rng(0).choice(n, size=min(n, 40 * nlist), replace=False)
    ivf.train(vectors[np.sort(sample)])
    ivf.add(vectors)
    ivf_s = time.perf_counter() - t0
    log(f"{n}: IVF-SQ8 nlist={nlist} built in {ivf_s:.1f}s")
    for nprobe in args.nprobe:
        params = faiss.SearchParametersIVF(nprobe=nprobe)
        path = FaissPath(_with_params(ivf, params), dense, args.rerank)
        out.append((f"IVF-SQ8 nlist={nlist} nprobe={nprobe} + re-scoring", path, ivf_s, n * dim / 2**20))
    if n <= args.hnsw_max:
        t0 = time.perf_counter()
        hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.add(vectors)
        hnsw_s = time.perf_counter() - t0
        log(f"{n}: HNSW M=32 built in {hnsw_s:.1f}s")
        for ef in (128, 256):
            path = FaissPath(_with_params(hnsw, faiss.SearchParametersHNSW(efSearch=ef)), dense, 0)
            out.append((f"HNSW M=32 efSearch={ef}", path, hnsw_s, (n * dim * 4 + n * 64 * 4) / 2**20))
    faiss.omp_set_num_threads(1)
    return out


class _with_params:  # reads as a function at the call sites
    def __init__(self, index: Any, params: Any) -> None:
        self.index, self.params = index, params

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        out: tuple[np.ndarray, np.ndarray] = self.index.search(q, k, params=self.params)
        return out


def dense_paths(dim: int) -> dict[str, str | None]:
    """Dense paths served through DenseIndex: name -> candidate index (None: exact search)."""
    return {"exact": None, "quantized": default_spec(dim), "int8": "int8 direct (former)"}


class FormerInt8:
    """The int8 candidate index the quantized one replaced, as it was built and searched: one global scale
    onto signed bytes, scanned exhaustively by faiss (``QT_8bit_direct_signed``), the query kept in float."""

    def __init__(self, vectors: np.ndarray) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        peak = max(float(np.abs(vectors[lo : lo + 65_536]).max()) for lo in range(0, len(vectors), 65_536))
        self.scale = np.float32(127.0 / peak)
        self.index = faiss.IndexScalarQuantizer(
            vectors.shape[1], faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
        )
        for lo in range(0, len(vectors), 65_536):
            codes = np.clip(np.rint(vectors[lo : lo + 65_536] * self.scale), -127, 127)
            self.index.add(np.ascontiguousarray(codes, dtype=np.float32))
        self.n_docs = int(self.index.ntotal)
        self.nbytes = self.n_docs * vectors.shape[1]

    def candidates(self, query: np.ndarray, n: int) -> np.ndarray:
        _, ids = self.index.search(query.reshape(1, -1) * self.scale, min(n, self.n_docs))
        out: np.ndarray = ids[0][ids[0] >= 0]
        return out


def run_dense(n: int, args: argparse.Namespace, bm25: BM25Index, queries: list[str]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    t0 = time.perf_counter()
    vectors, qvecs, _, qcos = draw_vectors(n, len(queries), args.spectrum_file, args.seed)
    res["query_source_cos"] = qcos
    log(f"{n}: dense vectors drawn in {time.perf_counter() - t0:.1f}s (query-source cos {qcos:.2f})")
    specs = dense_paths(vectors.shape[1])
    res["specs"] = specs
    with tempfile.TemporaryDirectory(prefix="ragmeta-bench-") as tmp:
        DenseIndex(vectors, assume_normalized=True, fingerprint="bench").save(tmp)
        # Build: the exact path has nothing to build beyond the embeddings; the service's path trains and
        # fills a faiss index (one thread, as the service does) and saves it.
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            QuantizedIndex.build(vectors).save(Path(tmp) / "quantized")
            res["quantized_build_s"] = time.perf_counter() - t0
        res["quantized_build_peak_mib"] = mem.mib
        log(f"{n}: {specs['quantized']} built in {res['quantized_build_s']:.1f}s")
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            former = FormerInt8(vectors)
            res["int8_build_s"] = time.perf_counter() - t0
        res["int8_build_peak_mib"] = mem.mib
        # Serving memory: what opening each path from disk adds to the process, and what the queries add.
        # The two paths with candidates share one memory map of the float32 rows.
        mapped = DenseIndex.load(tmp, mmap=True).embeddings
        paths: dict[str, DenseIndex] = {}
        for name, spec in specs.items():
            _release_free_memory()
            before = rss_kib()
            t0 = time.perf_counter()
            if spec is None:
                paths[name] = open_dense(tmp, DenseSearch(exact_below=n + 1))
            else:
                paths[name] = DenseIndex(mapped, assume_normalized=True)
                candidates = QuantizedIndex.load(Path(tmp) / name) if name == "quantized" else former
                paths[name].quantized = candidates  # type: ignore[assignment]
                paths[name].rerank = args.rerank
            res[f"{name}_open_s"] = time.perf_counter() - t0
            after = rss_kib()
            res[f"{name}_open_anon_mib"] = (after["RssAnon"] - before["RssAnon"]) / 1024
            quantized = paths[name].quantized
            res[f"{name}_index_mib"] = (
                quantized.nbytes if quantized is not None else paths[name].embeddings.nbytes
            ) / 2**20
        file_before = rss_kib()["RssFile"]
        times, found = interleaved(
            {f"dense_{name}": lambda i, d=dense: d.search(qvecs[i], K) for name, dense in paths.items()},
            len(queries),
        )
        res["queries_file_mib"] = (rss_kib()["RssFile"] - file_before) / 1024
        for name, ms in times.items():
            res[f"{name}_p50_ms"], res[f"{name}_p95_ms"] = pct(ms, 50), pct(ms, 95)
            res[f"{name}_recall5"] = recall_at(found[name], found["dense_exact"])
        truth = found["dense_exact"]

        hybrids = {name: HybridRetriever(bm25, dense) for name, dense in paths.items()}
        times, found = interleaved(
            {
                f"hybrid_{name}": lambda i, h=hybrid: h.retrieve(queries[i], K, query_vector=qvecs[i])
                for name, hybrid in hybrids.items()
            },
            len(queries),
        )
        for name, ms in times.items():
            res[f"{name}_p50_ms"], res[f"{name}_p95_ms"] = pct(ms, 50), pct(ms, 95)
            res[f"{name}_recall5"] = recall_at(found[name], found["hybrid_exact"])
        res["hybrid_candidates"] = hybrids["exact"].candidates

        others = []
        if args.compare:
            for label_, path, build_s, mib in alternatives(vectors, paths["exact"], args):
                times, got = interleaved({"p": lambda i, p=path: p(qvecs[i], K)}, len(queries))
                others.append(
                    {
                        "path": label_,
                        "build_s": build_s,
                        "index_mib": mib,
                        "p50_ms": pct(times["p"], 50),
                        "p95_ms": pct(times["p"], 95),
                        "recall5": recall_at(got["p"], truth),
                    }
                )
        res["alternatives"] = others
    return res


def run_rank_bm25(
    tokens: list[list[str]],
    query_tokens: list[list[str]],
    index: BM25Index,
    ours_ms: list[float],
    args: argparse.Namespace,
) -> dict[str, Any]:
    from rank_bm25 import BM25Okapi

    out: dict[str, Any] = {}
    sample = tokens[: max(1, len(tokens) // 50)]
    t0 = time.perf_counter()
    BM25Okapi(sample)
    estimate = (time.perf_counter() - t0) * len(tokens) / len(sample)
    out["ref_build_estimate_s"] = estimate
    if estimate > args.ref_build_budget:
        out["ref_skipped"] = f"build estimated at {estimate:.0f}s > budget {args.ref_build_budget:.0f}s"
        log(f"rank-bm25 skipped: {out['ref_skipped']}")
        return out
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        ref = BM25Okapi(tokens)
        out["ref_build_s"] = time.perf_counter() - t0
    out["ref_build_peak_mib"] = mem.mib
    out["ref_build_retained_mib"] = mem.retained_mib
    log(f"rank-bm25 built in {out['ref_build_s']:.1f}s")

    ref_ms: list[float] = []
    agree = 0
    max_diff = 0.0
    deadline = time.perf_counter() + args.ref_query_budget
    for i, q in enumerate(query_tokens[: args.ref_queries]):
        if i >= 3 and time.perf_counter() > deadline:
            break
        t0 = time.perf_counter()
        scores = ref.get_scores(q)
        np.argsort(scores)[::-1][:K]  # what rank_bm25.get_top_n does
        ref_ms.append((time.perf_counter() - t0) * 1000)
        # Compare with ties broken by lower index (rank_bm25's argsort order among ties is arbitrary).
        expected = np.lexsort((np.arange(len(scores)), -scores))[:K].tolist()
        hits = index.search(q, K, only_matching=False)
        agree += [h.chunk_idx for h in hits] == expected
        max_diff = max([max_diff] + [abs(h.score - scores[h.chunk_idx]) for h in hits])
    n = len(ref_ms)
    out["ref_queries"] = n
    out["ref_p50_ms"], out["ref_p95_ms"] = pct(ref_ms, 50), pct(ref_ms, 95)
    out["speedup_p50"] = pct(ref_ms, 50) / pct(ours_ms[:n], 50)
    out["speedup_mean"] = float(np.mean(ref_ms) / np.mean(ours_ms[:n]))
    out["top5_agree"] = f"{agree}/{n}"
    out["max_score_diff"] = max_diff
    return out


# --------------------------------------------------------------------------- encoding worker
def demo_sentences(limit: int | None = None) -> tuple[list[str], list[str]]:
    """The demo corpus's sentences of 4+ words and the demo questions."""
    from services.retrieval.segment import sentence_spans

    demo = ROOT / "data" / "demo"
    sentences = []
    for line in (demo / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        sentences += [text[a:b].strip() for a, b in sentence_spans(text) if len(text[a:b].split()) >= 4]
    questions = [
        json.loads(line)["question"]
        for line in (demo / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return sentences[:limit], questions


def encode_interleaved(
    encoders: dict[str, Any], texts: list[str], batch_size: int
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Each encoder's vectors of ``texts`` and its seconds spent encoding them.

    Every encoder encodes batch i before any encodes batch i + 1, so load from other processes hits them
    alike.
    """
    seconds = dict.fromkeys(encoders, 0.0)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in encoders}
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        for name, encode in encoders.items():
            t0 = time.perf_counter()
            parts[name].append(encode(batch))
            seconds[name] += time.perf_counter() - t0
    return {name: np.vstack(p) for name, p in parts.items()}, seconds


def run_encoding(args: argparse.Namespace) -> dict[str, Any]:
    """Encoding throughput and agreement of each backend with torch, measured batch by batch in turn."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from services.retrieval.dense import SentenceTransformerEncoder

    # "name" or "name:threads"; the first is the reference the others are compared with.
    backends = [b.strip() for b in str(args.backends).split(",") if b.strip()]
    rng = np.random.default_rng(args.seed + 3)
    texts = []
    for _ in range(args.encode_texts):
        picked = rng.choice(len(FRENCH_SENTENCES), size=int(rng.integers(6, 11)))
        texts.append(" ".join(FRENCH_SENTENCES[i] for i in picked))
    import torch

    default_threads = torch.get_num_threads()
    encoders, load_s = {}, {}
    for name in backends:
        backend, _, threads = name.partition(":")
        encoders[name] = SentenceTransformerEncoder(
            batch_size=args.batch_size, backend=backend, threads=int(threads) if threads else None
        )
        t0 = time.perf_counter()
        encoders[name](["warm-up"])
        load_s[name] = time.perf_counter() - t0  # includes the ONNX export when it is not cached yet

    vectors, seconds = encode_interleaved(encoders, texts, args.batch_size)
    ref = vectors[backends[0]]
    # Retrieval agreement on real text: the demo's sentences as the corpus, its questions as queries.
    sentences, questions = demo_sentences()
    corpus_vecs, corpus_s = encode_interleaved(encoders, sentences, args.batch_size)
    top5 = {}
    for name in backends:
        scores = encoders[name](questions) @ corpus_vecs[name].T
        top5[name] = np.argsort(-scores, axis=1, kind="stable")[:, :K]
    single = {name: [] for name in backends}  # type: dict[str, list[float]]
    for i in range(30):
        for name in backends:
            t0 = time.perf_counter()
            encoders[name]([f"Combien coûte l'abonnement numéro {i} ?"])
            single[name].append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {
        "texts": len(texts),
        "avg_words": float(np.mean([len(t.split()) for t in texts])),
        "batch_size": args.batch_size,
        "torch_threads": default_threads,
        "reference": backends[0],
        "sentences": len(sentences),
        "questions": len(questions),
        "backends": {},
    }
    ref_corpus = corpus_vecs[backends[0]]
    for name in backends:
        cos = np.sum(vectors[name] * ref, axis=1)
        cos_corpus = np.sum(corpus_vecs[name] * ref_corpus, axis=1)
        hits = [len(set(a) & set(b)) for a, b in zip(top5[name], top5[backends[0]], strict=True)]
        out["backends"][name] = {
            "model_load_s": load_s[name],
            "encode_s": seconds[name],
            "chunks_per_s": len(texts) / seconds[name],
            "speedup": seconds[backends[0]] / seconds[name],
            "cos_min": float(min(cos.min(), cos_corpus.min())),
            "cos_mean": float(np.concatenate([cos, cos_corpus]).mean()),
            "below_099": int((cos < 0.99).sum() + (cos_corpus < 0.99).sum()),
            "sentences_per_s": len(sentences) / corpus_s[name],
            "sentence_speedup": corpus_s[backends[0]] / corpus_s[name],
            "recall5": float(np.mean(hits) / K),
            "query_p50_ms": pct(single[name], 50),
            "query_p95_ms": pct(single[name], 95),
        }
    return out


def print_encoding(e: dict[str, Any]) -> None:
    print(
        f"\nDense encoding (all-MiniLM-L6-v2, CPU, batch {e['batch_size']}); backend:N = N threads, else the"
        f" library's default ({e['torch_threads']} torch threads, ONNX Runtime one per core); backends"
        f" interleaved batch by batch, compared with {e['reference']}. Chunks: {e['texts']}"
        f" French texts of ~{e['avg_words']:.0f} words (truncated at the model's 256 word pieces). Demo:"
        f" {e['sentences']} demo sentences encoded, then the {e['questions']} demo questions' dense top-5"
        " over them compared with the reference's (recall@5). cos = per-text cosine to the reference"
        " embedding, over"
        " both sets.\n"
    )
    header = (
        "| backend | chunks/s | ratio | demo sentences/s (ratio) | cos min / mean | texts cos < 0.99"
        " | recall@5 | query p50/p95 ms | load s (first: export) |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, b in e["backends"].items():
        print(
            f"| {name} | {b['chunks_per_s']:.1f} | {b['speedup']:.2f}x |"
            f" {b['sentences_per_s']:.1f} ({b['sentence_speedup']:.2f}x) |"
            f" {b['cos_min']:.4f} / {b['cos_mean']:.4f} | {b['below_099']} | {b['recall5']:.4f} |"
            f" {b['query_p50_ms']:.1f} / {b['query_p95_ms']:.1f} | {b['model_load_s']:.1f} |"
        )


# --------------------------------------------------------------------------- orchestration
def parse_size(value: str) -> int:
    value = value.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(value[-1:], 1)
    return int(float(value.rstrip("km")) * mult)


def fmt(value: Any, spec: str = ".1f") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def print_report(sizes: list[dict[str, Any]], encoding: dict[str, Any] | None, load: list[str]) -> None:
    print(f"\nRetrieval benchmark - {os.cpu_count()} CPUs, top-k = {K}, Python {sys.version.split()[0]}")
    print(f"1-min load average at start / end: {' / '.join(load)} (above {os.cpu_count()} = CPUs shared).")
    if sizes:
        print(
            f"Memory: peak = {sizes[0]['memory_method']}; retained = VmRSS after - before; both after"
            " gc.collect() + malloc_trim(0), in a fresh subprocess per size. arrays = index arrays' nbytes.\n"
        )
        header = (
            "| chunks | words/chunk | tokens | vocab | analyze s | BM25 build s | peak / retained MiB"
            " | arrays MiB | rank-bm25 build s | rank-bm25 peak / retained MiB |"
        )
        print(header)
        print("|" + "---|" * (header.count("|") - 1))
        for r in sizes:
            ref_build = (
                fmt(r.get("ref_build_s"))
                if "ref_build_s" in r
                else f"skipped (~{r['ref_build_estimate_s']:.0f})"
            )
            print(
                f"| {label(r['chunks'])} | {r['avg_words']:.0f} | {r['tokens']:,} | {r['vocabulary']:,} |"
                f" {fmt(r['analyze_s'])} | {fmt(r['build_s'], '.2f')} |"
                f" {fmt(r['build_peak_mib'], '.0f')} / {fmt(r['build_retained_mib'], '.0f')} |"
                f" {fmt(r['index_mib'], '.0f')} | {ref_build} |"
                f" {fmt(r.get('ref_build_peak_mib'), '.0f')} /"
                f" {fmt(r.get('ref_build_retained_mib'), '.0f')} |"
            )
        print()
        header = (
            "| chunks | bm25 p50/p95 ms | rank-bm25 p50/p95 ms | speed-up p50 (mean) | top-5 agree"
            " | max abs score diff |"
        )
        print(header)
        print("|" + "---|" * (header.count("|") - 1))
        for r in sizes:
            ref = (
                f"{fmt(r['ref_p50_ms'])} / {fmt(r['ref_p95_ms'])} (n={r['ref_queries']})"
                if "ref_p50_ms" in r
                else "skipped"
            )
            speed = f"{r['speedup_p50']:.0f}x ({r['speedup_mean']:.0f}x)" if "speedup_p50" in r else "-"
            print(
                f"| {label(r['chunks'])} | {fmt(r['bm25_p50_ms'], '.2f')} / {fmt(r['bm25_p95_ms'], '.2f')} |"
                f" {ref} | {speed} | {r.get('top5_agree', '-')} | {fmt(r.get('max_score_diff'), '.1e')} |"
            )
        print(
            "\nbm25 latency includes query analysis. Speed-up = rank-bm25 get_scores + argsort top-5 vs this"
            " index, same queries."
        )
        print_dense(sizes)
        for r in sizes:
            if r["words_per_chunk"] != 150:
                print(
                    f"At {label(r['chunks'])} chunks have ~{r['words_per_chunk']} words instead of ~150 to"
                    " bound generation/analysis time and memory (rank-bm25 keeps one dict per chunk)."
                )
            if r.get("ref_skipped"):
                print(f"rank-bm25 at {label(r['chunks'])}: {r['ref_skipped']}.")
    if encoding:
        print_encoding(encoding)


def print_dense(sizes: list[dict[str, Any]]) -> None:
    rerank = sizes[0].get("rerank", "?")
    specs = sizes[0]["specs"]
    print(
        "\nDense and hybrid search, side by side: exact float32 (the path below the threshold), the quantized"
        f" index ({specs['quantized']}, the path from the threshold on) and the int8 scan it replaced"
        f" (faiss QT_8bit_direct_signed), each + exact re-scoring of k + {rerank} candidates; timings"
        " interleaved query by query. recall@5 = share of the exact path's top-5 found (hybrid: vs hybrid"
        " with exact dense). Speed-up = exact p50 / path p50.\n"
    )
    header = (
        "| chunks | path | dense p50/p95 ms | dense recall@5 | hybrid p50/p95 ms | hybrid recall@5"
        " | hybrid speed-up |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in sizes:
        for name in r["specs"]:
            d, h = f"dense_{name}", f"hybrid_{name}"
            print(
                f"| {label(r['chunks'])} | {name} | {r[d + '_p50_ms']:.2f} / {r[d + '_p95_ms']:.2f} |"
                f" {r[d + '_recall5']:.4f} | {r[h + '_p50_ms']:.2f} / {r[h + '_p95_ms']:.2f} |"
                f" {r[h + '_recall5']:.4f} | {r['hybrid_exact_p50_ms'] / r[h + '_p50_ms']:.1f}x |"
            )
    print(
        "\nBuild and memory. Exact: nothing to build beyond the embeddings, all of them resident. Others:"
        " train + fill (+ save for the service's path), one thread (peak = resident high-water mark of the"
        " build); resident = what opening it adds (anonymous memory; the former int8 index is kept from its"
        " build, so its open time is 0). The float32 rows stay memory-mapped: the last column is the file"
        " pages both paths' re-scoring mapped into the process (the kernel maps up to 64 KiB around each"
        " touched row, so random rows map most of the file). They are page cache: reclaimable and shared by"
        " every process serving the index, not a per-process copy; a cold cache costs one disk read per"
        " re-scored row.\n"
    )
    header = (
        "| chunks | path | index MiB | build s (peak MiB) | open s | resident after open MiB"
        " | float32 file pages mapped by the queries MiB |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in sizes:
        for name in r["specs"]:
            build = (
                f"{r[name + '_build_s']:.2f} ({r[name + '_build_peak_mib']:.0f})"
                if name + "_build_s" in r
                else "none"
            )
            print(
                f"| {label(r['chunks'])} | {name} | {r[name + '_index_mib']:.0f} | {build} |"
                f" {r[name + '_open_s']:.2f} | {r[name + '_open_anon_mib']:.0f} |"
                f" {r['queries_file_mib']:.0f} |"
            )
    rows = [(r, a) for r in sizes for a in r.get("alternatives", [])]
    if rows:
        print("\nOther candidate indexes (faiss), on the same vectors and queries, for the choice:\n")
        print("| chunks | index | build s | index MiB | p50 / p95 ms | dense recall@5 |")
        print("|---|---|---|---|---|---|")
        for r, a in rows:
            print(
                f"| {label(r['chunks'])} | {a['path']} | {a['build_s']:.1f} | {a['index_mib']:.0f} |"
                f" {a['p50_ms']:.2f} / {a['p95_ms']:.2f} | {a['recall5']:.4f} |"
            )
    r = sizes[0]
    print(
        f"\nVectors: MiniLM-like Gaussian (see the module docstring); queries' mean cosine to their source"
        f" chunk {r['query_source_cos']:.2f}; hybrid = bm25 + dense ({r['hybrid_candidates']} candidates"
        " each) + RRF, query vector given."
    )


def run_worker(argv: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, *argv], stdout=subprocess.PIPE, text=True, check=True, cwd=ROOT
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10k,100k,1m", help="comma-separated chunk counts (10k,100k,1m)")
    parser.add_argument("--queries", type=int, default=200, help="queries per size for our retrievers")
    parser.add_argument("--ref-queries", type=int, default=50, help="max queries run through rank-bm25")
    parser.add_argument("--ref-query-budget", type=float, default=45.0, help="seconds of rank-bm25 queries")
    parser.add_argument(
        "--ref-build-budget", type=float, default=120.0, help="max estimated rank-bm25 build s"
    )
    parser.add_argument("--words-at-1m", type=int, default=60, help="words per chunk above 100k chunks")
    parser.add_argument(
        "--encode-texts", type=int, default=256, help="texts each backend encodes (0 skips the model)"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--backends",
        default="torch,onnx,onnx-int8",
        help="encoder backends compared, name[:threads] (e.g. torch:1,onnx:1); the first is the reference",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the raw results to this file")
    parser.add_argument(
        "--rerank", type=int, default=DEFAULT_RERANK, help="candidates re-scored beyond k (service default)"
    )
    parser.add_argument("--nprobe", default="16,64", help="IVF nprobe values compared")
    parser.add_argument("--hnsw-max", default="100k", help="largest size at which HNSW is built")
    parser.add_argument("--no-compare", dest="compare", action="store_false", help="skip IVF/HNSW")
    parser.add_argument(
        "--spectrum-sentences", type=int, default=1200, help="demo sentences encoded to shape the vectors"
    )
    parser.add_argument("--spectrum-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.nprobe = [int(x) for x in str(args.nprobe).split(",") if x.strip()]
    args.hnsw_max = parse_size(str(args.hnsw_max))

    if args.worker == "encode":
        print(json.dumps(run_encoding(args)))
        return
    if args.worker == "spectrum":
        print(json.dumps(run_spectrum(args)))
        return
    if args.worker:
        print(json.dumps(run_size(int(args.worker), args)))
        return

    started = time.perf_counter()
    load = [f"{os.getloadavg()[0]:.1f}"]
    passthrough = [a for a in sys.argv[1:] if not a.startswith("--json")]
    if args.json is not None:
        passthrough = [a for a in passthrough if a != str(args.json)]
    sizes = []
    spectrum = None
    size_list = sorted(parse_size(s) for s in args.sizes.split(",") if s.strip())
    with tempfile.TemporaryDirectory(prefix="ragmeta-bench-") as tmp:
        passthrough += ["--spectrum-file", str(Path(tmp) / "spectrum.npz")]
        if size_list:
            log("encoding the demo sentences to shape the synthetic vectors ...")
            spectrum = run_worker([*passthrough, "--worker", "spectrum"])
        for n in size_list:
            log(f"size {label(n)} ...")
            sizes.append({**run_worker([*passthrough, "--worker", str(n)]), "rerank": args.rerank})
    if args.encode_texts > 0:
        log("encoding with each backend ...")
    encoding = run_worker([*passthrough, "--worker", "encode"]) if args.encode_texts > 0 else None
    load.append(f"{os.getloadavg()[0]:.1f}")
    print_report(sizes, encoding, load)
    if spectrum is not None:
        print(
            f"\nMiniLM on {spectrum['sentences']} demo sentences: mean pair cosine"
            f" {spectrum['pair_cos']:.2f},"
            f" effective dimension {spectrum['effective_dim']:.0f} of 384, mean best cosine of the"
            f" {spectrum['questions']} demo questions {spectrum['query_best_cos']:.2f}."
        )
    print(f"\nTotal wall time {time.perf_counter() - started:.0f}s.")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"sizes": sizes, "encoding": encoding, "spectrum": spectrum}, indent=2)
        )


if __name__ == "__main__":
    main()
