"""Pairwise judging jobs: a judge asked which of two runs' answers to one question is better, once with each
answer shown first.

Items are question ids (one pair each). A batch reads the pairs, asks the judge through the judge gateway
(its ledger accounts the calls; its cache answers a request it has seen, so a batch retried after a crash
or a job run again with ``recompute`` makes no new call for it), and stores one ``PairVerdict`` per pair in
one short write transaction. A pair whose judge failed in either order is stored with the error ("cause:
message") and no verdict, and its item fails with the same error; creating the job again judges it again.
Creating a job skips pairs already judged under the same configuration (judge model, temperature, prompt)
unless ``recompute``.

The prompt is the service's own (``prompts/pairwise.txt``): the order of the two answers must be the one the
probe sets, and the same request must be the same text for the cache to answer it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import InvalidItems, ItemError, NotFound
from services.jobs.registry import JobContext
from services.jobs.repository import JobRepository
from services.jobs.service import create_job, job_read, typed
from services.metrics.resources import ScoringResources
from services.metrics.scoring import add_judge_usage
from services.pairjudge.repository import Answer, PairVerdictRepository
from services.pairjudge.schemas import PairJudgingJobRead, PairJudgingRequest
from services.runs.repository import RunRepository
from services.runs.service import lock_run

PROMPT_VERSION = "pairwise-v1"
LEDGER_METRIC = "pairwise.judge"
ORDERS = (
    "each pair is asked twice: run A's answer shown first (Answer 1), then run B's answer shown first; "
    "the verdict of each order is mapped back to the runs"
)
WINNERS = ("a", "b", "tie")


def _prompt() -> str:
    return (Path(__file__).parent / "prompts" / "pairwise.txt").read_text(encoding="utf-8")


def judge_config(settings: Settings) -> dict[str, Any]:
    """What the verdicts are asked with: the judge model, its temperature and the prompt's version."""
    return {
        "model": settings.judge.model,
        "temperature": settings.judge.temperature,
        "seed": None,
        "prompt": PROMPT_VERSION,
    }


