"""The metric catalogue: metadata registered up front, implementations imported on first use.

Names are stable, lower-case ``library.metric[:variant]``; metrics that read the top k retrieved chunks take
``@k`` (``ref.word_recall@5``). Unknown names fail with "did you mean ...".
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from services.config import Settings
from services.errors import InvalidItems, ItemError
from services.metrics.base import Input, MetricAdapter, MetricSpec, package_version

_Q: tuple[Input, ...] = ("question", "answer")
_QC: tuple[Input, ...] = ("question", "answer", "contexts")
_REF: tuple[Input, ...] = ("answer", "reference_answer")
_POS: tuple[Input, ...] = ("reference_passages", "retrieved_spans")


#: The word rule, said where the word-level metrics are described (the catalogue, GET /metrics).
WORD_RULE_TEXT = (
    "Words (word_rule, per scoring job): 'joined' (default) joins runs of letters and digits across one "
    'apostrophe or hyphen (\' \u2019 - \u2010 \u2011), so "royalty-free", "you\'re", "l\u2019offre" and '
    '"COVID-19" are one word each and "3.5" is two; \'w_runs\' makes every run of \\w characters a word '
    '(Python re.findall(r\'\\w+\')), so "royalty-free" and "you\'re" are two words each. The rule is '
    "recorded in each score's configuration."
)


def _ref(name: str, measure: str, desc: str, words: bool = True) -> MetricSpec:
    return MetricSpec(
        name=f"ref.{name}",
        library="ref",
        package="ragmeta",
        kind="retrieval",
        inputs=_POS,
        higher_is_better=True,
        target="services.metrics.reference:ReferenceAdapter",
        description=f"{desc}. {WORD_RULE_TEXT}" if words else desc,
        uses_k=True,
        options={"measure": measure, "words": words},
    )


def _classic(name: str, package: str, target: str, desc: str, **options: Any) -> MetricSpec:
    return MetricSpec(
        name=f"classic.{name}",
        library="classic",
        package=package,
        kind="overall",
        inputs=_REF,
        higher_is_better=True,
        target=f"services.metrics.classic:{target}",
        description=desc,
        options=options,
        needs_embeddings=target == "BertScoreAdapter",
    )


def _judge(
    library: str,
    package: str,
    name: str,
    kind: str,
    inputs: tuple[Input, ...],
    desc: str,
    higher: bool = True,
    needs_embeddings: bool = False,
    **options: Any,
) -> MetricSpec:
    return MetricSpec(
        name=f"{library}.{name}",
        library=library,
        package=package,
        kind=kind,  # type: ignore[arg-type]
        inputs=inputs,
        higher_is_better=higher,
        target=f"services.metrics.judges.{library}:Adapter",
        description=desc,
        needs_judge=True,
        needs_embeddings=needs_embeddings,
        uses_k="contexts" in inputs,
        options={"metric": name, **options},
    )


_RC: tuple[Input, ...] = ("question", "answer", "contexts", "reference_answer")

CATALOGUE: tuple[MetricSpec, ...] = (
    _ref(
        "word_recall",
        "word_recall",
        "share of the reference passages' words (by position) inside the top-k chunks",
    ),
    _ref(
        "word_precision",
        "word_precision",
        "share of the top-k chunks' words (by position) inside a reference passage",
    ),
    _ref(
        "doc_recall",
        "doc_recall",
        "share of reference passages whose document appears in the top-k chunks",
        words=False,
    ),
    _classic("bleu", "sacrebleu", "BleuAdapter", "sentence BLEU (sacrebleu, effective order), 0-100"),
    _classic(
        "rouge_l",
        "rouge-score",
        "RougeAdapter",
        "ROUGE-L F1 with an accent-preserving tokenizer",
        rouge_type="rougeL",
    ),
    _classic(
        "rouge_lsum",
        "rouge-score",
        "RougeAdapter",
        "ROUGE-Lsum F1 (one sentence per line)",
        rouge_type="rougeLsum",
    ),
    _classic(
        "meteor", "nltk", "MeteorAdapter", "METEOR (nltk): exact + Snowball stem; WordNet synonyms in English"
    ),
    _classic(
        "bertscore_f1",
        "bert-score",
        "BertScoreAdapter",
        "BERTScore F1 with a local sentence-transformers model and an explicit layer",
    ),
    # Ragas
    _judge(
        "ragas",
        "ragas",
        "faithfulness",
        "generation",
        ("question", "answer", "contexts"),
        "share of the answer's statements supported by the retrieved contexts",
    ),
    _judge(
        "ragas",
        "ragas",
        "answer_relevancy",
        "overall",
        _Q,
        "similarity of questions generated from the answer to the question (needs embeddings)",
        needs_embeddings=True,
    ),
    _judge(
        "ragas",
        "ragas",
        "factual_correctness:f1",
        "overall",
        _REF,
        "claim-level F1 against the reference",
        mode="f1",
    ),
    _judge(
        "ragas",
        "ragas",
        "factual_correctness:recall",
        "overall",
        _REF,
        "claim recall against the reference",
        mode="recall",
    ),
    _judge(
        "ragas",
        "ragas",
        "factual_correctness:precision",
        "overall",
        _REF,
        "claim precision against the reference",
        mode="precision",
    ),
    _judge(
        "ragas",
        "ragas",
        "context_precision",
        "retrieval",
        ("question", "contexts", "reference_answer"),
        "precision of useful contexts, rank-weighted, judged against the reference",
    ),
    _judge(
        "ragas",
        "ragas",
        "context_recall",
        "retrieval",
        ("question", "contexts", "reference_answer"),
        "share of the reference's claims attributable to the contexts",
    ),
    # DeepEval
    _judge(
        "deepeval",
        "deepeval",
        "hallucination",
        "generation",
        _QC,
        # DeepEval 4.3.1 reversed this metric's direction (it warns so when built).
        "share of contexts the answer does not contradict (1 = no hallucination)",
    ),
    _judge(
        "deepeval",
        "deepeval",
        "answer_relevancy",
        "overall",
        _Q,
        "share of relevant statements in the answer",
    ),
    _judge(
        "deepeval",
        "deepeval",
        "faithfulness",
        "generation",
        _QC,
        "share of claims not contradicted by contexts",
    ),
    _judge(
        "deepeval",
        "deepeval",
        "contextual_precision",
        "retrieval",
        ("question", "contexts", "reference_answer"),
        "rank-weighted precision of relevant contexts",
    ),
    _judge(
        "deepeval",
        "deepeval",
        "contextual_recall",
        "retrieval",
        ("question", "contexts", "reference_answer"),
        "share of reference sentences attributable to contexts",
    ),
    _judge(
        "deepeval",
        "deepeval",
        "contextual_relevancy",
        "retrieval",
        ("question", "contexts"),
        "share of context statements relevant to the question",
    ),
    # Opik
    _judge(
        "opik",
        "opik",
        "hallucination",
        "generation",
        _QC,
        "graded 0-1: 0 = faithful to the contexts, 1 = entirely unfaithful",
        higher=False,
    ),
    _judge(
        "opik",
        "opik",
        "moderation",
        "overall",
        ("answer",),
        "safety score of the answer (higher = less safe)",
        higher=False,
    ),
    _judge("opik", "opik", "answer_relevance", "overall", _QC, "relevance of the answer to the question"),
    _judge("opik", "opik", "usefulness", "overall", _Q, "usefulness of the answer"),
    _judge(
        "opik",
        "opik",
        "context_precision",
        "overall",
        _RC,
        "how well the answer matches the reference given the contexts (judges the answer)",
    ),
    _judge(
        "opik",
        "opik",
        "context_recall",
        "overall",
        _RC,
        "how much of the reference the answer recovers given the contexts (judges the answer)",
    ),
    # RAGChecker: one judge pass yields all of them
    *(
        _judge("ragchecker", "ragchecker", n, kind, _RC, desc, higher=hib, group="ragchecker")
        for n, kind, hib, desc in (
            ("precision", "overall", True, "share of answer claims entailed by the reference"),
            ("recall", "overall", True, "share of reference claims entailed by the answer"),
            ("f1", "overall", True, "harmonic mean of claim precision and recall"),
            ("claim_recall", "retrieval", True, "share of reference claims entailed by the contexts"),
            ("context_precision", "retrieval", True, "share of contexts entailing a reference claim"),
            (
                "context_utilization",
                "generation",
                True,
                "share of context-supported reference claims the answer gets right",
            ),
            (
                "noise_sensitivity_in_relevant",
                "generation",
                False,
                "incorrect claims taken from relevant contexts",
            ),
            (
                "noise_sensitivity_in_irrelevant",
                "generation",
                False,
                "incorrect claims taken from irrelevant contexts",
            ),
            ("hallucination", "generation", False, "incorrect claims supported by no context"),
            ("self_knowledge", "generation", False, "correct claims supported by no context"),
            ("faithfulness", "generation", True, "share of answer claims supported by the contexts"),
        )
    ),
)
BY_NAME = {spec.name: spec for spec in CATALOGUE}


@dataclass(frozen=True)
class Resolved:
    spec: MetricSpec
    k: int

    @property
    def full_name(self) -> str:
        return self.spec.full_name(self.k)


def resolve(name: str, default_k: int = 5) -> Resolved:
    """``ref.word_recall@3`` -> (spec, 3); ``ref.word_recall`` -> (spec, default_k). Raises KeyError."""
    base, _, k_text = name.partition("@")
    spec = BY_NAME.get(base)
    if spec is None:
        close = difflib.get_close_matches(base, BY_NAME, n=3, cutoff=0.5)
        raise KeyError(f"unknown metric {name!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    if k_text and not spec.uses_k:
        raise KeyError(f"metric {base!r} does not take @k")
    if k_text and not (k_text.isdigit() and int(k_text) >= 1):
        raise KeyError(f"@{k_text} is not a positive integer k")
    return Resolved(spec, int(k_text) if k_text else default_k)


def resolve_all(names: list[str], default_k: int, field: str = "metrics") -> list[Resolved]:
    out, errors = [], []
    for i, name in enumerate(names):
        try:
            out.append(resolve(name, default_k))
        except KeyError as exc:
            errors.append(ItemError(None, f"{field}[{i}]", str(exc.args[0])))
    if errors:
        raise InvalidItems("unknown metric name(s)", errors)
    return out


def availability(spec: MetricSpec, settings: Settings) -> tuple[bool, str | None]:
    """Whether the metric can run here, and why not."""
    module = spec.target.partition(":")[0]
    if spec.needs_judge and not settings.judge.configured:
        return False, "no judge configured (set RAGMETA_JUDGE__BASE_URL and RAGMETA_JUDGE__MODEL)"
    if spec.package and spec.package != "ragmeta" and package_version(spec.package) is None:
        return False, f"package not installed: {spec.package}"
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return False, f"no adapter for {spec.library} in this version of ragmeta"
    return True, None


def load_adapter(resolved: Resolved | MetricSpec) -> MetricAdapter:
    """The metric's adapter (stateless: what a call needs comes in its ScoringContext)."""
    spec = resolved.spec if isinstance(resolved, Resolved) else resolved
    module, _, cls = spec.target.partition(":")
    adapter: MetricAdapter = getattr(importlib.import_module(module), cls)(spec)
    return adapter


def prompt_language(spec: MetricSpec, settings: Settings, language: str) -> str | None:
    """The language a judge metric's prompts run in for a dataset of ``language``; None without a judge."""
    if not spec.needs_judge:
        return None
    from services.metrics.context import ScoringContext

    adapter = load_adapter(spec)
    prompts = getattr(adapter, "prompt_language", None)
    return str(prompts(ScoringContext(settings, language=language))) if prompts is not None else "en"
