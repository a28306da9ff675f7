"""The shape of the services.stats package: its public names, the imports between its modules, their size."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import services.stats
from scripts.long_units import long_units

PACKAGE = Path(services.stats.__file__).resolve().parent

# Every name other modules, tests and benches took from services.stats when it was one module.
USED_NAMES = """
AgreementResult CorrMethod CorrelationResult DependentComparison HELD_OUT_FIGURES Interval
JackknifeCI PASS_FAIL_FIGURES PassFailResult adjust_p_values agreement bootstrap_ci
bootstrap_ci_many bootstrap_difference_ci bootstrap_differences_many bootstrap_p_value
compare_correlations complete_pairs correlation correlations_many default_pass_threshold
delong_auc expanded_confidence fisher_ci fisher_ci_width jackknife_ci_many
jackknife_differences_many kendall kendall_tie_factor mover_ci n_needed_to_separate
near_constant ordinal_alpha_resamples pair_mean_labels pass_fail pass_fail_many pearson ppi_mean
preference_agreement rank_difference spearman steiger_z system_level warm_up williams_t zou_ci
AlphaResult BootstrapCI DifferenceTest IccResult PpiResult PreferenceResult RaterPair
SystemLevelResult
""".split()


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.glob("*.py"))}


def test_every_name_used_before_the_split_is_exported() -> None:
    exported = set(services.stats.__all__)
    assert len(exported) == len(services.stats.__all__), "a name is listed twice in __all__"
    assert sorted(set(USED_NAMES) - exported) == []
    for name in services.stats.__all__:
        value = getattr(services.stats, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            # Defined in a topic module, not in the package's __init__.
            assert value.__module__.startswith("services.stats."), name


def test_the_functions_are_the_functions_not_the_submodules() -> None:
    # A submodule named like a function would replace it as an attribute of the package on first import.
    for stem in _modules():
        assert stem == "__init__" or stem not in services.stats.__all__, stem
    assert inspect.isfunction(services.stats.correlation)
    assert inspect.isfunction(services.stats.agreement)


def test_submodules_import_no_private_name_from_one_another() -> None:
    private = []
    for stem, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("services.stats"):
                private += [f"{stem}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def test_submodules_import_one_another_without_a_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for stem, tree in _modules().items():
        if stem == "__init__":
            continue
        graph[stem] = {
            node.module.rsplit(".", 1)[1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("services.stats.")
        }
    done: set[str] = set()

    def visit(stem: str, path: tuple[str, ...]) -> None:
        assert stem not in path, " -> ".join((*path, stem))
        if stem not in done:
            for dep in graph[stem]:
                visit(dep, (*path, stem))
            done.add(stem)

    for stem in graph:
        visit(stem, ())
    # Each module imports on its own (no reliance on the package's import order).
    for stem in graph:
        importlib.import_module(f"services.stats.{stem}")


def test_no_module_over_900_lines_and_no_function_over_100() -> None:
    files, functions = long_units([PACKAGE], max_function=100, max_file=900)
    assert files == []
    assert functions == []
