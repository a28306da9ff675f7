"""Computed reports kept in memory, keyed on the request and on the version of the data they read.

A report is recomputed only when something it reads changed (outputs, ratings, scores, questions and
passages, and their histories); see ``RunRepository.data_version``. Thread-safe: reports are computed in
worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

from cachetools import LRUCache

T = TypeVar("T")


class ReportCache(Generic[T]):
    def __init__(self, maxsize: int) -> None:
        self._cache: LRUCache[Hashable, T] | None = LRUCache(maxsize) if maxsize > 0 else None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> T | None:
        if self._cache is None:
            return None
        with self._lock:
            value = self._cache.get(key)
            if value is not None:
                self.hits += 1
            return value

    def put(self, key: Hashable, value: T) -> None:
        if self._cache is not None:
            with self._lock:
                self.misses += 1
                self._cache[key] = value
