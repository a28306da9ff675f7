from __future__ import annotations

import pytest

from services.retrieval.extractive import I_DONT_KNOW, extractive_answer, i_dont_know

CHUNKS = [
    "## Tarifs\n\nL’abonnement mensuel coûte douze euros. Il est résiliable à tout moment sans frais.",
    "La livraison est gratuite dès cinquante euros d'achat. Les colis arrivent en trois jours ouvrés.",
    "La garantie couvre les pannes pendant deux ans. Les chutes ne sont pas couvertes par la garantie.",
    "Pour résilier l'abonnement, écrivez au service client avant la fin du mois.",
]


def test_answerable_french_question() -> None:
    result = extractive_answer("Combien coûte l'abonnement mensuel ?", "fr", CHUNKS)
    assert not result.declined
    assert result.answer.startswith("L’abonnement mensuel coûte douze euros.")
    assert result.best_relevance == pytest.approx(1.0)
    first = result.sentences[0]
    assert CHUNKS[first.chunk_position][first.start : first.end] == first.text


def test_answer_sentences_are_in_document_order() -> None:
    result = extractive_answer(
        "Les pannes et les chutes sont-elles couvertes par la garantie ?", "fr", CHUNKS
    )
    assert not result.declined
    assert [s.text for s in result.sentences] == [
        "La garantie couvre les pannes pendant deux ans.",
        "Les chutes ne sont pas couvertes par la garantie.",
    ]
    assert result.answer == " ".join(s.text for s in result.sentences)
    assert 1 <= len(result.sentences) <= 3


def test_accents_and_elision_do_not_matter() -> None:
    result = extractive_answer("livraison gratuite a partir de combien d'achat", "fr", CHUNKS)
    assert result.sentences[0].text.startswith("La livraison est gratuite")


def test_unanswerable_french_question_declines() -> None:
    result = extractive_answer("Quelle est la capitale de l'Australie ?", "fr", CHUNKS)
    assert result.declined
    assert (
        result.answer
        == "Je ne sais pas : les documents fournis ne contiennent pas la réponse à cette question."
    )
    assert result.sentences == ()
    assert result.best_relevance < 0.5


def test_partially_related_question_declines_under_threshold() -> None:
    question = "Quel est le prix de la garantie étendue pour les téléviseurs ?"
    declined = extractive_answer(question, "fr", CHUNKS)
    assert declined.declined and 0 < declined.best_relevance < 0.5
    relaxed = extractive_answer(question, "fr", CHUNKS, threshold=0.1)
    assert not relaxed.declined and "garantie" in relaxed.answer


def test_stop_word_only_question_and_no_chunks_decline() -> None:
    assert extractive_answer("Est-ce que c'est le cas ?", "fr", CHUNKS).declined
    assert extractive_answer("Combien coûte l'abonnement ?", "fr", []).declined
    assert extractive_answer("Combien coûte l'abonnement ?", "fr", ["   ", "## Tarifs"]).declined


def test_headings_and_duplicates_are_skipped() -> None:
    chunks = [
        "## Tarifs de l'abonnement",
        "Le tarif de l'abonnement est fixe.",
        "Le tarif de l'abonnement est fixe.",
    ]
    result = extractive_answer("tarif abonnement", "fr", chunks)
    assert [s.text for s in result.sentences] == ["Le tarif de l'abonnement est fixe."]
    assert result.sentences[0].chunk_position == 1


def test_max_sentences() -> None:
    chunks = [f"Le tarif numéro {i} concerne l'abonnement." for i in range(6)]
    assert len(extractive_answer("tarif abonnement", "fr", chunks).sentences) == 3
    assert len(extractive_answer("tarif abonnement", "fr", chunks, max_sentences=1).sentences) == 1


def test_phrases_per_language() -> None:
    assert i_dont_know("fr-FR") == I_DONT_KNOW["fr"]
    assert (
        i_dont_know("en")
        == "I don't know: the provided documents do not contain the answer to this question."
    )
    assert i_dont_know("de") == I_DONT_KNOW["en"]
    assert extractive_answer("Who founded it?", "en", ["The sky is blue."]).answer == I_DONT_KNOW["en"]


@pytest.mark.parametrize("kwargs", [{"threshold": 1.5}, {"min_ratio": -0.1}, {"max_sentences": 0}])
def test_invalid_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        extractive_answer("q", "fr", CHUNKS, **kwargs)  # type: ignore[arg-type]
