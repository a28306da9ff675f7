"""The Ragas adapter's score-memo basis (part of every French score's memo key): a digest of the translated
files of the prompts its own metric uses, read from disk. Another metric's files appearing in the same folder
(translated concurrently in the same batch, or by a later job) must leave it unchanged; editing one of its
own files must change it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from services.config import JudgeSettings, Settings
from services.metrics.context import ScoringContext
from services.metrics.judges.ragas import _prompt_dump
from services.metrics.registry import load_adapter, resolve


def reference(files: dict[str, bytes]) -> str:
    """The digest as the memo documents it: names and contents in name order, NUL-separated."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()[:32]


def prompt_class(name: str) -> str:
    return name.rsplit("-", 1)[0].rsplit(".", 1)[1]


def test_the_basis_digests_the_metrics_own_prompt_files_only(settings: Settings) -> None:
    settings.judge = JudgeSettings(base_url="http://127.0.0.1:9/v1", model="judge-model")
    fr = ScoringContext(settings, language="fr")
    recall = load_adapter(resolve("ragas.context_recall"))
    faithfulness = load_adapter(resolve("ragas.faithfulness"))
    folder: Path = settings.data_dir / "prompts/ragas/fr/judge-model"
    own = [name for _, name in recall._templates().values()]
    others = [name for _, name in faithfulness._templates().values()]
    assert [prompt_class(n) for n in own] == ["ContextRecallPrompt"]
    # the names translated files have always had (files already on disk stay valid): the prompt's class and
    # a digest of its English text
    from ragas.metrics.collections.context_recall.util import ContextRecallPrompt

    template = ContextRecallPrompt()
    text = json.dumps(_prompt_dump(template), sort_keys=True, ensure_ascii=False)
    cls = f"{ContextRecallPrompt.__module__}.{ContextRecallPrompt.__qualname__}"
    assert own == [f"{cls}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"]
    assert sorted(prompt_class(n) for n in others) == ["NLIStatementPrompt", "StatementGeneratorPrompt"]

    # nothing translated yet: no key (the memo is not consulted)
    assert recall.memo_basis(None, fr) is None
    folder.mkdir(parents=True)
    (folder / own[0]).write_bytes(b'{"instruction": "v1"}')
    basis = recall.memo_basis(None, fr)
    assert basis == reference({own[0]: b'{"instruction": "v1"}'})

    # faithfulness' prompts translated into the same folder, and a stray file: recall's basis is unchanged
    for name in others:
        (folder / name).write_bytes(b'{"instruction": "other"}')
    (folder / "ragas.prompt.Old-0123456789abcdef.json").write_bytes(b"{}")
    assert recall.memo_basis(None, fr) == basis
    assert faithfulness.memo_basis(None, fr) == reference(dict.fromkeys(others, b'{"instruction": "other"}'))

    # one of faithfulness' files edited: faithfulness' basis changes, recall's does not
    before = faithfulness.memo_basis(None, fr)
    (folder / others[0]).write_bytes(b'{"instruction": "edited"}')
    assert faithfulness.memo_basis(None, fr) != before
    assert recall.memo_basis(None, fr) == basis

    # recall's own file edited: its basis changes; removed: no key
    (folder / own[0]).write_bytes(b'{"instruction": "v2"}')
    assert recall.memo_basis(None, fr) == reference({own[0]: b'{"instruction": "v2"}'}) != basis
    (folder / own[0]).unlink()
    assert recall.memo_basis(None, fr) is None

    # English prompts are the library's own: no file to digest
    assert recall.memo_basis(None, ScoringContext(settings, language="en")) == ""


def test_factual_correctness_modes_share_their_prompt_files() -> None:
    names = {
        mode: sorted(
            n for _, n in load_adapter(resolve(f"ragas.factual_correctness:{mode}"))._templates().values()
        )
        for mode in ("f1", "recall", "precision")
    }
    assert names["f1"] == names["recall"] == names["precision"]
    assert sorted(prompt_class(n) for n in names["f1"]) == ["ClaimDecompositionPrompt", "NLIStatementPrompt"]
