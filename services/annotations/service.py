"""An annotation export imported onto a run: the human scores of one name become the run's ratings, under
their authors (mapped to raters), on a rubric asked for or inferred from the score's configuration; every
judge score becomes ``external.<platform>.<name>`` (services.scores.external).

A score finds its output by the trace id the output came in with (POST /v1/traces keeps it in the output's
generator; MLflow's ``tr-`` prefix and a UUID's dashes are ignored), else, for a span annotation, by one of
the trace's span ids, else (Opik) by the trace's input when it is exactly the text of one question of the
run. Scores about traces that are no output of the run are counted and left out; an export joining none is
refused. The ratings go through the ratings import (services.ratings.service) and the scores through the
score import's upsert, in one transaction: a file imported again changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sqlalchemy.orm import Session

from services.annotations.platforms import BOOLEAN_LABELS, Annotation, Parsed, ScoreConfig
from services.annotations.repository import AnnotationRepository, TracedOutput
from services.annotations.schemas import (
    AnnotationCounts,
    AnnotationImportRead,
    AnnotationOptions,
    RubricUsed,
)
from services.errors import Conflict, InvalidItems, ItemError
from services.ingest import Row
from services.models import Rubric
from services.ratings.repository import RatingRepository
from services.ratings.service import import_ratings
from services.runs.service import lock_run
from services.scores.external import ExternalMetric, directions, resolve, upsert_scores

ID_FIELD: Mapping[str, str] = MappingProxyType(
    {"langfuse": "traceId", "opik": "id", "phoenix": "span_id", "mlflow": "trace_id"}
)
SCALE_LIMIT = 100  # a rubric's scale lies within -100..100 (RubricCreate)


def normalise_id(value: str) -> str:
    """A trace or span id as the platforms write it, compared without case, MLflow's ``tr-`` or dashes."""
    v = value.strip().lower()
    return (v[3:] if v.startswith("tr-") else v).replace("-", "")


@dataclass
class _Joined:
    joined: list[tuple[Annotation, TracedOutput]]
    unmatched: list[Annotation]


def _join(annotations: list[Annotation], outputs: list[TracedOutput]) -> _Joined:
    by_trace = {normalise_id(o.trace_id): o for o in outputs if o.trace_id}
    by_span = {normalise_id(s): o for o in outputs for s in o.span_ids}
    by_text: dict[str, list[TracedOutput]] = defaultdict(list)
    for out in outputs:
        by_text[out.question.strip()].append(out)
    joined: list[tuple[Annotation, TracedOutput]] = []
    unmatched: list[Annotation] = []
    for a in annotations:
        o: TracedOutput | None = by_trace.get(normalise_id(a.trace_id)) if a.trace_id else None
        if o is None and a.span_id:
            o = by_span.get(normalise_id(a.span_id))
        if o is None and a.question and len(by_text.get(a.question, [])) == 1:
            o = by_text[a.question][0]
        if o is None:
            unmatched.append(a)
        else:
            joined.append((a, o))
    return _Joined(joined, unmatched)


def _integral(x: float) -> bool:
    return float(x).is_integer() and abs(x) <= SCALE_LIMIT


def _inferred_scale(
    name: str, config: ScoreConfig | None, annotations: list[Annotation]
) -> tuple[int, int, dict[str, str], str] | str:
    """(min, max, levels, source) of the human score's rubric, or why it cannot be inferred."""
    if config is not None and config.kind == "numeric":
        if config.min is None or config.max is None:
            return f"its numeric configuration has no bounds (min and max) for {name!r}"
        if not (_integral(config.min) and _integral(config.max)) or config.max <= config.min:
            return f"its numeric bounds {config.min:g}..{config.max:g} are not an integer scale"
        return int(config.min), int(config.max), {}, "config"
    if config is not None and config.categories:
        values = sorted(set(config.categories.values()))
        if not all(_integral(v) for v in values) or len(values) < 2:
            return f"its categories' values {values} are not two or more integers"
        levels: dict[str, list[str]] = defaultdict(list)
        for label, v in config.categories.items():
            levels[str(int(v))].append(label)
        return int(values[0]), int(values[-1]), {k: " / ".join(v) for k, v in levels.items()}, "config"
    if annotations and all(a.kind == "boolean" for a in annotations):
        return 0, 1, {"0": "false", "1": "true"}, "values"
    return "the file gives no configuration of its scale"


