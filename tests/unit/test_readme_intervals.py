"""The reports page's account of the report's intervals says what the report's own ``interval_rule`` says."""

from __future__ import annotations

from pathlib import Path

from services.reports.service import interval_mode

README = " ".join(
    (Path(__file__).resolve().parents[2] / "docs/reports.md").read_text(encoding="utf-8").split()
)


def _rule(ci: str, n_items: int = 50, n_questions: int = 50) -> str:
    return interval_mode(ci, n_items, n_questions, 2000, 0).rule  # type: ignore[arg-type]


def test_analytic_intervals_match_the_rule() -> None:
    rule = _rule("fisher")
    assert "Fisher (Pearson)" in rule and "Pearson r (Fisher CI)" in README
    assert "Fieller (Spearman)" in rule and "Spearman ρ (Fieller CI)" in README
    assert "Fieller with the tie correction (Kendall)" in rule
    assert "Kendall τ-b (Fieller CI with the tie correction)" in README
    assert "scipy p-values" in rule and "scipy p-values" in README


def test_bca_matches_the_rule() -> None:
    rule = _rule("bca")
    assert "Paired bootstrap over outputs" in rule and "paired bootstrap over outputs (BCa" in README
    assert "Pearson's is expanded for small samples" in rule
    assert "Pearson's expanded for small samples" in README
    assert "2 Phi(sqrt(n/(n-1)) t(n-1)) - 1, 95.8% at n = 50" in rule
    assert "2Φ(√(n/(n−1)) t₍n−1₎) − 1, 95.8 % at n = 50" in README
    assert "paired BCa" not in README  # Pearson's limits are not read at the plain BCa level
    assert "jackknife-t interval of the difference" in rule
    assert "jackknife-t interval of the difference" in README


def test_repeated_questions_match_the_rule() -> None:
    rule = _rule("bca", n_items=100, n_questions=50)
    assert "leaves out or resamples whole questions" in rule and "jackknife-t on Fisher's z" in rule
    assert "leaves out or resamples whole questions (jackknife-t on Fisher's z), whatever `ci`" in README
    assert _rule("fisher", 100, 50) == rule  # whatever ci
