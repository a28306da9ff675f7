"""A small synthetic study (corpus, questions, gold passages, a system's answers and retrieved chunks, two
raters) from which the tests write files in each library's own format, with the library's own writer.

Answers and retrievals vary in quality on purpose, and the raters follow the answer quality, so that every
analysis of a report has something to correlate."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOPICS = [
    ("billing", "Billing"),
    ("delivery", "Delivery"),
    ("returns", "Returns"),
    ("warranty", "Warranty"),
    ("accounts", "Accounts"),
    ("support", "Support"),
]
SENTENCES = {
    "billing": [
        "Invoices are issued on the first working day of every month.",
        "A late payment adds a fee of twelve euros after fifteen days.",
        "Customers may pay by card, bank transfer or direct debit.",
        "Refunds for billing errors are credited within ten days.",
    ],
    "delivery": [
        "Standard delivery takes three to five working days in mainland France.",
        "Express delivery arrives the next day when ordered before noon.",
        "Parcels above thirty kilograms are delivered by a freight partner.",
        "Delivery to the islands costs an extra nine euros.",
    ],
    "returns": [
        "Items can be returned within thirty days of delivery.",
        "Returned items must be unused and in their original packaging.",
        "The return label is free for members of the loyalty programme.",
        "Refunds for returns are issued once the warehouse checks the item.",
    ],
    "warranty": [
        "Every appliance carries a two-year manufacturer warranty.",
        "The warranty does not cover damage caused by a fall or by water.",
        "An extended warranty of three more years can be bought at checkout.",
        "Repairs under warranty are done at an approved service centre.",
    ],
    "accounts": [
        "A customer account is created with an email address and a password.",
        "Passwords must have at least twelve characters.",
        "Two-factor authentication can be enabled in the security settings.",
        "An account unused for three years is closed after a warning email.",
    ],
    "support": [
        "The support line is open from eight in the morning to eight in the evening.",
        "Chat support answers within five minutes on average.",
        "Complaints are answered in writing within fifteen days.",
        "A technician visit can be booked online for a fee of forty euros.",
    ],
}
QUESTIONS = [
    ("q01", "billing", 1, "How much is the late payment fee?", 4),
    ("q02", "delivery", 0, "How long does standard delivery take?", 3),
    ("q03", "returns", 0, "How long do I have to return an item?", 4),
    ("q04", "warranty", 1, "Does the warranty cover water damage?", 1),
    ("q05", "accounts", 1, "How long must a password be?", 2),
    ("q06", "support", 1, "How fast does chat support answer?", 0),
    ("q07", "billing", 2, "How can I pay?", 3),
    ("q08", "delivery", 3, "How much does delivery to the islands cost?", 1),
    ("q09", "warranty", 2, "Can I extend the warranty?", 4),
    ("q10", "support", 3, "How much does a technician visit cost?", 0),
]


@dataclass(frozen=True)
class Item:
    question_id: str
    question: str
    reference: str
    gold: str
    answer: str
    contexts: list[str]
    quality: int


def documents() -> list[dict[str, Any]]:
    return [
        {"external_id": key, "title": title, "text": f"# {title}\n\n" + "\n".join(SENTENCES[key])}
        for key, title in TOPICS
    ]


def items() -> list[Item]:
    out = []
    for n, (qid, topic, k, question, quality) in enumerate(QUESTIONS):
        gold = SENTENCES[topic][k]
        other = TOPICS[(n + 1) % len(TOPICS)][0]
        words = gold.split()
        answers = {
            4: gold,
            3: " ".join(words[: max(3, len(words) * 3 // 4)]) + ".",
            2: " ".join(words[: max(2, len(words) // 2)]) + ".",
            1: "It depends on the " + words[-1],
            0: "I do not know.",
        }
        # Retrieval follows the answer quality: the gold sentence ranked first, later, or not at all.
        gold_chunk = gold + " " + SENTENCES[topic][(k + 1) % 4]
        noise = [SENTENCES[other][0], SENTENCES[other][2]]
        if quality >= 3:
            contexts = [gold_chunk, *noise]
        elif quality >= 1:
            contexts = [*noise, gold]
        else:
            contexts = noise
        out.append(Item(qid, question, gold, gold, answers[quality], contexts, quality))
    return out


def ratings() -> list[dict[str, Any]]:
    out = []
    for n, it in enumerate(items()):
        out.append({"question_id": it.question_id, "rater": "alice", "score": it.quality + 1})
        out.append(
            {
                "question_id": it.question_id,
                "rater": "bob",
                "score": max(1, min(5, it.quality + 1 + (n % 3 - 1))),
            }
        )
    return out


def corpus_jsonl() -> bytes:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents()).encode()


def write_ragas_csv(path: Path) -> Path:
    """Ragas' own writer: EvaluationDataset.to_csv (list cells as Python literals)."""
    from ragas import EvaluationDataset, SingleTurnSample

    samples = [
        SingleTurnSample(
            user_input=it.question,
            retrieved_contexts=it.contexts,
            reference_contexts=[it.gold],
            response=it.answer,
            reference=it.reference,
        )
        for it in items()
    ]
    EvaluationDataset(samples=samples).to_csv(path)
    return path


def write_deepeval_json(directory: Path) -> Path:
    """DeepEval's own writer: test cases saved with EvaluationDataset.save_as (JSON)."""
    from deepeval.dataset import EvaluationDataset
    from deepeval.test_case import LLMTestCase

    ds = EvaluationDataset()
    for it in items():
        ds.add_test_case(
            LLMTestCase(
                input=it.question,
                actual_output=it.answer,
                expected_output=it.reference,
                retrieval_context=it.contexts,
                context=[it.gold],
            )
        )
    return Path(
        ds.save_as(file_type="json", directory=str(directory), file_name="deepeval", include_test_cases=True)
    )


def write_ragchecker_json(path: Path) -> Path:
    """RAGChecker's own container, serialised as its results file (RAGResults.to_json)."""
    from ragchecker.container import RAGResult, RAGResults, RetrievedDoc

    doc_of = {s: key for key, sents in SENTENCES.items() for s in sents}
    results = RAGResults(
        results=[
            RAGResult(
                query_id=it.question_id,
                query=it.question,
                gt_answer=it.reference,
                response=it.answer,
                retrieved_context=[
                    RetrievedDoc(doc_id=doc_of.get(c.split(". ")[0] + "."), text=c) for c in it.contexts
                ],
            )
            for it in items()
        ]
    )
    path.write_text(results.to_json(), encoding="utf-8")  # type: ignore[attr-defined]
    return path


def gold_passages() -> list[dict[str, str]]:
    return [{"question_id": it.question_id, "text": it.gold} for it in items()]
