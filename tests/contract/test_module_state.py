# ruff: noqa: E501  (one allow-list entry a line: its reason beside its name)
"""No hidden state: module-level mutable objects in app/ and services/ are listed here, each with its reason.

What a process keeps for its life (engines, sessions, loaded indexes and models, LLM clients, pools,
limiters, caches) belongs to the resources its owner opens and closes (services.resources, app.resources).
This test reads the code's syntax tree and finds, at module level, assignments of dict / list / set literals,
comprehensions or calls that make a mutable object (dict(), OrderedDict(), defaultdict(), deque(), Lock(),
WeakValueDictionary() ...), functions memoised with functools.cache / lru_cache, and every ``global``
statement. A new one fails: own it in the resources, or, for a constant table, freeze it (tuple, frozenset,
MappingProxyType); genuinely process-wide state (a library patched once, a worker process's own state) is
added to STATE with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "bytearray",
        "defaultdict",
        "OrderedDict",
        "deque",
        "Counter",
        "Lock",
        "RLock",
        "Semaphore",
        "BoundedSemaphore",
        "Event",
        "Condition",
        "WeakValueDictionary",
        "WeakKeyDictionary",
        "WeakSet",
        "local",
    }
)
LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)

# Mutable module state kept on purpose: process-wide by nature, bounded, or left to another change.
STATE = {
    "services.metrics.judges.opik:_load_lock": "guards opik's one-time import and patching, which is process-wide by nature",
    "services.metrics.judges.opik:global _loaded": "opik's classes, imported and patched once per process (a library's module state, not ours)",
    "services.metrics.judges.ragas:_files_lock": "serialises ragas' writes of its own files in the process",
    "services.metrics.judges.ragas:_templates_lock": "guards _templates",
    "services.metrics.judges.ragas:_templates": "prompt templates translated once per language from files (bounded by the languages; immutable once built)",
    "services.metrics.judges.ragas:_userid_lock": "guards ragas' one-time user-id (telemetry opt-out) setup",
    "services.metrics.judges.ragas:global _userid_ready": "ragas' one-time user-id setup is process-wide",
    "services.metrics.judges.ragas:_schema_lock": "guards _schema_cached",
    "services.metrics.judges.ragas:_schema_cached": "pydantic classes whose schema was built once (bounded by ragas' classes)",
    "services.metrics.judges.ragchecker:_setup_lock": "guards ragchecker's one-time patching",
    "services.metrics.judges.ragchecker:_path_locks": "weak per-path locks: entries vanish when no caller holds them",
    "services.metrics.judges.ragchecker:global _ready": "ragchecker's one-time patching is process-wide",
    "services.metrics.wordnet:_lock": "guards the one-time load of the WordNet reader",
    "services.metrics.wordnet:global _reader": "the read-only WordNet reader shared by METEOR, loaded once (data, not a cache that grows)",
    "services.reports.pool:_worker": "the state of a report worker process, set by its initializer (one per child process, by design)",
    "services.retrieval.text:_ANALYZERS": "analyzers per language code (immutable, bounded by the languages a dataset declares)",
    "services.stats_kernels:_pool_lock": "left: the statistics modules are being moved (issue 27, item 4)",
    "services.stats_kernels:global _pool": "left: the statistics modules are being moved (issue 27, item 4)",
    "services.config:get_settings()": "the settings from the environment, read once (lru_cache); tests pass their own",
    "services.metrics.base:package_version()": "installed package versions: fixed for the life of the process",
    "services.metrics.judges.deepeval:_template_class()": "classes built once from deepeval's (immutable, one per metric)",
    "services.metrics.judges.deepeval:_json_schema()": "classes built once from deepeval's (immutable, one per metric)",
    "services.metrics.judges.deepeval:_judge_class()": "one class built once (immutable)",
    "services.metrics.judges.prompts.__init__:templates()": "prompt files read once (data shipped with the code)",
    "services.metrics.judges.prompts.__init__:data()": "prompt files read once (data shipped with the code)",
    "services.metrics.judges.prompts.__init__:_names()": "prompt files read once (data shipped with the code)",
}

# Constant tables written as dict / list / set literals, never mutated: to be frozen as they are next touched.
# This list may only shrink (a new table is written frozen).
TABLES = frozenset(
    {
        "app.client:REPORT_FORMATS",
        "app.compare_client:FORMATS",
        "app.demo:RUNS",
        "app.errors:_DESCRIPTIONS",
        "app.errors:_HTTP_NAMES",
        "app.errors:_BUSY_SQLSTATES",
        "app.main:EXTRA_SCHEMAS",
        "app.routers.estimates:_WITH_CSV",
        "app.routers.reports:_CSV",
        "app.routers.reports:MEDIA",
        "app.routers.reports:_ITEMS_HTML",
        "app.routers.reports:_FRESHNESS",
        "app.routers.web:TITLES",
        "services.csvread:_NAMES",
        "services.datasets.schemas:NOT_BLANK",
        "services.kinds:KINDS",
        "services.kinds:ACCEPTED",
        "services.kinds:ACCEPTS",
        "services.kinds:_RATER",
        "services.kinds:_SCORE",
        "services.metrics.classic:_SNOWBALL",
        "services.metrics.inline:_CARRIED",
        "services.metrics.inline:_FIELD",
        "services.metrics.judges.deepeval:_METRICS",
        "services.metrics.judges.opik:_CLASSES",
        "services.metrics.judges.opik:_SCALES",
        "services.metrics.judges.ragas:_SCALES",
        "services.metrics.judges.ragas:_NAN_REASONS",
        "services.metrics.registry:BY_NAME",
        "services.metrics.wordnet:_POS",
        "services.offline:OFFLINE_ENV",
        "services.rag.index:NEEDS",
        "services.rag.prompts:SYSTEM",
        "services.rag.prompts:USER",
        "services.ratings.schemas:DEFAULT_RUBRIC_LEVELS",
        "services.ratings.schemas:PREFERENCE_IMPORT_LEVELS",
        "services.reports.coverage:_ANALYSES",
        "services.reports.estimates:ASSUMPTIONS",
        "services.reports.presentation.figure:LIB_COLOURS",
        "services.reports.presentation.figure:LIB_ORDER",
        "services.reports.presentation.figure:SHORT_REASONS",
        "services.reports.service:TITLES",
        "services.reports.presentation.text:LIBRARY_LABELS",
        "services.retrieval.extractive:I_DONT_KNOW",
        "services.retrieval.extractive:_QUESTION_WORDS",
        "services.retrieval.text:_LANGUAGE_NAMES",
        "services.retrieval.text:_STEMMERS",
        "services.runs.repository:_RATING_COLUMNS",
        "services.runs.repository:_SCORE_COLUMNS",
        "services.scores.external:_CATALOGUE_NAMES",
        "services.scores.external:_OTHER_KNOWN",
        "services.stats.corr_kernels:_KERNELS",
        "services.studies.files:_DOC_KEYS",
        "services.studies.formats:KEYS",
        "services.studies.formats:ALIASES",
        "services.tasks.schemas:PREFERENCE_LEVELS",
        "services.tasks.service:POINTWISE_COLUMNS",
        "services.validation:_LABELS",
    }
)


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)
            yield from _module_level(getattr(node, "finalbody", []))
        else:
            yield node


def module_state(path: Path, module: str) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _module_level(tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            mutable = isinstance(value, LITERALS) or (
                isinstance(value, ast.Call) and _name(value.func) in MUTABLE_CALLS
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if mutable and isinstance(target, ast.Name) and target.id != "__all__":
                    yield f"{module}:{target.id}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if _name(deco.func if isinstance(deco, ast.Call) else deco) in ("cache", "lru_cache"):
                    yield f"{module}:{node.name}()"
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                yield f"{module}:global {name}"


def found() -> list[str]:
    out = []
    for package in ("app", "services"):
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out.extend(module_state(path, module))
    return out


def test_no_module_level_mutable_state_outside_the_lists() -> None:
    unexplained = sorted(set(found()) - set(STATE) - TABLES)
    assert not unexplained, (
        "module-level mutable state (own it in services.resources / app.resources, freeze a constant "
        f"table, or add it to STATE with its reason): {unexplained}"
    )


def test_the_lists_name_only_what_exists() -> None:
    stale = sorted((set(STATE) | TABLES) - set(found()))
    assert not stale, f"listed but gone (remove them from the lists): {stale}"


def test_the_scan_finds_caches_locks_and_globals(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import functools, threading\n"
        "from collections import OrderedDict\n"
        "_cache: dict[str, int] = {}\n"
        "_lru = OrderedDict()\n"
        "_lock = threading.Lock()\n"
        "FROZEN = frozenset({1})\n"
        "ORDER = (1, 2)\n"
        "@functools.lru_cache\n"
        "def f() -> int:\n"
        "    global _n\n"
        "    return 1\n",
        encoding="utf-8",
    )
    assert sorted(module_state(source, "m")) == ["m:_cache", "m:_lock", "m:_lru", "m:f()", "m:global _n"]


def test_the_caches_the_issue_named_are_gone() -> None:
    names = set(found())
    for gone in (
        "services.rag.index:_cache",
        "services.rag.index:_lock",
        "services.rag.llm:_clients",
        "services.db:_shared",
        "services.retrieval.dense:_MODELS",
        "services.retrieval.dense:_MODELS_LOCK",
    ):
        assert gone not in names
