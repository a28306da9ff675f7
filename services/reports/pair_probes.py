"""Position and length probes of a pairwise judge (the stability report's section): the verdicts a pairwise
judging job stored (``services.pairjudge``) on two runs' answers, each pair asked in both orders.

- Position consistency: of the pairs with a verdict in both orders, the share whose two verdicts name the
  same run (or are both ties). A judge without a position bias is consistent unless it is unsure; the
  inconsistent pairs are split by which position won both times (first shown, second shown) or neither
  (one order a tie).
- Length: of the pairs where the judge's verdict is consistent, not a tie, and the two answers differ in
  length (words), the share won by the longer answer; beside it, on the pairs where the humans' preference
  (side by side in a pairwise rating task, or imported) is not a tie and the lengths differ, the share the
  humans gave to the longer answer. A judge that favours length sits above the humans.

Each question is one pair (pairs are independent), so every share has a Wilson score interval. A pair whose
judge failed has no verdict: it is counted in ``n_errors`` by cause and listed with its error, never in a
share. Verdicts given on an answer that has changed since are stale: left out and counted.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.models import PairVerdict
from services.pairjudge.repository import PairVerdictRepository
from services.reports.comparison_schemas import Proportion
from services.reports.pairwise import _rated_preferences, wilson
from services.runs.repository import RunRepository

PROBE_RULE = (
    "each question is one pair, judged twice (run A's answer shown first, then run B's); position "
    "consistency: the share of pairs judged in both orders whose two verdicts name the same run (or are both "
    "ties); length: the share of pairs with a consistent, non-tie verdict and answers of different lengths "
    "(words) won by the longer answer, beside the same share of the humans' preferences; Wilson score "
    "intervals (pairs are independent); a pair whose judge failed is an error, not a verdict"
)
MAX_LISTED_ERRORS = 50


class PairError(BaseModel):
    question: str = Field(description="the question's external id")
    error: str = Field(description='"cause: message"')


class LengthProbe(BaseModel):
    measure: str = "answer length in words (whitespace-separated)"
    judge_longer_wins: Proportion = Field(
        description="pairs with a consistent, non-tie verdict and answers of different lengths: won by the "
        "longer answer"
    )
    human_longer_wins: Proportion | None = Field(
        description="pairs with a non-tie human preference and answers of different lengths: the longer "
        "answer preferred; None without preference ratings"
    )
    human_source: str | None = Field(description="where the human preferences come from")
    human_undefined_reason: str | None = None


class PairProbe(BaseModel):
    run_a: int
    run_b: int
    judge: dict[str, str | float | None] = Field(description="model, temperature, seed and prompt version")
    n_pairs: int = Field(description="pairs with stored verdicts under this configuration")
    n_judged: int = Field(description="pairs with a verdict in both orders")
    n_errors: int = Field(description="pairs whose judge failed in an order: no verdict")
    n_stale: int = Field(description="pairs judged on an answer that has changed since: left out")
    errors_by_cause: dict[str, int]
    errors: list[PairError] = Field(description=f"the failed pairs (at most {MAX_LISTED_ERRORS})")
    position_consistency: Proportion
    first_shown_won_both: int = Field(description="inconsistent pairs where the answer shown first won twice")
    second_shown_won_both: int = Field(
        description="inconsistent pairs where the answer shown second won twice"
    )
    one_order_tie: int = Field(description="inconsistent pairs with a tie in one order only")
    length: LengthProbe
    rule: str = PROBE_RULE


def _cause(error: str) -> str:
    head, sep, _ = error.partition(":")
    return head.strip() if sep and head.strip() and " " not in head.strip() else "error"


def _proportion(hits: int, total: int, empty: str) -> Proportion:
    if total == 0:
        return Proportion(
            correct=0, total=0, estimate=None, ci_low=None, ci_high=None, undefined_reason=empty
        )
    return wilson(hits, total)


def _judge(config: dict[str, object]) -> dict[str, str | float | None]:
    return {str(k): v for k, v in config.items() if v is None or isinstance(v, str | float | int)}


def probe(session: Session, run_a: int, run_b: int, config_key: str) -> PairProbe:
    """The probes of the verdicts stored for runs ``run_a < run_b`` under ``config_key``."""
    rows = PairVerdictRepository(session).verdicts(run_a, run_b, config_key)
    versions = RunRepository(session).output_versions(
        sorted({o for v in rows for o in (v.output_a_id, v.output_b_id)})
    )
    questions = PairVerdictRepository(session).questions([v.question_id for v in rows])
    current: list[PairVerdict] = []
    stale = 0
    for v in rows:
        if (versions.get(v.output_a_id), versions.get(v.output_b_id)) != (
            v.output_a_version,
            v.output_b_version,
        ):
            stale += 1
        else:
            current.append(v)
    failed = [v for v in current if v.error is not None]
    judged = [v for v in current if v.error is None and v.a_first is not None and v.b_first is not None]
    consistent = [v for v in judged if v.a_first == v.b_first]
    # a_first: A shown first; b_first: B shown first. The first shown won both: "a" then "b".
    first_both = sum(1 for v in judged if (v.a_first, v.b_first) == ("a", "b"))
    second_both = sum(1 for v in judged if (v.a_first, v.b_first) == ("b", "a"))
    one_tie = len(judged) - len(consistent) - first_both - second_both
    words = {v.question_id: _words(v) for v in current}
    decided = [
        v for v in consistent if v.a_first != "tie" and words[v.question_id][0] != words[v.question_id][1]
    ]
    longer_won = sum(1 for v in decided if _longer(words[v.question_id]) == v.a_first)
    length = LengthProbe(
        judge_longer_wins=_proportion(
            longer_won,
            len(decided),
            "no pair has a consistent, non-tie verdict on answers of different lengths",
        ),
        human_longer_wins=None,
        human_source=None,
    )
    _human_length(session, run_a, run_b, judged, words, questions, length)
    first = rows[0].config if rows else {}
    return PairProbe(
        run_a=run_a,
        run_b=run_b,
        judge=_judge(dict(first)),
        n_pairs=len(rows),
        n_judged=len(judged),
        n_errors=len(failed),
        n_stale=stale,
        errors_by_cause=dict(Counter(_cause(v.error or "") for v in failed)),
        errors=[
            PairError(question=questions.get(v.question_id, (str(v.question_id), ""))[0], error=v.error or "")
            for v in failed[:MAX_LISTED_ERRORS]
        ],
        position_consistency=_proportion(
            len(consistent), len(judged), "no pair has a verdict in both orders"
        ),
        first_shown_won_both=first_both,
        second_shown_won_both=second_both,
        one_order_tie=one_tie,
        length=length,
    )


def _words(v: PairVerdict) -> tuple[int, int]:
    stored = (v.details or {}).get("words") or {}
    return int(stored.get("a", 0)), int(stored.get("b", 0))


def _longer(words: tuple[int, int]) -> str:
    return "a" if words[0] > words[1] else "b"


def _human_length(
    session: Session,
    run_a: int,
    run_b: int,
    current: list[PairVerdict],
    words: dict[int, tuple[int, int]],
    questions: dict[int, tuple[str, str]],
    length: LengthProbe,
) -> None:
    """The humans' share for the longer answer on the judged pairs, from the pair's preference ratings."""
    by_external = {questions[v.question_id][0]: v.question_id for v in current if v.question_id in questions}
    prefs = _rated_preferences(session, run_a, run_b, set(by_external))
    if not prefs.labels:
        length.human_undefined_reason = (
            "no preference ratings on these two runs (side by side in a pairwise rating task, or imported)"
        )
        return
    decided = [
        (by_external[q], label)
        for q, label in prefs.labels.items()
        if label != 0 and words[by_external[q]][0] != words[by_external[q]][1]
    ]
    longer = sum(1 for qid, label in decided if _longer(words[qid]) == ("b" if label > 0 else "a"))
    length.human_source = prefs.detail
    length.human_longer_wins = _proportion(
        longer, len(decided), "no pair has a non-tie human preference on answers of different lengths"
    )


def pair_probes(session: Session, run_id: int) -> list[PairProbe]:
    """The probes of every pair of runs including ``run_id`` that a pairwise judging job judged, one per
    judge configuration."""
    repo = PairVerdictRepository(session)
    return [probe(session, a, b, c) for a, b, c in repo.pairs_of_run(run_id)]


__all__ = ["PROBE_RULE", "LengthProbe", "PairError", "PairProbe", "pair_probes", "probe"]


# ------------------------------------------------------------------------------------------------ rendering


def _share(p: Proportion | None, undefined: str = "—") -> str:
    """`0.80 [0.55, 0.93] (8/10)` or the reason it is undefined."""
    if p is None:
        return undefined
    if p.estimate is None or p.ci_low is None or p.ci_high is None:
        return p.undefined_reason or undefined
    return f"{p.estimate:.2f} [{p.ci_low:.2f}, {p.ci_high:.2f}] ({p.correct}/{p.total})"


def probe_name(p: PairProbe) -> str:
    return f"pairwise judge, runs {p.run_a} vs {p.run_b}"


def probe_rows(run_id: int, probes: list[PairProbe]) -> list[dict[str, object]]:
    """CSV rows of the stability report for the probes (its header): one per pair of runs x share."""
    rows: list[dict[str, object]] = []
    for p in probes:
        shares = {
            "position_consistency": p.position_consistency,
            "judge_longer_wins": p.length.judge_longer_wins,
            "human_longer_wins": p.length.human_longer_wins,
        }
        for name, share in shares.items():
            rows.append(
                {
                    "run_id": run_id,
                    "metric": probe_name(p),
                    "figure": name,
                    "estimate": share.estimate if share else None,
                    "ci_low": share.ci_low if share else None,
                    "ci_high": share.ci_high if share else None,
                    "ci_method": "wilson" if share and share.ci_low is not None else None,
                    "repeats": None,
                    "n_outputs": share.total if share else 0,
                    "n_questions": share.total if share else 0,
                    "capped": None,
                    "unstable": None,
                    "undefined_reason": (
                        share.undefined_reason if share else p.length.human_undefined_reason
                    ),
                }
            )
    return rows


def probe_markdown(probes: list[PairProbe], cell: object) -> list[str]:
    """The Markdown lines of the probes section (``cell`` escapes a table cell)."""
    if not probes:
        return []
    esc = cell if callable(cell) else str
    lines = [
        "",
        "## Position and length probes (pairwise judge)",
        "",
        "| runs | judged | errors | position consistency | first shown won both | second shown won both | "
        "judge: longer wins | humans: longer wins |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in probes:
        errors = f"{p.n_errors}" + (f" ({esc(_causes(p))})" if p.n_errors else "")
        lines.append(
            f"| {p.run_a} vs {p.run_b} | {p.n_judged} | {errors} | {esc(_share(p.position_consistency))} | "
            f"{p.first_shown_won_both} | {p.second_shown_won_both} | "
            f"{esc(_share(p.length.judge_longer_wins))} | "
            f"{esc(_share(p.length.human_longer_wins, p.length.human_undefined_reason or '—'))} |"
        )
    lines += ["", f"- {esc(PROBE_RULE)}."]
    for p in probes:
        if p.n_stale:
            lines.append(f"- runs {p.run_a} vs {p.run_b}: {p.n_stale} pair(s) judged on an answer that has "
                         "changed since are left out.")  # fmt: skip
        for e in p.errors:
            lines.append(f"- runs {p.run_a} vs {p.run_b}, question {esc(e.question)}: {esc(e.error)}")
    return lines


def _causes(p: PairProbe) -> str:
    return ", ".join(f"{c} {n}" for c, n in sorted(p.errors_by_cause.items()))


def probe_section(probes: list[PairProbe]) -> str:
    """The probes' part of the page's judge-stability section (empty without probes)."""
    from html import escape

    if not probes:
        return ""
    parts = [
        "<h3 id='pair-probes'>Position and length probes (pairwise judge)</h3>",
        "<div class='wide'><table class='analysis' id='table-pair-probes'><tr><th>runs</th><th>judged</th>"
        "<th>errors</th><th>position consistency [95% CI]</th><th>first shown won both</th>"
        "<th>second shown won both</th><th>judge: longer answer wins</th><th>humans: longer answer wins</th>"
        "</tr>",
    ]
    for p in probes:
        errors = str(p.n_errors) + (f" ({escape(_causes(p))})" if p.n_errors else "")
        human = _share(p.length.human_longer_wins, p.length.human_undefined_reason or "—")
        parts.append(
            f"<tr><td>{p.run_a} vs {p.run_b}</td><td>{p.n_judged}</td><td>{errors}</td>"
            f"<td>{escape(_share(p.position_consistency))}</td><td>{p.first_shown_won_both}</td>"
            f"<td>{p.second_shown_won_both}</td><td>{escape(_share(p.length.judge_longer_wins))}</td>"
            f"<td>{escape(human)}</td></tr>"
        )
    parts.append("</table></div>")
    parts.append(
        f"<p class='muted' id='pair-probes-rule'>{escape(PROBE_RULE[:1].upper() + PROBE_RULE[1:])}.</p>"
    )
    return "".join(parts)