def _rubric(
    session: Session,
    options: AnnotationOptions,
    name: str,
    config: ScoreConfig | None,
    humans: list[Annotation],
) -> tuple[RubricUsed, Rubric | None]:
    """The rubric of the ratings: the one asked for, else inferred (returned unsaved when new)."""
    rubrics = RatingRepository(session).rubrics()
    if options.rubric is not None:
        r = rubrics.get(options.rubric)
        if r is None:
            raise InvalidItems(
                f"unknown rubric {options.rubric!r}",
                [
                    ItemError(
                        None, "rubric", f"no rubric is named {options.rubric!r}; create it with POST /rubrics"
                    )
                ],
            )
        used = RubricUsed(
            name=r.name, min=r.min_score, max=r.max_score, levels=r.levels, source="asked", created=False
        )
        return used, None
    scale = _inferred_scale(name, config, humans)
    if isinstance(scale, str):
        raise InvalidItems(
            f"the scale of the human score {name!r} is unknown",
            [
                ItemError(
                    None,
                    "rubric",
                    f"{scale}: upload the platform's score configurations (configs) or name an existing "
                    "rubric (rubric)",
                )
            ],
        )
    lo, hi, levels, source = scale
    rubric_name = f"{options.platform}.{name}"[:200]
    stored = rubrics.get(rubric_name)
    if stored is not None:
        if (stored.min_score, stored.max_score) != (lo, hi):
            raise Conflict(
                f"rubric {rubric_name!r} exists with the scale {stored.min_score}..{stored.max_score}, "
                f"not {lo}..{hi}",
                [ItemError(None, "rubric", "name another rubric, or one of the same scale")],
            )
        used = RubricUsed(
            name=rubric_name, min=lo, max=hi, levels=stored.levels, source="existing", created=False
        )
        return used, None
    used = RubricUsed(name=rubric_name, min=lo, max=hi, levels=levels, source=source, created=True)
    return used, Rubric(name=rubric_name, min_score=lo, max_score=hi, levels=levels)


def _value(a: Annotation, config: ScoreConfig | None) -> float | None:
    """The annotation's number: its value, else its label's value in the configuration (or yes/no)."""
    if a.value is not None:
        return a.value
    if a.label is None:
        return None
    if config is not None and a.label in config.categories:
        return config.categories[a.label]
    return BOOLEAN_LABELS.get(a.label.lower())


def _human_name(options: AnnotationOptions, humans: dict[str, list[Annotation]]) -> str | None:
    if options.human is not None:
        if options.human not in humans:
            raise InvalidItems(
                f"the file has no human score named {options.human!r}",
                [ItemError(None, "human", f"human scores in the file: {sorted(humans) or 'none'}")],
            )
        return options.human
    if len(humans) > 1:
        raise InvalidItems(
            "the file has several human scores; a run is rated on one rubric",
            [ItemError(None, "human", f"say which one becomes the ratings: {sorted(humans)}")],
        )
    return next(iter(humans), None)


def _rating_rows(
    joined: list[tuple[Annotation, TracedOutput]],
    rubric: RubricUsed,
    config: ScoreConfig | None,
    options: AnnotationOptions,
    errors: list[ItemError],
) -> list[Row]:
    rows: list[Row] = []
    seen: dict[tuple[int, str], str] = {}
    for a, o in joined:
        assert a.author is not None
        rater = options.raters.get(a.author, a.author)[:200]
        value = _value(a, config)
        if value is None:
            errors.append(
                ItemError(None, f"{a.field}.value", f"label {a.label!r} has no value in the configuration")
            )
            continue
        if not value.is_integer() or not rubric.min <= value <= rubric.max:
            reason = f"{value:g} is not an integer of the scale {rubric.min}..{rubric.max} of {rubric.name!r}"
            errors.append(ItemError(None, f"{a.field}.value", reason))
            continue
        key = (o.output_id, rater)
        if key in seen:
            errors.append(
                ItemError(
                    None, a.field, f"a second {a.name!r} by {rater!r} of one output (first: {seen[key]})"
                )
            )
            continue
        seen[key] = a.field
        data = {"question_id": o.question_id, "rater": rater, "score": int(value), "rubric": rubric.name}
        rows.append(Row(len(rows), None, {**data, "comment": a.comment}))
    return rows


