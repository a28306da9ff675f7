"""Inference backends of the sentence-transformers encoder: torch, ONNX Runtime, ONNX Runtime + int8 weights.

sentence-transformers runs a model through ONNX Runtime when it is loaded with ``backend="onnx"`` from a
directory holding an ``onnx/*.onnx`` file. The packaged MiniLM ships only safetensors, so the ONNX files
are exported here, from the local weights and with no network, the first time a backend needs them, and
kept on disk:

- ``onnx``: the float32 graph exported by optimum (through sentence-transformers' own loader);
- ``onnx-int8``: that graph with dynamically quantised int8 weights
  (sentence-transformers' ``export_dynamic_quantized_onnx_model``). Only the matrix products with a weight
  are quantised, and not the feed-forward output projections: the products of two activations (attention
  scores) and the feed-forward outputs lose the most when quantised. Quantising every product gave per-chunk
  cosines to the torch embeddings down to 0.976 on MiniLM; this selection keeps them >= 0.99
  (bench/retrieval.py measures it) for most of the speed.

The export directory is named after a digest of the source model's files and the library versions, so a
changed model or library gives a new export instead of a stale one; it is written under a temporary name and
renamed into place, under a file lock, so concurrent processes export it once (one directory per backend).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BACKENDS = ("torch", "onnx", "onnx-int8")
# Bumped when the export recipe changes, so that earlier exports are not reused.
EXPORT_VERSION = 1
_ONNX_FILE = "onnx/model.onnx"
_LIBRARIES = (
    "sentence-transformers",
    "transformers",
    "torch",
    "optimum",
    "optimum-onnx",
    "onnxruntime",
    "onnx",
)


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else ``ValueError``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    return backend


def quantization_target() -> str:
    """The processor family the int8 weights are laid out for (sentence-transformers' preset names).

    ``avx512_vnni`` needs the VNNI dot-product instructions (no saturation of the u8 x s8 products);
    elsewhere on x86 the ``avx2`` preset (unsigned weights) is the safe one; ``arm64`` on ARM.
    """
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "arm64"
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return "avx512_vnni" if "avx512_vnni" in flags else "avx2"


def int8_file(target: str | None = None) -> str:
    """Path, inside an export directory, of the int8 graph for ``target`` (default: this processor)."""
    return f"onnx/model_int8_{target or quantization_target()}.onnx"


def _versions() -> dict[str, str]:
    out = {}
    for name in _LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = ""
    return out


def export_key(model_path: str) -> str:
    """Digest naming the export of ``model_path``: its files (names, sizes, mtimes) and library versions."""
    root = Path(model_path)
    files = sorted(
        (str(p.relative_to(root)), p.stat().st_size, int(p.stat().st_mtime))
        for p in root.rglob("*")
        if p.is_file() and "onnx" not in p.relative_to(root).parts
    )
    payload = {"model": os.path.abspath(model_path), "files": files, "libs": _versions(), "v": EXPORT_VERSION}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _int8_config(onnx_path: Path, target: str) -> Any:
    import onnx
    from optimum.onnxruntime.configuration import AutoQuantizationConfig

    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    keep_float = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul"
        and (
            not any(name in weights for name in node.input)  # activation x activation (attention scores)
            or ("/output/dense/" in node.name and "/attention/" not in node.name)  # feed-forward output
        )
    ]
    preset = getattr(AutoQuantizationConfig, target)
    return preset(is_static=False, operators_to_quantize=["MatMul"], nodes_to_exclude=keep_float)


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    # The exporter's tracer warnings and sentence-transformers' advice to save the export (done here) are
    # noise in the service's log.
    st_logger = logging.getLogger("sentence_transformers.backend.utils")
    level = st_logger.level
    st_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        st_logger.setLevel(level)


def _export(model_path: str, destination: Path, backend: str) -> None:
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    with _quiet_export():
        model = SentenceTransformer(
            model_path, device="cpu", backend="onnx", local_files_only=True, model_kwargs={"export": True}
        )
    try:
        model.save_pretrained(str(destination))
        if backend == "onnx-int8":
            target = quantization_target()
            config = _int8_config(destination / _ONNX_FILE, target)
            export_dynamic_quantized_onnx_model(model, config, str(destination), file_suffix=f"int8_{target}")
            (destination / _ONNX_FILE).unlink()  # the float32 graph is not loaded by this backend
    finally:
        # optimum exported into a temporary directory the in-memory model holds; remove it now rather than
        # at garbage collection (which warns).
        held = getattr(model[0].auto_model, "_model_save_dir_tempdirectory_instance", None)
        if held is not None:
            held.cleanup()
    (destination / "ragmeta-export.json").write_text(
        json.dumps({"source": os.path.abspath(model_path), "backend": backend, "libs": _versions()}),
        encoding="utf-8",
    )


def prepare(model_path: str, backend: str, cache_dir: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """Directory and ``model_kwargs`` to load ``model_path`` with ``backend`` through sentence-transformers.

    ``torch`` loads the model where it is. The ONNX backends load an export of it under ``cache_dir``,
    made here if missing (a few seconds; needs optimum, onnx and onnxruntime, raises ``ImportError``
    otherwise). Raises ``FileNotFoundError`` if ``model_path`` is not a directory.
    """
    check_backend(backend)
    if not os.path.isdir(model_path):
        raise FileNotFoundError(f"model directory not found: {model_path}")
    if backend == "torch":
        return model_path, {}
    file_name = _ONNX_FILE if backend == "onnx" else int8_file()
    root = Path(cache_dir)
    final = root / f"{Path(model_path).name}-{backend}-{export_key(model_path)}"
    kwargs: dict[str, Any] = {"file_name": file_name, "provider": "CPUExecutionProvider"}
    if not (final / file_name).is_file():
        with _locked(root / f".{final.name}.lock"):
            if not (final / file_name).is_file():
                tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
                try:
                    _export(model_path, tmp, backend)
                    if final.exists():  # incomplete (a file was deleted): replace it whole
                        shutil.rmtree(final)
                    os.replace(tmp, final)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
    return str(final), kwargs
