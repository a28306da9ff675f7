"""Report pages kept on disk across restarts, each with the exact data versions it was computed from.

After a restart nothing the reports read has changed, so the page served before it is still the current one;
recomputing it would need the report process warmed first (seconds). A page is kept (``save``) when it was
served current (not stale) and no deletion happened since its report was begun; ``load`` gives it back only
to a caller that has read the same data versions (``services.reports.cache``) for the same report, so a
write since makes it unused. What else a page depends on is in the store's fingerprint, and a page kept
under another one is never given: the settings, the database schema's revision, the service's source files
and the installed distributions' versions.

A deletion clears the store (``clear``): nothing of deleted data is left on disk, and a page being kept
while a deletion is under way is kept before it (and removed by it) or not at all (the caller passes the
deletion count it checked under ``lock``).

Files: ``<data_dir>/report-pages/<sha256 of fingerprint and key>.json``, at most ``max_pages`` of them (the
least recently written removed first). Thread-safe; blocking file work (callers run it in a thread).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

SOURCES = Path(__file__).resolve().parent.parent.parent


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def code_fingerprint(root: Path = SOURCES) -> str:
    """The service's Python sources (services/, app/, ragmeta/) and the installed distributions' versions."""
    h = hashlib.sha256()
    for package in ("services", "app", "ragmeta"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    # The installed distributions (name and version are in their metadata directories' names).
    dirs = [Path(entry) for entry in sys.path if entry and Path(entry).is_dir()]
    dists = sorted(p.name for d in dirs for p in d.glob("*.dist-info"))
    h.update("\n".join(dists).encode())
    return h.hexdigest()


def version_text(version: Hashable) -> str:
    """A data version as stored (``RunRepository.data_version`` and its kin: nested tuples of text)."""
    return json.dumps(version, default=str, separators=(",", ":"))


class PageStore:
    def __init__(
        self, directory: Path, context: str, max_pages: int, fingerprint: Callable[[], str] = code_fingerprint
    ) -> None:
        self.directory = directory
        self.max_pages = max_pages
        self.lock = threading.Lock()
        self._context = context
        self._fingerprint_fn = fingerprint
        self._fingerprint: str | None = None

    def _path(self, key: Hashable) -> Path:
        if self._fingerprint is None:
            self._fingerprint = _digest(self._context, self._fingerprint_fn())
        return self.directory / f"{_digest(self._fingerprint, repr(key))}.json"

    def load(self, key: Hashable) -> dict[str, Any] | None:
        """The page kept for ``key`` under this fingerprint: ``versions`` (texts), ``body``, ``headers``."""
        path = self._path(key)
        try:
            entry = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != repr(key):
            return None
        return entry

    def save(
        self,
        key: Hashable,
        versions: list[str],
        body: bytes,
        headers: dict[str, str],
        still_current: Callable[[], bool],
    ) -> bool:
        """Keep a page if ``still_current()`` (no deletion since its report was begun), checked under the
        lock ``clear`` takes. Returns whether it was kept."""
        path = self._path(key)
        entry = {"key": repr(key), "versions": versions, "body": body.decode("utf-8"), "headers": headers}
        text = json.dumps(entry)
        with self.lock:
            if not still_current():
                return False
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, path)
            self._bound(path)
        return True

    def _bound(self, written: Path) -> None:
        """At most ``max_pages`` files: the oldest written removed first, never the one just written."""
        others = sorted(
            (p for p in self.directory.glob("*.json") if p != written), key=lambda p: p.stat().st_mtime_ns
        )
        for old in others[: max(0, len(others) + 1 - self.max_pages)]:
            old.unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove every kept page (a deletion: nothing of deleted data stays on disk)."""
        with self.lock:
            if self.directory.is_dir():
                for path in self.directory.iterdir():
                    path.unlink(missing_ok=True)
