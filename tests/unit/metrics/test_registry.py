from __future__ import annotations

import subprocess
import sys

import pytest

from services.config import Settings
from services.errors import InvalidItems
from services.metrics import registry


def test_names_are_stable_and_unique() -> None:
    names = [s.name for s in registry.CATALOGUE]
    assert len(names) == len(set(names))
    assert all(
        n == n.lower() and n.split(".")[0] in {"ref", "classic", "ragas", "deepeval", "opik", "ragchecker"}
        for n in names
    )
    assert len([n for n in names if n.startswith("ragchecker.")]) == 11


def test_resolve_k_and_did_you_mean() -> None:
    r = registry.resolve("ref.word_recall@3")
    assert (r.spec.name, r.k, r.full_name) == ("ref.word_recall", 3, "ref.word_recall@3")
    assert registry.resolve("ref.word_recall", 7).full_name == "ref.word_recall@7"
    assert registry.resolve("classic.bleu", 7).full_name == "classic.bleu"
    with pytest.raises(KeyError, match=r"did you mean ref\.word_recall"):
        registry.resolve("ref.word_recal")
    with pytest.raises(KeyError, match="does not take @k"):
        registry.resolve("classic.bleu@5")
    with pytest.raises(InvalidItems) as info:
        registry.resolve_all(["classic.bleu", "nope.metric"], 5)
    assert info.value.items[0].field == "metrics[1]"


def test_judge_metrics_unavailable_without_judge() -> None:
    ok, why = registry.availability(registry.BY_NAME["ragas.faithfulness"], Settings())
    assert not ok and "no judge configured" in (why or "")
    assert registry.availability(registry.BY_NAME["classic.bleu"], Settings()) == (True, None)


def test_importing_the_app_loads_no_metric_or_statistics_library() -> None:
    # The statistics' libraries load in the report processes (services.stats.warm_up), not in the API's
    # start-up, which /healthz waits for (scipy.special through services.stats.special, on first use).
    code = (
        "import sys; import app.main; from services.metrics import registry; "
        "[registry.availability(s, registry.Settings()) for s in registry.CATALOGUE]; "
        "heavy = [m for m in ('torch', 'sacrebleu', 'nltk', 'bert_score', 'rouge_score', 'ragas', "
        "'deepeval', 'opik', 'ragchecker', 'sentence_transformers', 'transformers', 'scipy.stats', "
        "'scipy.sparse', 'scipy.special', 'pandas', 'pingouin', 'sklearn', 'numba', 'matplotlib') "
        "if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
