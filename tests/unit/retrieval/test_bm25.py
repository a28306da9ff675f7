from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from services.retrieval import bm25 as bm25_module
from services.retrieval.bm25 import BM25Index, BM25Params, bm25_fingerprint, load_or_build_bm25
from services.retrieval.text import analyzer_for, get_analyzer

FRENCH = [
    "L’abonnement mensuel coûte douze euros et se résilie à tout moment.",
    "Les abonnements annuels bénéficient d'une réduction de vingt pour cent.",
    "La facture est envoyée par courriel au début de chaque mois.",
    "Le paiement par carte bancaire est accepté, le chèque ne l'est plus.",
    "Pour résilier, écrivez au service client avant la fin du mois.",
    "Les étudiants obtiennent une réduction sur présentation de leur carte.",
    "Le service client répond du lundi au vendredi, de neuf heures à dix-huit heures.",
    "La livraison est gratuite à partir de cinquante euros d'achat.",
    "Les colis sont livrés en trois à cinq jours ouvrés en France métropolitaine.",
    "Un retour est possible sous trente jours ; le remboursement suit sous quinze jours.",
    "L'application mobile permet de suivre la livraison en temps réel.",
    "Les données personnelles sont hébergées en Europe et jamais revendues.",
    "Le mot de passe doit contenir au moins douze caractères.",
    "En cas d'oubli du mot de passe, un lien de réinitialisation est envoyé par courriel.",
    "La garantie couvre les pannes pendant deux ans après l'achat.",
    "Les pannes causées par une chute ne sont pas couvertes par la garantie.",
    "Le magasin de Lyon est ouvert le dimanche matin.",
    "Le magasin de Paris ferme à vingt heures en semaine.",
    "Les cartes cadeaux sont valables un an et ne sont pas remboursables.",
    "Le programme de fidélité offre un point par euro dépensé.",
    "Cent points de fidélité donnent droit à un bon d'achat de cinq euros.",
    "Le service client traite les réclamations sous quarante-huit heures.",
    "",
    "Économies, économie, économique : l'économie du mois.",
]
ENGLISH = [
    "The monthly subscription costs twelve euros and can be cancelled at any time.",
    "Annual subscriptions get a twenty percent discount.",
    "Invoices are emailed at the beginning of each month.",
    "Payment by credit card is accepted; cheques are no longer accepted.",
    "To cancel, write to customer service before the end of the month.",
    "Students get a discount when they show their student card.",
    "Customer service answers from Monday to Friday, nine to six.",
    "Delivery is free for orders over fifty euros.",
    "Parcels are delivered within three to five working days.",
    "Returns are possible within thirty days and refunds follow within fifteen days.",
    "The mobile app lets you track your delivery in real time.",
    "Personal data is hosted in Europe and never sold.",
    "Passwords must contain at least twelve characters.",
    "If you forget your password, a reset link is emailed to you.",
    "The warranty covers breakdowns for two years after purchase.",
    "Breakdowns caused by a fall are not covered by the warranty.",
    "The Lyon store opens on Sunday mornings.",
    "The Paris store closes at eight in the evening on weekdays.",
    "Gift cards are valid for one year and are not refundable.",
    "The loyalty programme gives one point per euro spent.",
]
FR_QUERIES = [
    "Combien coûte l'abonnement mensuel ?",
    "Quelle réduction pour les étudiants ?",
    "Comment résilier mon abonnement ?",
    "La livraison est-elle gratuite ?",
    "Que couvre la garantie en cas de panne ?",
    "J'ai oublié mon mot de passe",
    "horaires du service client",
    "economie",
    "programme de fidélité points euros",
    "capitale de l'Australie",
    "euros euros mois",
]
EN_QUERIES = [
    "How much is the monthly subscription?",
    "student discount",
    "How do I cancel my subscription?",
    "Is delivery free?",
    "What does the warranty cover?",
    "forgot password reset",
    "customer service opening hours",
    "kangaroo",
]


def reference_top(ref: BM25Okapi, query: list[str], k: int) -> tuple[list[int], np.ndarray]:
    scores = ref.get_scores(query)
    # rank_bm25's get_top_n uses an unstable argsort; rank ties by lower index like the index does.
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return order.tolist(), scores[order]


def assert_same_as_rank_bm25(corpus: list[list[str]], queries: list[list[str]], params: BM25Params) -> None:
    ref = BM25Okapi(corpus, k1=params.k1, b=params.b, epsilon=params.epsilon)
    index = BM25Index.from_tokens(corpus, params=params)
    for query in queries:
        np.testing.assert_allclose(index.get_scores(query), ref.get_scores(query), rtol=1e-12, atol=1e-12)
        for k in (1, 5, 10, len(corpus) + 3):
            ids, scores = reference_top(ref, query, k)
            hits = index.search(query, k, only_matching=False)
            assert [h.chunk_idx for h in hits] == ids
            assert [h.rank for h in hits] == list(range(1, len(ids) + 1))
            np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-12, atol=1e-12)
            # only_matching ranks the chunks containing a query term in the same global order.
            everything, _ = reference_top(ref, query, len(corpus))
            expected = [i for i in everything if any(t in corpus[i] for t in query)][:k]
            assert [h.chunk_idx for h in index.search(query, k)] == expected


