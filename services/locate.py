"""Finding where a chunk given as text only lies in its document, to recover character offsets.

Exact match first, then a whitespace-normalised match (runs of whitespace, including CRLF and non-breaking
spaces, compare equal to one space). A chunk that cannot be found is kept and marked unlocated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Location = Literal["exact", "normalized", "unlocated"]
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Located:
    start: int | None
    end: int | None
    how: Location


class NormalizedText:
    """A document's text with whitespace runs collapsed, and the map back to original offsets."""

    def __init__(self, text: str) -> None:
        out: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        pos = 0
        for m in _WS.finditer(text):
            for i in range(pos, m.start()):
                out.append(text[i])
                starts.append(i)
                ends.append(i + 1)
            out.append(" ")
            starts.append(m.start())
            ends.append(m.end())
            pos = m.end()
        for i in range(pos, len(text)):
            out.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        self.text = "".join(out)
        self._starts = starts
        self._ends = ends

    def find(self, needle: str) -> tuple[int, int] | None:
        norm = _WS.sub(" ", needle).strip()
        if not norm:
            return None
        i = self.text.find(norm)
        if i < 0:
            return None
        return self._starts[i], self._ends[i + len(norm) - 1]


def locate(text: str, document_text: str, normalized: NormalizedText | None = None) -> Located:
    """Locate ``text`` in ``document_text`` (first occurrence)."""
    if text:
        i = document_text.find(text)
        if i >= 0:
            return Located(i, i + len(text), "exact")
    norm = normalized or NormalizedText(document_text)
    hit = norm.find(text)
    if hit is not None:
        return Located(hit[0], hit[1], "normalized")
    return Located(None, None, "unlocated")
