from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from services.retrieval.text import Analyzer, analyzer_for, fold_accents, get_analyzer, normalize_language

FRENCH_ALPHABET = "abcdefghijklmnopqrstuvwxyzéèêëàâäîïôöùûüçœæÿ' -’"


def test_french_pipeline() -> None:
    fr = analyzer_for("fr")
    text = "L’offre d'aujourd'hui : le porte-monnaie ÉCONOMIQUE qu'il a acheté jusqu'à Noël."
    assert fr(text) == ["offre", "aujourd'hui", "port", "monnai", "econom", "achet", "noel"]


def test_french_stop_words_and_plurals() -> None:
    fr = analyzer_for("fr")
    assert fr("le la les de des du et à été où ou") == []
    assert fr("abonnements") == fr("abonnement") == fr("Abonnement")
    assert fr("économies") == fr("economie")


def test_english_pipeline() -> None:
    en = analyzer_for("en")
    assert en("John's dogs aren't running; the café's offers!") == ["john", "dog", "run", "cafe", "offer"]


def test_other_languages_are_not_stemmed() -> None:
    de = get_analyzer("de-DE")
    assert de.stemmer_name is None
    assert de("Die Häuser sind schön") == ["hauser", "schon"]
    unknown = analyzer_for("xx")
    assert unknown("Hello the worlds") == ["hello", "the", "worlds"]


def test_language_normalisation() -> None:
    assert normalize_language("fr-FR") == "fr"
    assert normalize_language("FR_ca") == "fr"
    assert normalize_language("French") == "fr"
    assert normalize_language("Français") == "fr"
    assert normalize_language(" en ") == "en"
    assert normalize_language("") == ""
    assert analyzer_for("fr-FR") is analyzer_for("fr")


def test_fold_accents() -> None:
    assert fold_accents("Économie élève où ça") == "Economie eleve ou ca"
    assert fold_accents("e\u0301te\u0301") == "ete"
    assert fold_accents("ﬁn") == "fin"


def test_stop_words_work_offline() -> None:
    # The stop_words package reads bundled files: no network needed.
    assert "les" in get_analyzer("fr").stop_words
    assert "the" in get_analyzer("en").stop_words


def test_config_roundtrip() -> None:
    fr = get_analyzer("fr")
    rebuilt = Analyzer.from_config(fr.config)
    assert rebuilt.config == fr.config
    assert rebuilt("Les offres") == fr("Les offres")
    broken = dict(fr.config, analyzer_version=-1)
    with pytest.raises(ValueError):
        Analyzer.from_config(broken)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=FRENCH_ALPHABET, max_size=60))
@example("ç'a")  # an elided head with an accent, found by this property
def test_accent_and_case_insensitive(text: str) -> None:
    fr = analyzer_for("fr")
    assert fr(text) == fr(fold_accents(text)) == fr(text.upper())


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["fr", "en", "de", "zz", ""]))
def test_never_raises_and_terms_are_clean(text: str, language: str) -> None:
    terms = analyzer_for(language)(text)
    assert all(t and not any(ch.isspace() for ch in t) for t in terms)
