"""The metric catalogue and scoring jobs."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from app.deps import CommittingRoute, RunId, SessionDep, SettingsDep
from app.errors import responses
from app.resources import get_resources
from services.metrics import registry
from services.metrics.base import package_version
from services.metrics.inline import InlineScoreRequest, InlineScoreResponse, score_inline
from services.metrics.schemas import ScoringJobRead
from services.metrics.scoring import ScoringRequest, create_scoring_job
from services.pairjudge.schemas import PairJudgingJobRead, PairJudgingRequest
from services.pairjudge.service import create_pair_judging_job

router = APIRouter(tags=["scoring"], route_class=CommittingRoute)


class MetricInfo(BaseModel):
    name: str
    library: str
    library_version: str | None
    kind: str
    inputs: list[str]
    needs_judge: bool
    needs_embeddings: bool
    higher_is_better: bool
    takes_k: bool
    description: str
    available: bool
    unavailable_reason: str | None
    prompt_language: str | None = None


@router.get("/metrics", response_model=list[MetricInfo])
def list_metrics(
    settings: SettingsDep,
    language: str = Query(
        "fr", description="dataset language: says which judge metrics keep English prompts"
    ),
) -> list[MetricInfo]:
    """Every metric the service knows, whether it can run here and why not, and for judge metrics the
    language their prompts run in for a dataset of ``language`` (untranslated prompts stay English)."""
    out = []
    for spec in registry.CATALOGUE:
        ok, why = registry.availability(spec, settings)
        prompt_language = registry.prompt_language(spec, settings, language)
        out.append(
            MetricInfo(
                name=spec.name,
                library=spec.library,
                library_version=package_version(spec.package) if spec.package != "ragmeta" else None,
                kind=spec.kind,
                inputs=list(spec.inputs),
                needs_judge=spec.needs_judge,
                needs_embeddings=spec.needs_embeddings,
                higher_is_better=spec.higher_is_better,
                takes_k=spec.uses_k,
                description=spec.description,
                available=ok,
                unavailable_reason=why,
                prompt_language=prompt_language,
            )
        )
    return out


@router.post(
    "/runs/{run_id}/scoring-jobs",
    status_code=202,
    response_model=ScoringJobRead,
    responses=responses(404, 422),
)
def create_scoring(
    run_id: RunId, body: ScoringRequest, session: SessionDep, settings: SettingsDep
) -> ScoringJobRead:
    """Score every output of the run with the given metrics, as a job (follow it at GET /jobs/{id})."""
    return create_scoring_job(session, settings, run_id, body)


@router.post(
    "/runs/{run_id}/pair-judging-jobs",
    status_code=202,
    response_model=PairJudgingJobRead,
    responses=responses(404, 422),
)
def create_pair_judging(
    run_id: RunId, body: PairJudgingRequest, session: SessionDep, settings: SettingsDep
) -> PairJudgingJobRead:
    """Ask the judge which of this run's and ``run_b``'s answers to each question they both answer is
    better, once with each answer shown first, as a job (follow it at GET /jobs/{id}). The verdicts feed the
    position and length probes of GET /runs/{id}/stability. Pairs already judged under the same judge
    configuration are skipped unless ``recompute``; a pair whose judge failed is an item error with its
    cause, judged again by the next job."""
    return create_pair_judging_job(session, settings, run_id, body)


@router.post("/score", response_model=InlineScoreResponse, responses=responses(422))
async def score_samples(
    body: InlineScoreRequest, request: Request, settings: SettingsDep
) -> InlineScoreResponse:
    """Score a few samples given inline (at most ``scoring.max_inline_samples``) with the given metrics, and
    return the scores: the same adapters, judge bound and judge cache as a scoring job, nothing stored.

    The request waits its turn when ``scoring.max_inline_requests`` are being scored; the work runs on the
    scoring loop, not on this event loop. Larger sets: import them as a run and POST /runs/{id}/scoring-jobs.
    A metric the samples lack an input for, an unknown metric or too many samples: 422 naming each one."""
    state = get_resources(request)
    assert state.inline_slots is not None  # made by the lifespan, before any request
    async with state.inline_slots:
        future = state.scoring.submit(score_inline(settings, state.scoring, body))
        return await asyncio.wrap_future(future)