def config_key(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def word_count(text: str | None) -> int:
    """An answer's length: its whitespace-separated words."""
    return len((text or "").split())


def _bad(field: str, message: str, reason: str) -> InvalidItems:
    return InvalidItems(message, [ItemError(None, field, reason)])


def _runs(session: Session, run_id: int, other: int) -> tuple[int, int]:
    """(lower, higher) run id of the pair; NotFound / InvalidItems naming the field."""
    runs = RunRepository(session)
    first, second = runs.get(run_id), runs.get(other)
    if first is None:
        raise NotFound(f"run {run_id} does not exist")
    if second is None:
        raise NotFound(
            f"run {other} does not exist", [ItemError(None, "run_b", f"run {other} does not exist")]
        )
    if run_id == other:
        raise _bad("run_b", "compare two different runs", f"run_b is the run itself ({run_id})")
    if first.dataset_id != second.dataset_id:
        raise _bad(
            "run_b",
            "the two runs must belong to one dataset",
            f"run {other} is of dataset {second.dataset_id}, run {run_id} of dataset {first.dataset_id}",
        )
    return min(run_id, other), max(run_id, other)


def create_pair_judging_job(
    session: Session, settings: Settings, run_id: int, request: PairJudgingRequest
) -> PairJudgingJobRead:
    """Plan a pairwise judging job of ``run_id`` against ``request.run_b``: one item per question both runs
    answer. Raises NotFound for an unknown run, InvalidItems (naming the field) for the same run twice, runs
    of two datasets, no question in common, or no judge configured."""
    run_a, run_b = _runs(session, run_id, request.run_b)
    if not settings.judge.configured:
        raise _bad("judge", "no judge is configured", "set the judge's base URL and model (judge settings)")
    repo = PairVerdictRepository(session)
    answers_a, answers_b = repo.answers(run_a), repo.answers(run_b)
    both = sorted(set(answers_a) & set(answers_b))
    if not both:
        raise _bad(
            "run_b",
            "the two runs have no question in common",
            f"run {run_a} answers {len(answers_a)} question(s), run {run_b} {len(answers_b)}, none of "
            "them both",
        )
    answered = [q for q in both if answers_a[q].answer is not None and answers_b[q].answer is not None]
    config = judge_config(settings)
    ckey = config_key(config)
    skipped = 0
    todo = answered
    if not request.recompute:
        done = {
            v.question_id
            for v in repo.verdicts(run_a, run_b, ckey)
            if v.error is None
            and (v.output_a_version, v.output_b_version)
            == (answers_a[v.question_id].version, answers_b[v.question_id].version)
            if v.question_id in answers_a and v.question_id in answers_b
        }
        todo = [q for q in answered if q not in done]
        skipped = len(answered) - len(todo)
    params = {"run_a": run_a, "run_b": run_b, "recompute": request.recompute, "config_key": ckey}
    summary = {
        "questions": len(both),
        "without_answer": len(both) - len(answered),
        "skipped_already_judged": skipped,
        "judge": {k: config[k] for k in ("model", "temperature", "seed")},
        "prompt": PROMPT_VERSION,
        "orders": ORDERS,
    }
    job = create_job(session, "pair_judging", params, [str(q) for q in todo], summary, settings=settings)
    return typed(job_read(session, job), PairJudgingJobRead)


@dataclass(frozen=True)
class Pair:
    question_id: int
    question: str
    a: Answer
    b: Answer


@dataclass(frozen=True)
class Verdict:
    """What the judge said in one order: the run it preferred ("a", "b", "tie") and why, or an error."""

    winner: str | None
    reason: str | None
    error: str | None


def _messages(pair: Pair, a_first: bool) -> list[dict[str, str]]:
    first, second = (pair.a, pair.b) if a_first else (pair.b, pair.a)
    text = _prompt().format(question=pair.question, first=first.answer or "", second=second.answer or "")
    return [{"role": "user", "content": text}]


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_verdict(content: str, a_first: bool) -> Verdict:
    """The judge's answer mapped to a run: "1" is the answer shown first. A reply that is not a JSON object
    with ``winner`` "1", "2" or "tie" is a ``malformed`` error."""
    found = _OBJECT.search(content or "")
    try:
        obj = json.loads(found.group(0)) if found else None
    except ValueError:
        obj = None
    winner = str(obj.get("winner", "")).strip().lower() if isinstance(obj, dict) else ""
    if winner not in ("1", "2", "tie"):
        return Verdict(
            None, None, f'malformed: the judge\'s reply is not {{"winner": "1"|"2"|"tie"}}: {content!r:.200}'
        )
    reason = obj.get("reason") if isinstance(obj, dict) else None
    if winner == "tie":
        return Verdict("tie", str(reason) if reason is not None else None, None)
    first, second = ("a", "b") if a_first else ("b", "a")
    return Verdict(first if winner == "1" else second, str(reason) if reason is not None else None, None)


async def _ask(client: Any, url: str, settings: Settings, pair: Pair, a_first: bool) -> Verdict:
    import httpx

    scope = f"q{pair.question_id}.{'ab' if a_first else 'ba'}"
    body = {
        "model": settings.judge.model,
        "temperature": settings.judge.temperature,
        "messages": _messages(pair, a_first),
    }
    try:
        resp = await client.post(f"{url}/{LEDGER_METRIC}/{scope}/v1/chat/completions", json=body)
    except httpx.HTTPError as exc:
        return Verdict(None, None, f"connection: the judge gateway cannot be reached: {type(exc).__name__}")
    if resp.status_code != 200:
        try:
            err = resp.json().get("error", {})
        except ValueError:
            err = {}
        cause = str(err.get("code") or f"http_{resp.status_code}")
        message = str(err.get("message") or resp.text)[:300]
        return Verdict(None, None, f"{cause}: {message}")
    try:
        content = resp.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return Verdict(None, None, f"malformed: the judge's reply has no message: {resp.text[:200]!r}")
    return parse_verdict(str(content or ""), a_first)


async def judge_pairs(
    settings: Settings, gateway: str, job: str, pairs: list[Pair]
) -> tuple[dict[int, tuple[Verdict, Verdict]], dict[str, Any]]:
    """Both orders of every pair asked at once through the gateway under one ledger; the verdicts by
    question id, and the ledger's usage per metric."""
    import httpx

    timeout = settings.judge.timeout_s * (settings.judge.retries + 1) * 2 + 5
    connections = 2 * max(1, settings.judge.max_concurrency)
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        opened = await client.post(f"{gateway}/ledgers", json={"job": job, "refresh": False})
        opened.raise_for_status()
        token = opened.json()["token"]
        url = f"{gateway}/g/{token}"
        try:
            asked = await asyncio.gather(
                *(_ask(client, url, settings, p, order) for p in pairs for order in (True, False))
            )
        finally:
            released = await client.delete(f"{gateway}/ledgers/{token}")
    report = released.json() if released.status_code == 200 else {}
    out = {p.question_id: (asked[2 * i], asked[2 * i + 1]) for i, p in enumerate(pairs)}
    return out, dict(report.get("metrics", {}))


def _row(pair: Pair, verdicts: tuple[Verdict, Verdict], config: dict[str, Any]) -> dict[str, Any]:
    ab, ba = verdicts
    error = ab.error or ba.error
    return {
        "output_a_id": pair.a.output_id,
        "output_b_id": pair.b.output_id,
        "output_a_version": pair.a.version,
        "output_b_version": pair.b.version,
        "config": config,
        "a_first": None if error else ab.winner,
        "b_first": None if error else ba.winner,
        "error": error,
        "details": {
            "reasons": {"a_first": ab.reason, "b_first": ba.reason},
            "words": {"a": word_count(pair.a.answer), "b": word_count(pair.b.answer)},
        },
    }


class PairJudgingHandler:
    batch_size = 16

    def process(self, ctx: JobContext, job_id: int, keys: list[str]) -> dict[str, str | None]:
        with ctx.read_factory() as session:
            params = JobRepository(session).params(job_id)
            if params is None:
                return dict.fromkeys(keys, "missing: the job was deleted")
            run_a, run_b, ckey = int(params["run_a"]), int(params["run_b"]), str(params["config_key"])
            qids = [int(k) for k in keys]
            repo = PairVerdictRepository(session)
            answers_a, answers_b = repo.answers(run_a, qids), repo.answers(run_b, qids)
            texts = repo.questions(qids)
        outcome: dict[str, str | None] = {}
        pairs: list[Pair] = []
        for q in qids:
            a, b = answers_a.get(q), answers_b.get(q)
            if a is None or b is None or a.answer is None or b.answer is None or q not in texts:
                outcome[str(q)] = "missing: one of the two answers was deleted or has no text"
                continue
            pairs.append(Pair(q, texts[q][1], a, b))
        if not pairs:
            return outcome
        config = judge_config(ctx.settings)
        if config_key(config) != ckey:
            return {**outcome, **dict.fromkeys((str(p.question_id) for p in pairs), (
                "config: the judge configuration changed since the job was planned; create the job again"
            ))}  # fmt: skip
        verdicts, usage = self._judge(ctx, job_id, pairs)
        with ctx.session_factory() as session:
            lock_run(session, run_a)
            current = RunRepository(session).output_versions(
                [o for p in pairs for o in (p.a.output_id, p.b.output_id)]
            )
            repo = PairVerdictRepository(session)
            stored = repo.ids_of(run_a, run_b, ckey, [p.question_id for p in pairs])
            inserts, updates = [], []
            for p in pairs:
                if (current.get(p.a.output_id), current.get(p.b.output_id)) != (p.a.version, p.b.version):
                    outcome[str(p.question_id)] = (
                        "stale: an answer changed while the pair was judged; judge the pair again"
                    )
                    continue
                row = {**_row(p, verdicts[p.question_id], config), "job_id": job_id}
                outcome[str(p.question_id)] = row["error"]
                if p.question_id in stored:
                    updates.append({"id": stored[p.question_id], **row})
                else:
                    inserts.append(
                        {"run_a_id": run_a, "run_b_id": run_b, "question_id": p.question_id,
                         "config_key": ckey, **row}
                    )  # fmt: skip
            repo.update_many(updates)
            repo.insert_many(inserts)
            add_judge_usage(session, job_id, usage)
            session.commit()
        return outcome

    @staticmethod
    def _judge(
        ctx: JobContext, job_id: int, pairs: list[Pair]
    ) -> tuple[dict[int, tuple[Verdict, Verdict]], dict[str, Any]]:
        """The verdicts of the batch's pairs; every pair gets the error when the gateway is unreachable."""
        import httpx

        resources: ScoringResources | None = getattr(ctx.resources, "scoring", None)
        own = resources is None
        if resources is None:
            resources = ScoringResources(ctx.settings, ctx.session_factory)
        try:
            gateway = resources.gateway_url()
            if gateway is None:
                failed = Verdict(None, None, "unavailable: no judge configured")
                return {p.question_id: (failed, failed) for p in pairs}, {}
            try:
                return resources.run(judge_pairs(ctx.settings, gateway, str(job_id), pairs))
            except httpx.HTTPError as exc:
                failed = Verdict(
                    None,
                    None,
                    f"connection: the judge gateway cannot be reached: {type(exc).__name__}: {exc}",
                )
                return {p.question_id: (failed, failed) for p in pairs}, {}
        finally:
            if own:
                resources.close()