def _judge_values(
    joined: list[tuple[Annotation, TracedOutput]],
    parsed: Parsed,
    options: AnnotationOptions,
    errors: list[ItemError],
    not_imported: list[str],
) -> list[tuple[int, ExternalMetric, float | None]]:
    """(output id, metric, value) of every judge score whose direction is known; the others are named in
    ``not_imported``, a label without a value or a second value for one output added to ``errors``."""
    by_name: dict[str, list[tuple[Annotation, TracedOutput]]] = defaultdict(list)
    for a, o in joined:
        by_name[a.name].append((a, o))
    metrics = []
    for name in by_name:
        m = resolve(options.platform, name)
        config = parsed.configs.get(name)
        if config is not None and config.higher_is_better is not None:
            m = ExternalMetric(m.column, m.name, config.higher_is_better, m.kind, m.catalogue)
        metrics.append(m)
    known, unknown = directions(metrics, options.higher_is_better, options.lower_is_better)
    not_imported += [
        f"{e.field} (judge score of unknown direction: {e.reason.split(': ', 1)[-1]})" for e in unknown
    ]
    values: list[tuple[int, ExternalMetric, float | None]] = []
    names: dict[str, str] = {}
    for m in known:
        if m.name in names:
            errors.append(
                ItemError(None, m.column, f"{m.name} is also the metric of score {names[m.name]!r}")
            )
        names[m.name] = m.column
        seen: dict[int, str] = {}
        for a, o in by_name[m.column]:
            value = _value(a, parsed.configs.get(m.column))
            if value is None:
                errors.append(
                    ItemError(None, f"{a.field}.value", f"label {a.label!r} has no value: upload configs")
                )
            elif o.output_id in seen:
                errors.append(
                    ItemError(
                        None, a.field, f"a second {a.name!r} score of one output (first: {seen[o.output_id]})"
                    )
                )
            else:
                seen[o.output_id] = a.field
                values.append((o.output_id, m, value))
    return values


def import_annotations(
    session: Session, run_id: int, parsed: Parsed, options: AnnotationOptions
) -> AnnotationImportRead:
    """Join a parsed export to the run's outputs and write its ratings and judge scores (one transaction).

    NotFound for an unknown run; InvalidItems naming the field when no score joins the run, the human score
    to import or its scale is unknown, a value is off the scale or a label has no value, or one author
    scores one output twice; Conflict when the inferred rubric's name is taken by another scale."""
    lock_run(session, run_id)
    outputs = AnnotationRepository(session).outputs(run_id)
    j = _join(parsed.annotations, outputs)
    if not j.joined:
        ids = sorted({a.trace_id or a.span_id or a.question or "?" for a in j.unmatched})
        raise InvalidItems(
            f"none of the file's scores is about an output of run {run_id}",
            [
                ItemError(
                    None,
                    ID_FIELD[options.platform],
                    f"{len(ids)} trace(s) unknown to the run (outputs know their trace when they came in by "
                    f"POST /v1/traces), e.g. {', '.join(ids[:3])}",
                )
            ],
        )
    not_imported = list(parsed.not_imported)
    humans: dict[str, list[tuple[Annotation, TracedOutput]]] = defaultdict(list)
    for a, o in j.joined:
        if a.human:
            humans[a.name].append((a, o))
    human = _human_name(options, {k: [a for a, _ in v] for k, v in humans.items()})
    not_imported += [f"{n} (human score: the ratings are {human!r})" for n in sorted(humans) if n != human]
    errors: list[ItemError] = []
    rubric, new_rubric, rows = None, None, []
    if human is not None:
        config = parsed.configs.get(human)
        rubric, new_rubric = _rubric(session, options, human, config, [a for a, _ in humans[human]])
        rows = _rating_rows(humans[human], rubric, config, options, errors)
    judged = [(a, o) for a, o in j.joined if not a.human]
    values = _judge_values(judged, parsed, options, errors, not_imported)
    if errors:
        raise InvalidItems(f"{len(errors)} score(s) of the file cannot be imported", errors[:100])
    ratings = AnnotationCounts()
    raters = sorted({str(r.data["rater"]) for r in rows})
    created_raters: list[str] = []
    notes: list[str] = []
    if rows:
        known = set(RatingRepository(session).raters())
        created_raters = [r for r in raters if r not in known]
        if new_rubric is not None:
            RatingRepository(session).add(new_rubric)
            RatingRepository(session).flush()
        report = import_ratings(session, run_id, rows, register_raters=True)
        ratings = AnnotationCounts(created=report.created, updated=report.updated, unchanged=report.unchanged)
    scores = AnnotationCounts()
    if values:
        c, u, n = upsert_scores(session, options.platform, values)
        scores = AnnotationCounts(created=c, updated=u, unchanged=n)
    if human is None and options.rubric is not None:
        notes.append(f"rubric {options.rubric!r} was not used: the file has no human score on this run")
    if j.unmatched:
        notes.append(
            f"{len(j.unmatched)} score(s) are about traces that are no output of run {run_id}: not imported"
        )
    return AnnotationImportRead(
        run_id=run_id,
        platform=options.platform,
        received=len(parsed.annotations),
        traces=len({a.trace_id or a.span_id or a.question for a in parsed.annotations}),
        matched_outputs=len({o.output_id for _, o in j.joined}),
        unmatched=len(j.unmatched),
        unmatched_traces=sorted({a.trace_id or a.span_id or a.question or "?" for a in j.unmatched})[:20],
        human=human,
        rubric=rubric,
        ratings=ratings,
        raters=raters,
        raters_created=created_raters,
        metrics=sorted({m.name for _, m, _ in values}),
        scores=scores,
        not_imported=not_imported,
        notes=notes,
    )
