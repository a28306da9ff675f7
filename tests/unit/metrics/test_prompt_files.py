"""Every prompt template file carries the placeholders its library fills, read from the library's own English
prompts (its files and sources, without importing the libraries): a translation that loses ``{q}`` or
``{{ retrieval_context }}`` would send the judge a prompt without the text to judge."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import string
from pathlib import Path

import jinja2
import pytest
from jinja2 import meta

from services.metrics.judges import prompts

SITE = Path(importlib.util.find_spec("jinja2").origin or "").parents[1]  # type: ignore[union-attr]
ENV = jinja2.Environment()

# What DeepEval's template methods derive from ``multimodal`` (never true here) or from options the adapters
# never set (``truths_extraction_limit``), not text to judge: a rendering may leave them out.
DEEPEVAL_HELPERS = {
    "_fragments",
    "multimodal",
    "multimodal_instruction",
    "multimodal_note",
    "content_type",
    "content_or",
    "content_type_plural",
    "node_instruction",
    "document_count_str",
    "context_type",
    "empty_context_instruction",
    "extraction_instructions",
    "statement_or_image",
    "limit",
}


def _jinja_vars(text: str) -> set[str]:
    return set(meta.find_undeclared_variables(ENV.parse(text)))


def _format_fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}


def _global(relative: str, name: str) -> str:
    """A string constant of a library module, read from its source (importing refchecker imports litellm)."""
    tree = ast.parse((SITE / relative).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError(f"{name} not found in {relative}")


DEEPEVAL_FILES = [
    (language, name)
    for language in prompts.languages("deepeval")
    for name in prompts.templates("deepeval", language)
]


def test_every_library_with_translations_has_files() -> None:
    assert DEEPEVAL_FILES
    assert prompts.languages("ragchecker") and prompts.languages("opik")


@pytest.mark.parametrize(
    ("language", "name"), DEEPEVAL_FILES, ids=[f"{lang}/{n}" for lang, n in DEEPEVAL_FILES]
)
def test_deepeval_templates_use_the_variables_deepeval_passes(language: str, name: str) -> None:
    english = json.loads((SITE / "deepeval/templates/metrics/templates.json").read_text(encoding="utf-8"))
    cls, _, method = name.partition(".")
    assert method in english.get(cls, {}), f"DeepEval has no template {cls}.{method}"
    wanted = _jinja_vars(english[cls][method])
    got = _jinja_vars(prompts.templates("deepeval", language)[name])
    assert got <= wanted, f"variables DeepEval never passes: {sorted(got - wanted)}"
    missing = wanted - DEEPEVAL_HELPERS - got
    assert not missing, f"variables the translation drops: {sorted(missing)}"
    assert got, "a template without any variable judges nothing"


RAGCHECKER = {
    "triplet_extraction": ("refchecker/extractor/extractor_prompts.py", "LLM_TRIPLET_EXTRACTION_PROMPT_Q"),
    "joint_checking": ("refchecker/checker/checker_prompts.py", "JOINT_CHECKING_PROMPT_Q"),
}


@pytest.mark.parametrize("language", prompts.languages("ragchecker"))
@pytest.mark.parametrize("name", sorted(RAGCHECKER))
def test_ragchecker_templates_keep_what_refchecker_fills_and_parses(language: str, name: str) -> None:
    english = _global(*RAGCHECKER[name])
    text = prompts.templates("ragchecker", language)[name]
    # str.format fields ({q}, {a}) and the [QUESTION] / [REFERENCE] / [CLAIMS] markers refchecker replaces
    assert _format_fields(text) == _format_fields(english)
    markers = set(re.findall(r"\[[A-Z]+\]", english))
    assert {m for m in markers if m in text} == markers
    # the section headers refchecker's parsers rely on stay English
    assert re.findall(r"^###[^\n]*", text, re.M) == re.findall(r"^###[^\n]*", english, re.M)


@pytest.mark.parametrize("language", prompts.languages("opik"))
def test_opik_examples_have_the_fields_of_its_typed_dict(language: str) -> None:
    source = (SITE / "opik/evaluation/metrics/llm_judges/hallucination/template.py").read_text(
        encoding="utf-8"
    )
    cls = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.ClassDef) and n.name == "FewShotExampleHallucination"
    )
    fields = {
        n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    examples = prompts.data("opik", "hallucination_examples", language)
    assert isinstance(examples, list) and examples
    for example in examples:
        assert set(example) == fields
        assert isinstance(example["context"], list) and all(isinstance(c, str) for c in example["context"])
        assert 0.0 <= float(example["score"]) <= 1.0


def test_language_names_cover_the_translated_languages() -> None:
    translated = {lang for lib in ("deepeval", "ragchecker", "opik") for lang in prompts.languages(lib)}
    assert all(prompts.language_name(code) != code for code in translated)
