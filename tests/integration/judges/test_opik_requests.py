"""The Opik adapter sends its judge requests through the openai SDK, not litellm: every request body must
be the one litellm sends for the same metric call (Opik's own ``LiteLLMChatModel`` is the oracle), and the
judge's answer must come back to the metric as the same score and reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.metrics.judges import opik as adapter
from tests.fakellm import FakeLLM
from tests.judgefake import start_judge

# Every metric the adapter serves, with inputs as its ``_inputs`` gives them; accents, quotes, newlines and
# an empty reference are in the text on purpose (they pass through two JSON encoders).
CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "Hallucination",
        {"input": "Combien coûte « Essentiel » ?", "output": "9,99 €", "context": ["a\nb", "c"]},
    ),
    ("Moderation", {"output": 'Il a dit "non"\t; 😀'}),
    ("AnswerRelevance", {"input": "Q ?", "output": "A.", "context": ["ctx"]}),
    ("Usefulness", {"input": "Q ?", "output": "A."}),
    ("ContextPrecision", {"input": "Q", "output": "A", "expected_output": "", "context": ["x", "y"]}),
    ("ContextRecall", {"input": "Q", "output": "A", "expected_output": "R", "context": []}),
]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every call made through litellm from here on."""
    import litellm

    calls: list[dict[str, Any]] = []
    real = litellm.acompletion

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return await real(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    return calls


@pytest.fixture
def judge() -> Iterator[FakeLLM]:
    server = start_judge()
    yield server
    server.stop()


def _model(model_class: Any, judge: FakeLLM, http: httpx.AsyncClient, name: str, **options: Any) -> Any:
    """A model of ``model_class`` for the judge model ``name``, built as the adapter builds its own."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=judge.base_url, api_key="k", http_client=http, max_retries=0, timeout=9)
    return model_class(
        model_name=f"openai/{name}",
        base_url=judge.base_url,
        api_key="k",
        track=False,
        client=client,
        timeout=9,
        **options,
    )


def _run(model_class: Any, judge: FakeLLM, examples: list[dict[str, Any]] | None) -> list[Any]:
    """Each call of ``CALLS`` scored with a model of ``model_class`` built as the adapter builds its own."""
    from opik.evaluation import metrics

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as http:
            model = _model(model_class, judge, http, "org/judge-7b", temperature=0.3)
            results = []
            for name, inputs in CALLS:
                kwargs: dict[str, Any] = {"model": model, "track": False}
                if name == "Hallucination" and examples is not None:
                    kwargs["few_shot_examples"] = examples
                result = await getattr(metrics, name)(**kwargs).ascore(**inputs)
                results.append((result.value, result.reason, result.scoring_failed))
            return results

    return asyncio.run(go())


@pytest.mark.parametrize("language", ["en", "fr"])
def test_each_request_is_the_one_litellm_sends_and_scores_the_same(
    judge: FakeLLM, sent: list[dict[str, Any]], language: str
) -> None:
    from opik.evaluation.models import LiteLLMChatModel

    lib = adapter._load()
    examples = adapter._examples(language)
    assert (examples is not None) == (language == "fr")

    through_litellm = _run(LiteLLMChatModel, judge, examples)
    oracle = [json.loads(json.dumps(body)) for body in judge.requests]
    assert len(sent) == len(CALLS)  # Opik's own model: every call through litellm
    judge.requests.clear()
    sent.clear()

    direct = _run(lib.model, judge, examples)

    assert sent == [], "the adapter's model went through litellm"
    assert len(oracle) == len(CALLS)
    assert judge.requests == oracle
    assert oracle[0]["model"] == "org/judge-7b" and oracle[0]["temperature"] == 0.3
    assert direct == through_litellm
    assert all(not failed for _, _, failed in direct)


def test_a_call_with_arguments_it_does_not_send_itself_goes_through_litellm(
    judge: FakeLLM, sent: list[dict[str, Any]]
) -> None:
    lib = adapter._load()

    async def go() -> Any:
        async with httpx.AsyncClient() as http:
            return await _model(lib.model, judge, http, "judge").agenerate_string("Say hi", seed=7)

    assert isinstance(asyncio.run(go()), str)
    assert len(sent) == 1 and sent[0]["seed"] == 7
    assert judge.requests[-1]["seed"] == 7


@pytest.mark.parametrize(
    ("model", "through_litellm"),
    # gpt-5-mini: Opik itself drops its temperature, and litellm sends the rest as it is.
    [("gpt-4o-mini", False), ("o3-mini", True), ("gpt-5-mini", False), ("org/judge-7b", False)],
)
def test_models_whose_parameters_litellm_rewrites_go_through_litellm(
    judge: FakeLLM, sent: list[dict[str, Any]], model: str, through_litellm: bool
) -> None:
    # At temperature 0, litellm refuses the temperature of OpenAI's o-series models: those calls take
    # litellm's path, so that what reaches the judge (or the error) is litellm's.
    from opik.evaluation import metrics
    from opik.evaluation.models import LiteLLMChatModel

    lib = adapter._load()

    def outcome(model_class: Any) -> tuple[Any, list[dict[str, Any]]]:
        judge.requests.clear()

        async def go() -> Any:
            async with httpx.AsyncClient() as http:
                made = _model(model_class, judge, http, model, temperature=0.0)
                try:
                    result = await metrics.Moderation(model=made, track=False).ascore(output="a")
                except Exception as exc:
                    return type(exc).__name__
                return result.value, result.scoring_failed

        return asyncio.run(go()), [json.loads(json.dumps(b)) for b in judge.requests]

    oracle = outcome(LiteLLMChatModel)
    sent.clear()
    ours = outcome(lib.model)
    assert ours == oracle
    assert bool(sent) is through_litellm