@pytest.mark.parametrize("params", [BM25Params(), BM25Params(k1=1.2, b=0.5, epsilon=0.1)])
def test_french_corpus_matches_rank_bm25(params: BM25Params) -> None:
    fr = analyzer_for("fr")
    assert_same_as_rank_bm25([fr(t) for t in FRENCH], [fr(q) for q in FR_QUERIES], params)


def test_english_corpus_matches_rank_bm25() -> None:
    en = analyzer_for("en")
    assert_same_as_rank_bm25([en(t) for t in ENGLISH], [en(q) for q in EN_QUERIES], BM25Params())


def test_seeded_random_corpus_matches_rank_bm25() -> None:
    rng = random.Random(1234)
    vocab = [f"t{i}" for i in range(400)]
    weights = [1 / (r + 1) for r in range(len(vocab))]
    corpus = [rng.choices(vocab, weights, k=rng.randint(0, 60)) for _ in range(600)]
    queries = [[*rng.choices(vocab, k=rng.randint(1, 8)), "absent"] for _ in range(40)]
    assert_same_as_rank_bm25(corpus, queries, BM25Params())


def test_blockwise_weights_match_rank_bm25(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "_WEIGHT_BLOCK", 7)
    fr = analyzer_for("fr")
    assert_same_as_rank_bm25([fr(t) for t in FRENCH], [fr(q) for q in FR_QUERIES], BM25Params())


@settings(max_examples=80, deadline=None)
@given(
    corpus=st.lists(st.lists(st.sampled_from("abcdefg"), max_size=8), min_size=1, max_size=25).filter(
        lambda c: any(c)
    ),
    queries=st.lists(st.lists(st.sampled_from("abcdefgz"), min_size=1, max_size=5), min_size=1, max_size=4),
)
def test_random_small_corpora_match_rank_bm25(corpus: list[list[str]], queries: list[list[str]]) -> None:
    # Tiny vocabularies make most idfs negative, exercising the epsilon floor and exact ties.
    assert_same_as_rank_bm25(corpus, queries, BM25Params())


def test_search_text_and_matching_only() -> None:
    index = BM25Index.build(FRENCH, "fr")
    hits = index.search_text("Combien coûte l'abonnement mensuel ?", 3)
    assert hits[0].chunk_idx == 0
    assert index.search_text("capitale de l'Australie", 5) == []
    assert index.search_text("le la les", 5) == []
    assert index.search([], 3) == []
    assert len(index.search([], 3, only_matching=False)) == 3
    assert index.search(["abon"], 0) == []


def test_empty_corpora_are_valid() -> None:
    assert BM25Index.from_tokens([]).search(["a"], 5) == []
    empty_docs = BM25Index.from_tokens([[], []])
    assert empty_docs.search(["a"], 5) == []
    assert [h.score for h in empty_docs.search(["a"], 5, only_matching=False)] == [0.0, 0.0]


def test_save_load_roundtrip(tmp_path: Path) -> None:
    index = BM25Index.build(FRENCH, "fr", params=BM25Params(k1=1.3))
    index.save(tmp_path / "idx")
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["bm25.json", "bm25.npz"]
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.fingerprint == index.fingerprint
    assert loaded.params == index.params
    for query in FR_QUERIES:
        assert loaded.search_text(query, 5) == index.search_text(query, 5)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        BM25Index.load(tmp_path / "missing")
    index = BM25Index.build(["a b"], "en")
    index.save(tmp_path)
    meta = (tmp_path / "bm25.json").read_text().replace('"format": 1', '"format": 99')
    (tmp_path / "bm25.json").write_text(meta)
    with pytest.raises(ValueError, match="format"):
        BM25Index.load(tmp_path)


def test_tokens_only_index_has_no_analyzer() -> None:
    with pytest.raises(ValueError):
        BM25Index.from_tokens([["a"]]).search_text("a", 1)


def test_fingerprint_tracks_corpus_settings_and_parameters() -> None:
    fr, en = get_analyzer("fr"), get_analyzer("en")
    base = bm25_fingerprint(FRENCH, fr)
    assert base == bm25_fingerprint(list(FRENCH), fr)
    assert base != bm25_fingerprint([*FRENCH[:-1], FRENCH[-1] + " "], fr)
    assert base != bm25_fingerprint(FRENCH[:-1], fr)
    assert base != bm25_fingerprint(FRENCH, en)
    assert base != bm25_fingerprint(FRENCH, fr, BM25Params(k1=1.2))
    assert bm25_fingerprint(["ab", "c"], fr) != bm25_fingerprint(["a", "bc"], fr)
    assert BM25Index.build(FRENCH, fr).fingerprint == base


def test_load_or_build_rebuilds_only_when_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_or_build_bm25(tmp_path, FRENCH, "fr")
    calls: list[int] = []
    original = BM25Index.build.__func__  # type: ignore[attr-defined]

    def counting_build(cls: type[BM25Index], /, *args: object, **kwargs: object) -> BM25Index:
        calls.append(1)
        return original(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(BM25Index, "build", classmethod(counting_build))
    again = load_or_build_bm25(tmp_path, FRENCH, "fr")
    assert calls == [] and again.fingerprint == first.fingerprint
    changed = load_or_build_bm25(tmp_path, [*FRENCH, "Nouveau document."], "fr")
    assert calls == [1] and changed.n_docs == len(FRENCH) + 1
    assert BM25Index.load(tmp_path).fingerprint == changed.fingerprint
    (tmp_path / "bm25.npz").write_bytes(b"corrupt")
    load_or_build_bm25(tmp_path, FRENCH, "fr")
    assert calls == [1, 1]
