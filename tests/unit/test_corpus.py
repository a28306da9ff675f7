"""Locating passages given as text: exact, Unicode- and whitespace-normalised, fuzzy above a threshold."""

from __future__ import annotations

import random

import pytest

from services.corpus import Corpus, fuzzy_view, normalized_view

DOCS = [
    "Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go de données.\nIl est sans engagement.",
    "Pour résilier, le client appelle le service client ou envoie une lettre recommandée.\r\n"
    "La résiliation prend effet sous 10 jours.",
    "The ﬁnancial ofﬁce answers all informa-\ntion requests within five working days, says the “policy” "
    "— strictly, without exception.",
    "Completely unrelated text about the weather in Paris and the rain that falls on every single day.",
]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(DOCS)


def found(corpus: Corpus, text: str, **kw: object) -> tuple[str, float | None, str]:
    m = corpus.locate(text, **kw)  # type: ignore[arg-type]
    assert m.located, m
    assert m.doc is not None and m.start is not None and m.end is not None
    return m.how, m.score, DOCS[m.doc][m.start : m.end]


def test_exact(corpus: Corpus) -> None:
    assert found(corpus, "  Le forfait Essentiel coûte 9,99 € par mois\n") == (
        "exact",
        100.0,
        "Le forfait Essentiel coûte 9,99 € par mois",
    )


@pytest.mark.parametrize(
    ("text", "span"),
    [
        # CRLF and a space where the document breaks the line
        (
            "lettre recommandée. La résiliation prend effet",
            "lettre recommandée.\r\nLa résiliation prend effet",
        ),
        # non-breaking spaces and a tab
        ("coûte\u00a09,99\u00a0€ par\tmois", "coûte 9,99 € par mois"),
        # ASCII quotes and dash where the document has typographic ones
        ('says the "policy" - strictly', "says the “policy” — strictly"),
        # a ligature written out (NFKC)
        ("The financial office answers", "The ﬁnancial ofﬁce answers"),
        # a decomposed accent (e + combining acute) against the composed letter
        ("Pour re\u0301silier, le client", "Pour résilier, le client"),
    ],
)
def test_normalised(corpus: Corpus, text: str, span: str) -> None:
    assert found(corpus, text) == ("normalized", 100.0, span)


@pytest.mark.parametrize(
    ("text", "span", "low"),
    [
        # punctuation
        (
            "Pour résilier le client appelle le service client, ou envoie une lettre recommandée",
            "Pour résilier, le client appelle le service client ou envoie une lettre recommandée",
            100,
        ),
        # case
        (
            "LE FORFAIT ESSENTIEL COÛTE 9,99 € PAR MOIS ET INCLUT 20 GO",
            "Le forfait Essentiel coûte 9,99 € par mois et inclut 20 Go",
            100,
        ),
        # a word hyphenated at a line end in the document
        (
            "answers all information requests within five",
            "answers all informa-\ntion requests within five",
            100,
        ),
        # ligatures and case together
        ("the FINANCIAL OFFICE answers all", "The ﬁnancial ofﬁce answers all", 100),
        # one changed word
        (
            "answers all information requests within six working days",
            "answers all informa-\ntion requests within five working days",
            90,
        ),
    ],
)
def test_fuzzy(corpus: Corpus, text: str, span: str, low: float) -> None:
    how, score, got = found(corpus, text)
    assert how == "fuzzy"
    assert score is not None and low <= score <= 100
    assert got == span


def test_below_the_threshold_is_refused_with_the_best_score(corpus: Corpus) -> None:
    text = "requests within five working days, says nobody at all, with many exceptions"
    m = corpus.locate(text, threshold=90)
    assert not m.located and m.doc is None and m.start is None
    assert m.best_doc == 2 and m.score is not None and 70 < m.score < 90
    # the same text passes a lower threshold, with the same score
    again = corpus.locate(text, threshold=m.score)
    assert again.how == "fuzzy" and again.score == m.score and again.doc == 2


def test_no_shared_words_means_no_candidate(corpus: Corpus) -> None:
    m = corpus.locate("Zzz qqq www xxx yyy")
    assert (m.how, m.score, m.best_doc) == ("unlocated", None, None)


def test_short_texts_and_hints(corpus: Corpus) -> None:
    # fewer than three words: found by scanning the documents
    assert found(corpus, "résilier,")[0] == "exact"
    # a hint is tried first: the same sentence in two documents goes where the hint says
    dup = Corpus(["alpha beta gamma delta.", "x alpha beta gamma delta."])
    m = dup.locate("alpha beta gamma delta", hint=1)
    assert (m.doc, m.start) == (1, 2)
    assert dup.locate("alpha beta gamma delta").doc == 0


def test_views_map_back_to_original_offsets() -> None:
    text = "Ça  coûte\u00a0“9,99 €”\r\n— ﬁn de l'infor-\nmation."
    for view in (normalized_view(text), fuzzy_view(text)):
        t = view.text
        for start in range(len(t)):
            for end in range(start + 1, len(t) + 1):
                s, e = view.span(start, end)
                assert 0 <= s < e <= len(text)
    norm = normalized_view(text)
    i = norm.text.index("9,99")
    assert text[slice(*norm.span(i, i + 4))] == "9,99"
    fz = fuzzy_view(text)
    assert fz.text.startswith("ça coûte 9 99 fin de l information")
    i = fz.text.index("information")
    assert text[slice(*fz.span(i, i + len("information")))] == "infor-\nmation"


def test_many_documents_and_texts_at_once() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    docs = [" ".join(rng.choices(words, k=120)) for _ in range(500)]
    # boilerplate shared by every document: its trigrams say nothing about the source
    docs = [d + " please read the terms and conditions carefully" for d in docs]
    corpus = Corpus(docs)
    picks = [(rng.randrange(500), rng.randrange(80)) for _ in range(300)]
    texts = [" ".join(docs[d].split()[s : s + 25]) for d, s in picks]
    texts.append("please read the terms and conditions carefully")
    cands = corpus.candidates(texts)
    for (d, _), text, cand in zip(picks, texts, cands, strict=False):
        assert cand[0] == d
        m = corpus.locate(text, cand)
        assert m.how == "exact" and m.doc == d and docs[d][m.start : m.end] == text
    m = corpus.locate(texts[-1], cands[-1])
    assert m.how == "exact"
