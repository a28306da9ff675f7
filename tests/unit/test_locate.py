from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from services.locate import locate

DOC = "# Titre\r\n\r\nLe forfait  Essentiel\u00a0coûte 9,99 €.\nFin."


def test_exact_match() -> None:
    got = locate("forfait  Essentiel", DOC)
    assert got.how == "exact" and DOC[got.start : got.end] == "forfait  Essentiel"  # type: ignore[misc]


def test_whitespace_normalised_match_maps_back_to_original_span() -> None:
    got = locate("Titre Le forfait Essentiel coûte", DOC)
    assert got.how == "normalized"
    assert DOC[got.start : got.end] == "Titre\r\n\r\nLe forfait  Essentiel\u00a0coûte"  # type: ignore[misc]


def test_unlocated() -> None:
    got = locate("un texte absent", DOC)
    assert (got.start, got.end, got.how) == (None, None, "unlocated")
    assert locate("   ", DOC).how == "unlocated"


@given(st.text(min_size=1), st.data())
def test_any_substring_is_found_with_identical_normalisation(doc: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(doc) - 1))
    j = data.draw(st.integers(i + 1, len(doc)))
    needle = doc[i:j]
    got = locate(needle, doc)
    if needle.strip():
        assert got.how in ("exact", "normalized")
        assert got.start is not None and got.end is not None
        found = doc[got.start : got.end]
        assert re.sub(r"\s+", " ", found).strip() == re.sub(r"\s+", " ", needle).strip()
