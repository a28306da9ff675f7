"""How pages name a question: its external id when a person chose it, else its text.

A study import gives questions without an id of their own (a Ragas file has no id column) an id derived from
the question text, ``q-`` and 12 hex digits of its SHA-1. Shown beside the text it is noise, and alone it
tells a reader nothing; pages show the text instead and keep the id for copying (a tooltip)."""

from __future__ import annotations

import re

_DERIVED = re.compile(r"q-[0-9a-f]{12}")


def derived_id(external_id: str) -> bool:
    """Whether ``external_id`` was derived from the question text rather than given by the team."""
    return _DERIVED.fullmatch(external_id) is not None


def question_label(external_id: str, question: str | None = None, limit: int = 60) -> str:
    """The short name of a question on a page: the team's own id, else the start of the question text
    (``limit`` characters), else the id itself when no text is at hand."""
    if not derived_id(external_id) or not question:
        return external_id
    text = " ".join(question.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
