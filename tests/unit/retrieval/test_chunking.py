from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.retrieval.chunking import Chunk, chunk_document, split_pages
from services.retrieval.segment import count_words, word_spans

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRENCH_WORDS = [
    "L’offre",
    "d'aujourd'hui",
    "économie",
    "très",
    "à",
    "où",
    "Noël",
    "peut-être",
    "œuvre",
    "ÇA",
    "garçon",
    "3.5",
    "COVID-19",
    "M.",
    "etc.",
    "«",
    "»",
    "😀",
    "🇫🇷",
    "e\u0301te\u0301",
    "naïve",
    "Straße",
    "東京",
    "—",
    "'",
    "-",
]
PUNCT = ["", "", "", ".", ",", " !", " ?", ";", "…", ":"]
SEPARATORS = [" ", " ", " ", "\t", "\n", "\r\n", "\n\n", "\r\n\r\n", "\n \n", "\u00a0", "\u2028"]


@st.composite
def sentences(draw: st.DrawFn) -> str:
    words = draw(
        st.lists(st.sampled_from(FRENCH_WORDS) | st.text(min_size=1, max_size=6), min_size=1, max_size=12)
    )
    return " ".join(words) + draw(st.sampled_from(PUNCT))


@st.composite
def markdown_docs(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["heading", "para", "para", "list", "fence", "raw"]))
        if kind == "heading":
            level = draw(st.integers(1, 7))
            parts.append(" " * draw(st.integers(0, 4)) + "#" * level + draw(st.sampled_from([" ", "\t", ""])))
            parts.append(draw(sentences()))
        elif kind == "para":
            parts.append(" ".join(draw(st.lists(sentences(), min_size=1, max_size=5))))
        elif kind == "list":
            parts.append("\n".join("- " + s for s in draw(st.lists(sentences(), min_size=1, max_size=4))))
        elif kind == "fence":
            parts.append("```\n# pas un titre\n" + draw(sentences()) + "\n```")
        else:
            parts.append(draw(st.text(max_size=30)))
        parts.append(draw(st.sampled_from(SEPARATORS)))
    return "".join(parts)


any_text = st.text(max_size=400) | markdown_docs()


def doc_words_in(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(s, e) for s, e in word_spans(text) if start <= s < end]


def check_chunks(text: str, chunks: list[Chunk], chunk_words: int) -> None:
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text and not c.text[0].isspace() and not c.text[-1].isspace()
        words = doc_words_in(text, c.start, c.end)
        assert len(words) <= chunk_words
        # No word straddles a chunk boundary, and the chunk re-tokenises to the same words.
        assert all(e <= c.end for _, e in words)
        assert [(s + c.start, e + c.start) for s, e in word_spans(c.text)] == words


@PROPERTY
@given(text=any_text, page_words=st.integers(1, 40), chunk_words=st.integers(1, 20), data=st.data())
def test_offsets_bounds_and_coverage(
    text: str, page_words: int, chunk_words: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, chunk_words - 1))
    pages = split_pages("doc", text, page_words=page_words)
    chunks = chunk_document(
        "doc", text, page_words=page_words, chunk_words=chunk_words, overlap_words=overlap
    )
    check_chunks(text, chunks, chunk_words)

    covered_by_pages = [False] * len(text)
    for i, page in enumerate(pages):
        assert page.index == i and text[page.start : page.end] == page.text
        assert len(doc_words_in(text, page.start, page.end)) <= page_words
        if i:
            assert pages[i - 1].end <= page.start
        for pos in range(page.start, page.end):
            covered_by_pages[pos] = True
    covered = [False] * len(text)
    for c in chunks:
        page = pages[c.page_index]
        assert page.start <= c.start and c.end <= page.end
        for pos in range(c.start, c.end):
            covered[pos] = True
    non_ws = [i for i, ch in enumerate(text) if not ch.isspace()]
    assert all(covered_by_pages[i] for i in non_ws)
    assert all(covered[i] for i in non_ws)
    # Full coverage of words: every word lies entirely inside at least one chunk.
    for s, e in word_spans(text):
        assert any(c.start <= s and e <= c.end for c in chunks)


@PROPERTY
@given(text=any_text, chunk_words=st.integers(2, 20), data=st.data())
def test_overlap_is_exact(text: str, chunk_words: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(1, chunk_words - 1))
    with_overlap = chunk_document("d", text, page_words=25, chunk_words=chunk_words, overlap_words=overlap)
    # Own contents are exactly the chunks of an overlap-free split at chunk_words - overlap.
    own = chunk_document("d", text, page_words=25, chunk_words=chunk_words - overlap)
    assert len(with_overlap) == len(own)
    for i, (c, base) in enumerate(zip(with_overlap, own, strict=True)):
        assert c.end == base.end and c.start <= base.start and c.page_index == base.page_index
        assert c.heading_path == base.heading_path
        borrowed = len(doc_words_in(text, c.start, base.start))
        if i == 0 or own[i - 1].page_index != base.page_index:
            assert c.start == base.start
        else:
            previous_words = len(doc_words_in(text, own[i - 1].start, own[i - 1].end))
            assert borrowed == min(overlap, previous_words)
            assert len(doc_words_in(text, c.start, with_overlap[i - 1].end)) <= overlap


