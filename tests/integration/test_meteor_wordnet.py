"""METEOR's synonym module reads WordNet from Debian's wordnet-base package (installed by .ci/run), never
from a download; without the package it falls back to exact + stem matching and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.config import Settings
from services.metrics import wordnet
from services.metrics.classic import MeteorAdapter
from services.metrics.context import ScoringContext
from services.metrics.registry import resolve


def test_lexnames_has_45_lexicographer_files() -> None:
    lines = wordnet.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[3] == "03\tnoun.Tops\t1" and lines[-1] == "44\tadj.ppl\t3"


def test_no_wordnet_package_means_no_synonym_module(tmp_path: Path) -> None:
    assert wordnet.prepare(tmp_path, source=tmp_path / "nowhere") is None


@pytest.mark.skipif(
    not (wordnet.DEBIAN_DIR / "data.noun").exists(), reason="Debian wordnet-base not installed"
)
def test_english_meteor_uses_debian_wordnet(tmp_path: Path) -> None:
    import asyncio

    from nltk.stem.snowball import SnowballStemmer
    from nltk.translate.meteor_score import meteor_score

    path = wordnet.prepare(tmp_path)
    assert path is not None
    reader = wordnet.open_reader(path)
    assert "car" in {lemma.name() for s in reader.synsets("automobile") for lemma in s.lemmas()}
    adapter = MeteorAdapter(resolve("classic.meteor").spec)
    ctx = ScoringContext(Settings(data_dir=tmp_path), language="en")
    assert "synonyms (WordNet 3.0, Debian wordnet-base)" in adapter.config(ctx)["modules"]
    from tests.unit.metrics.test_reference import sample

    s = sample([], [])
    s = type(s)(**{**s.__dict__, "answer": "the auto is red", "reference_answer": "the car is red"})
    got = asyncio.run(adapter.score([s], ctx))[0]
    direct = meteor_score(
        [["the", "car", "is", "red"]],
        ["the", "auto", "is", "red"],
        stemmer=SnowballStemmer("english"),
        wordnet=reader,
    )
    assert got.value == pytest.approx(direct)
    from services.metrics.classic import _NoSynonyms

    without = meteor_score(
        [["the", "car", "is", "red"]],
        ["the", "auto", "is", "red"],
        stemmer=SnowballStemmer("english"),
        wordnet=_NoSynonyms(),
    )
    assert got.value > without  # "auto" matched "car" through WordNet
