from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from services.retrieval.dense import normalize_rows


class HashingEncoder:
    """Deterministic bag-of-words encoder so dense logic is tested without loading a model."""

    def __init__(self, dimension: int = 64, model_path: str = "/fake/hashing-model") -> None:
        self.dimension = dimension
        self._model_path = model_path
        self.calls = 0

    @property
    def model_path(self) -> str:
        return self._model_path

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.sha256(word.strip(".,;:!?").encode()).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
        return normalize_rows(out)


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()
