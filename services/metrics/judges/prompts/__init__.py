"""Prompt templates are data: the libraries' prompts in other languages, one file per library, language and
prompt, loaded by name.

    deepeval/<lang>/<MetricClass>.<method>.jinja   Jinja templates rendered with the variables DeepEval passes
    ragchecker/<lang>/<prompt>.txt                 refchecker's prompt globals ({q}, {a}, [CLAIMS]...)
    opik/<lang>/<metric>_examples.json             few-shot examples in Opik's TypedDict shape
    languages.json                                 language code -> its English name (the one Ragas' prompt
                                                   adaptation expects)

Ragas' own translations are made by the judge (``BasePrompt.adapt``) and kept under the data directory.
``tests/unit/metrics/test_prompt_files.py`` checks every template against the placeholders its library fills.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


@functools.cache
def templates(library: str, language: str) -> dict[str, str]:
    """Every text template of ``library`` in ``language``, by name (the file name without its extension)."""
    folder = ROOT / library / language
    if not folder.is_dir():
        return {}
    return {
        p.name.rsplit(".", 1)[0]: p.read_text(encoding="utf-8")
        for p in sorted(folder.iterdir())
        if p.suffix in (".jinja", ".txt")
    }


@functools.cache
def data(library: str, name: str, language: str | None = None) -> Any:
    """A JSON file of ``library`` (``<library>/<language>/<name>.json``, or ``<library>/<name>.json``);
    None when there is none."""
    path = ROOT / library / (language or "") / f"{name}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def languages(library: str) -> list[str]:
    """The languages ``library`` has templates for."""
    folder = ROOT / library
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


@functools.cache
def _names() -> dict[str, str]:
    names: dict[str, str] = json.loads((ROOT / "languages.json").read_text(encoding="utf-8"))
    return names


def language_name(code: str) -> str:
    """The English name of a language code, lower-case ("fr" -> "french"); the code itself when unknown."""
    return _names().get(code, code)