@PROPERTY
@given(text=any_text)
def test_default_sizes_keep_short_documents_whole(text: str) -> None:
    chunks = chunk_document("d", text)
    if text.strip() and count_words(text) <= 200:
        assert len(chunks) == 1
        assert chunks[0].text == text.strip()
    check_chunks(text, chunks, 200)


def test_empty_and_whitespace_documents() -> None:
    assert chunk_document("d", "") == []
    assert chunk_document("d", " \r\n\t\n ") == []
    assert split_pages("d", "\n\n") == []


def test_crlf_french_and_heading_paths() -> None:
    text = (
        "# Guide\r\n\r\nIntroduction générale.\r\n\r\n"
        "## Tarifs\r\n\r\nL’abonnement mensuel coûte douze euros. Il est résiliable à tout moment.\r\n\r\n"
        "### Réductions\r\n\r\nLes étudiants ont droit à une réduction de moitié.\r\n\r\n"
        "## Contact\r\n\r\nÉcrivez-nous aujourd'hui.\r\n"
    )
    chunks = chunk_document("guide", text, page_words=20, chunk_words=10)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    assert chunks[0].text.startswith("# Guide\r\n\r\nIntroduction")
    assert chunks[0].heading_path == ("Guide",)
    paths = {c.heading_path for c in chunks}
    assert ("Guide", "Tarifs", "Réductions") in paths
    assert ("Guide", "Contact") in paths
    reduction = next(c for c in chunks if "étudiants" in c.text)
    assert reduction.heading_path == ("Guide", "Tarifs", "Réductions")
    assert reduction.text.startswith("### Réductions")
    # Page 0 holds the first sections, the contact section starts on a later page.
    contact = next(c for c in chunks if "Écrivez" in c.text)
    assert contact.page_index > 0


def test_sections_are_preferred_cut_points() -> None:
    section = "Une phrase de cinq mots. " * 4
    text = "\n\n".join(f"## Partie {i}\n\n{section}" for i in range(6))
    pages = split_pages("d", text, page_words=50)
    # 22 words per section: two whole sections fit in a page, never a section cut in half.
    assert [p.text.count("## Partie") for p in pages] == [2, 2, 2]
    assert all(p.text.startswith("## Partie") for p in pages)


def test_long_paragraph_is_cut_at_sentences_then_words() -> None:
    sentence = "Le chat dort sur le tapis rouge."
    text = " ".join([sentence] * 5)
    chunks = chunk_document("d", text, chunk_words=14)
    assert [c.text for c in chunks] == [" ".join([sentence] * 2)] * 2 + [sentence]
    run_on = " ".join(f"mot{i}" for i in range(25))
    chunks = chunk_document("d", run_on, chunk_words=10)
    assert [count_words(c.text) for c in chunks] == [10, 10, 5]


def test_headings_inside_code_fences_are_ignored() -> None:
    text = "# Vrai titre\n\n```python\n# commentaire\nx = 1\n```\n\nSuite du texte."
    chunks = chunk_document("d", text)
    assert chunks[0].heading_path == ("Vrai titre",)
    assert len(chunks) == 1


def test_heading_title_normalisation() -> None:
    text = "## Titre fermé ##\n\ntexte\n\n#pas-un-titre\n\n####### sept\n\nfin"
    chunks = chunk_document("d", text, chunk_words=1)
    assert {c.heading_path for c in chunks} == {("Titre fermé",)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"page_words": 0}, "page_words"),
        ({"chunk_words": 0}, "chunk_words"),
        ({"chunk_words": 5, "overlap_words": 5}, "overlap_words"),
        ({"overlap_words": -1}, "overlap_words"),
    ],
)
def test_invalid_parameters(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_document("d", "texte", **kwargs)


def test_word_spans_definition() -> None:
    text = "L’offre d'aujourd'hui, peut-être 3.5 «COVID-19» 'cité' -- e\u0301te\u0301 😀"
    assert [text[s:e] for s, e in word_spans(text)] == [
        "L’offre",
        "d'aujourd'hui",
        "peut-être",
        "3",
        "5",
        "COVID-19",
        "cité",
        "e\u0301te\u0301",
    ]
