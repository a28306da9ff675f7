"""Generation prompts per language. The model must answer from the chunks only and say it does not know
otherwise (the study's system did the same; unanswerable questions test it)."""

from __future__ import annotations

from collections.abc import Sequence

SYSTEM = {
    "fr": (
        "Tu es l'assistant d'une entreprise. Réponds à la question en français, uniquement à partir "
        "des extraits de documents fournis. Si les extraits ne contiennent pas la réponse, dis simplement "
        "que tu ne sais pas et que les documents fournis ne contiennent pas la réponse. N'invente rien. "
        "Réponds de façon concise."
    ),
    "en": (
        "You are a company's assistant. Answer the question in English, using only the document excerpts "
        "provided. If the excerpts do not contain the answer, say that you do not know and that the provided "
        "documents do not contain the answer. Do not invent anything. Answer concisely."
    ),
}
USER = {
    "fr": "Extraits (du plus pertinent au moins pertinent) :\n\n{chunks}\n\nQuestion : {question}",
    "en": "Excerpts (most relevant first):\n\n{chunks}\n\nQuestion: {question}",
}


def build_messages(question: str, chunks: Sequence[str], language: str) -> list[dict[str, str]]:
    """System + user messages; the chunks appear in rank order, numbered [1]..[k]."""
    lang = language.split("-")[0] if language.split("-")[0] in SYSTEM else "en"
    body = "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(chunks, start=1))
    return [
        {"role": "system", "content": SYSTEM[lang]},
        {"role": "user", "content": USER[lang].format(chunks=body, question=question)},
    ]
