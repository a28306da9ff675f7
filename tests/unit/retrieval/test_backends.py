"""The encoder's ONNX Runtime backends: agreement with torch, export made once offline and reused, and the
backend carried by a dense index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from services.config import Settings
from services.retrieval import backends
from services.retrieval.dense import (
    DenseIndex,
    SentenceTransformerEncoder,
    default_model_path,
    dense_fingerprint,
    load_or_build_dense,
    open_dense,
)
from services.retrieval.segment import sentence_spans

from .conftest import HashingEncoder

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "data" / "demo"


class BackendHashingEncoder(HashingEncoder):
    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend


def demo_texts(limit: int) -> tuple[list[str], list[str]]:
    sentences = []
    for line in (DEMO / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        sentences += [text[a:b].strip() for a, b in sentence_spans(text) if len(text[a:b].split()) >= 4]
    questions = [json.loads(x)["question"] for x in (DEMO / "questions.jsonl").read_text().splitlines()]
    return sentences[:limit], questions


def plain_vectors(cache: Path, texts: list[str]) -> np.ndarray:
    return SentenceTransformerEncoder(backend="onnx", cache_dir=cache)(texts)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-models")


def test_unknown_backends_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown embedding backend 'tensorflow'"):
        SentenceTransformerEncoder(backend="tensorflow")
    with pytest.raises(ValidationError, match="backend"):
        Settings(embeddings={"backend": "tensorflow"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        SentenceTransformerEncoder(threads=0)
    with pytest.raises(ValidationError, match="threads"):
        Settings(embeddings={"threads": 0})  # type: ignore[arg-type]
    DenseIndex(np.eye(3, dtype=np.float32), model_path="/m", backend="onnx").save(tmp_path)
    meta = json.loads((tmp_path / "dense.json").read_text())
    (tmp_path / "dense.json").write_text(json.dumps({**meta, "backend": "tensorflow"}))
    with pytest.raises(ValueError, match="unknown embedding backend"):
        DenseIndex.load(tmp_path)


def test_onnx_backends_agree_with_torch(model_cache: Path) -> None:
    sentences, questions = demo_texts(240)
    torch_enc = SentenceTransformerEncoder(batch_size=32)
    ref, ref_q = torch_enc(sentences), torch_enc(questions)
    ref_top5 = np.argsort(-(ref_q @ ref.T), axis=1, kind="stable")[:, :5]
    for backend, min_cos, min_recall in (("onnx", 0.9999, 0.99), ("onnx-int8", 0.99, 0.9)):
        enc = SentenceTransformerEncoder(batch_size=32, backend=backend, cache_dir=model_cache)
        vectors, qvecs = enc(sentences), enc(questions)
        assert vectors.shape == ref.shape and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
        cos = np.concatenate([np.sum(vectors * ref, axis=1), np.sum(qvecs * ref_q, axis=1)])
        assert cos.min() >= min_cos, (backend, float(cos.min()))
        top5 = np.argsort(-(qvecs @ vectors.T), axis=1, kind="stable")[:, :5]
        recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(top5, ref_top5, strict=True)])
        assert recall >= min_recall, (backend, recall)
    # Thread count is the session's and does not change the vectors.
    one = SentenceTransformerEncoder(backend="onnx", cache_dir=model_cache, threads=1)
    np.testing.assert_allclose(one(sentences[:8]), plain_vectors(model_cache, sentences[:8]), atol=1e-5)
    session = one._model()[0].auto_model.session
    assert session.get_session_options().intra_op_num_threads == 1
    # The int8 graph is not the float32 one: the int8 backend really runs quantised weights.
    int8 = SentenceTransformerEncoder(backend="onnx-int8", cache_dir=model_cache)(sentences[:8])
    plain = SentenceTransformerEncoder(backend="onnx", cache_dir=model_cache)(sentences[:8])
    assert np.abs(int8 - plain).max() > 1e-3


def test_export_is_made_offline_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "models"
    # A fresh process with every socket refused and an empty home: the export needs only the packaged
    # weights (the service's offline switches are set by the encoder itself, not by the caller's shell).
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network access attempted')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from services.retrieval.dense import SentenceTransformerEncoder\n"
        "enc = SentenceTransformerEncoder(backend='onnx-int8', cache_dir=sys.argv[1])\n"
        "v = enc(['Le colis est livré.'])\n"
        "assert v.shape == (1, 384), v.shape\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "TRANSFORMERS_", "XDG_")) and "PROXY" not in k.upper()
    }
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "home"))
    subprocess.run([sys.executable, "-c", code, str(cache)], check=True, cwd=REPO, env=env)
    [export] = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert export.name.startswith("model-onnx-int8-")
    assert (export / backends.int8_file()).is_file()
    assert not (export / "onnx" / "model.onnx").exists()  # the float32 graph is not kept for int8

    def no_export(*args: object) -> None:
        raise AssertionError("the model was exported again")

    monkeypatch.setattr(backends, "_export", no_export)
    path, kwargs = backends.prepare(default_model_path(), "onnx-int8", cache)
    assert path == str(export) and kwargs["file_name"] == backends.int8_file()
    # Another backend is another export (the monkeypatched exporter proves it is attempted).
    with pytest.raises(AssertionError, match="exported again"):
        backends.prepare(default_model_path(), "onnx", cache)
    assert backends.prepare(default_model_path(), "torch", cache) == (default_model_path(), {})


def test_export_key_follows_the_model_files(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"1234")
    key = backends.export_key(str(tmp_path))
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"x")  # an export next to the model is not the model
    assert backends.export_key(str(tmp_path)) == key
    (tmp_path / "model.safetensors").write_bytes(b"12345")
    assert backends.export_key(str(tmp_path)) != key
    with pytest.raises(FileNotFoundError):
        backends.prepare(str(tmp_path / "missing"), "onnx", tmp_path / "cache")


def test_quantization_target_is_a_preset() -> None:
    assert backends.quantization_target() in ("avx512_vnni", "avx2", "arm64")
    assert backends.int8_file("avx2") == "onnx/model_int8_avx2.onnx"


def test_a_dense_index_carries_its_backend(tmp_path: Path) -> None:
    texts = ["Le chat dort.", "La facture est payable.", "Les colis arrivent."]
    onnx_enc = BackendHashingEncoder("onnx-int8")
    index = load_or_build_dense(tmp_path, texts, encoder=onnx_enc)
    assert index.backend == "onnx-int8"
    assert index.fingerprint == dense_fingerprint(texts, onnx_enc.model_path, "onnx-int8")
    # torch keeps the fingerprint indexes had before backends existed
    assert dense_fingerprint(texts, "/m") == dense_fingerprint(texts, "/m", "torch")
    assert dense_fingerprint(texts, "/m", "onnx") != dense_fingerprint(texts, "/m", "onnx-int8")
    opened = open_dense(tmp_path, cache_dir=tmp_path / "cache")
    assert opened.backend == "onnx-int8"
    query_encoder = opened.encoder()  # not loaded yet: built from the saved model path and backend
    assert isinstance(query_encoder, SentenceTransformerEncoder)
    assert (query_encoder.backend, query_encoder.cache_dir) == ("onnx-int8", tmp_path / "cache")
    assert query_encoder.model_path == os.path.abspath(onnx_enc.model_path)
    # Same texts, another backend: re-encoded; same backend again: loaded.
    load_or_build_dense(tmp_path, texts, encoder=onnx_enc)
    assert onnx_enc.calls == 1
    torch_enc = HashingEncoder()
    assert load_or_build_dense(tmp_path, texts, encoder=torch_enc).backend == "torch"
    assert torch_enc.calls == 1
