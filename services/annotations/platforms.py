"""Score and annotation exports of Langfuse, Opik, Phoenix and MLflow read into one shape: who (a human
author or a judge) gave which value of which score to which trace (or span).

- Langfuse: the public API's scores (``GET /api/public/v2/scores``: ``{data: [Score]}`` with ``traceId``,
  ``observationId``, ``source`` ANNOTATION | API | EVAL, ``dataType`` NUMERIC | CATEGORICAL | BOOLEAN,
  ``value``, ``stringValue``, ``authorUserId``; or v3's ``subject``), and its score configs
  (``GET /api/public/score-configs``: ``{data: [ScoreConfig]}`` with ``minValue``, ``maxValue``,
  ``categories: [{label, value}]``). ANNOTATION scores are human, under ``authorUserId``.
- Opik: traces with their ``feedback_scores`` (``search_traces``, ``GET /v1/private/traces``:
  ``{content: [TracePublic]}``), each with ``source`` ui | sdk | online_scoring and, for several annotators,
  ``value_by_author``; feedback definitions (``{content: [{name, type: numerical | categorical | boolean,
  details}]}``). ``ui`` scores are human, under their author.
- Phoenix: span and trace annotations (``GET /v1/projects/{id}/span_annotations``: ``{data:
  [SpanAnnotation]}`` with ``span_id`` or ``trace_id``, ``annotator_kind`` HUMAN | LLM | CODE, ``result:
  {label, score, explanation}``, ``user_id``, ``identifier``) and annotation configs (``{data: [{type:
  CATEGORICAL | CONTINUOUS, values: [{label, score}], lower_bound, upper_bound, optimization_direction}]}``).
- MLflow: assessments (``Assessment.to_dictionary()``, alone, as a list, or inside traces' ``info``):
  ``assessment_name`` (``name`` before MLflow 3), ``trace_id``, ``span_id``, ``source: {source_type: HUMAN |
  LLM_JUDGE | CODE, source_id}``, ``feedback: {value, error}`` or ``expectation: {value}``, ``rationale``,
  ``valid`` (false once overridden: left out). Expectations are the ground truth a judge
  is checked against, not a judgment of the answer: they are counted and left out.

Every problem names the item and its field (``data[3].authorUserId``); nothing is guessed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from services.errors import InvalidItems, ItemError, MalformedInput
from services.nul import REASON, may_hold_nul, nul_fields, nul_refusal

Kind = Literal["numeric", "categorical", "boolean"]
# Labels read as a boolean score when no configuration gives their value (MLflow's judges answer yes/no).
BOOLEAN_LABELS: Mapping[str, float] = MappingProxyType({"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0})


@dataclass
class Annotation:
    field: str  # where the item is in the file: "data[3]"
    name: str
    human: bool
    author: str | None
    value: float | None
    label: str | None
    comment: str | None
    trace_id: str | None = None
    span_id: str | None = None
    question: str | None = None  # Opik: the trace's input, joined to the question when the id does not join
    kind: Kind | None = None  # what the platform says the score is, when it says


@dataclass
class ScoreConfig:
    name: str
    kind: Kind
    min: float | None = None
    max: float | None = None
    categories: dict[str, float] = field(default_factory=dict)  # label -> value
    higher_is_better: bool | None = None


@dataclass
class Parsed:
    annotations: list[Annotation]
    configs: dict[str, ScoreConfig]
    not_imported: list[str]


class _Errors:
    def __init__(self) -> None:
        self.items: list[ItemError] = []

    def add(self, where: str, reason: str) -> None:
        self.items.append(ItemError(None, where, reason))


def load(raw: bytes, name: str) -> Any:
    """A JSON document, or JSON lines (a list of their values); 400 naming the line that is neither, 422
    naming each place whose text holds NUL (the store cannot hold it)."""
    doc = _decode(raw, name)
    if may_hold_nul(raw.decode("utf-8", errors="replace")):
        places = nul_fields(doc, "" if name == "file" else name)
        if places:
            raise nul_refusal([ItemError(None, p or name, REASON) for p in places[:100]], f"the {name}")
    return doc


def _decode(raw: bytes, name: str) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MalformedInput(
            f"{name} is not UTF-8 text", [ItemError(None, name, f"byte {exc.start}: {exc.reason}")]
        ) from exc
    if not text.strip():
        raise MalformedInput(f"{name} is empty", [ItemError(None, name, "no data")])
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise MalformedInput(f"{name} nests too deeply", [ItemError(None, name, "too deep")]) from exc
    except json.JSONDecodeError as first:
        lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) < 2:
            raise MalformedInput(
                f"{name} is not JSON", [ItemError(None, name, f"line {first.lineno}: {first.msg}")]
            ) from first
        out = []
        for i, line in lines:
            try:
                out.append(json.loads(line))
            except (json.JSONDecodeError, RecursionError) as exc:
                raise MalformedInput(
                    f"{name} is neither JSON nor JSON lines",
                    [ItemError(None, name, f"line {i}: {getattr(exc, 'msg', 'nested too deeply')}", i)],
                ) from exc
        return out


def _items(doc: Any, keys: tuple[str, ...], name: str) -> tuple[list[Any], str]:
    """The list of items of an export and the path of its items (``data``; the top list: ``""``)."""
    if isinstance(doc, list):
        return doc, ""
    if isinstance(doc, dict):
        for k in keys:
            if isinstance(doc.get(k), list):
                return doc[k], k
        return [doc], ""
    raise InvalidItems(
        f"{name} holds no list of items",
        [ItemError(None, name, f"a JSON list, or an object with {' or '.join(keys)}")],
    )


def _dicts(value: Any, errors: _Errors, where: str) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a list field with their positions; a field that is no list of objects is an error."""
    if value is None:
        return []
    if not isinstance(value, list):
        errors.add(where, "must be a list")
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            out.append((i, item))
        else:
            errors.add(f"{where}[{i}]", "must be an object")
    return out


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _get(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _where(prefix: str, i: int) -> str:
    return f"{prefix}[{i}]" if prefix else f"[{i}]"


# ------------------------------------------------------------------------------------------------ Langfuse


def _langfuse_trace(d: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(trace id, observation id, why the score is about no trace) of a v2 or v3 score."""
    trace = _text(_get(d, "traceId", "trace_id"))
    obs = _text(_get(d, "observationId", "observation_id"))
    subject = d.get("subject")
    if trace is None and isinstance(subject, dict):
        kind = subject.get("kind")
        if kind == "trace":
            trace = _text(subject.get("id"))
        elif kind == "observation":
            trace, obs = _text(_get(subject, "traceId", "trace_id")), _text(subject.get("id"))
        else:
            return None, None, f"a score of a {kind or 'subject'} is about no trace"
    if trace is None:
        about = "a session" if _get(d, "sessionId", "session_id") else "a dataset run"
        return None, None, f"a score of {about} is about no trace"
    return trace, obs, None


def _langfuse(doc: Any, errors: _Errors, skipped: list[str]) -> list[Annotation]:
    items, prefix = _items(doc, ("data", "scores"), "file")
    out: list[Annotation] = []
    for i, d in enumerate(items):
        where = _where(prefix, i)
        if not isinstance(d, dict):
            errors.add(where, "must be a score object")
            continue
        name = _text(d.get("name"))
        source = _text(d.get("source"))
        dtype = (_text(_get(d, "dataType", "data_type")) or "").upper()
        if name is None:
            errors.add(f"{where}.name", "missing: every score has a name")
            continue
        if source not in ("ANNOTATION", "API", "EVAL"):
            errors.add(f"{where}.source", f"{source!r} is not ANNOTATION, API or EVAL")
            continue
        if dtype in ("TEXT", "CORRECTION"):
            skipped.append(f"{name} ({where}): a {dtype} score holds no value to correlate")
            continue
        if dtype not in ("NUMERIC", "CATEGORICAL", "BOOLEAN"):
            errors.add(f"{where}.dataType", f"{dtype or None!r} is not NUMERIC, CATEGORICAL or BOOLEAN")
            continue
        trace, obs, why = _langfuse_trace(d)
        if why is not None:
            skipped.append(f"{name} ({where}): {why}")
            continue
        raw = d.get("value")
        label = _text(_get(d, "stringValue", "string_value")) or (raw if isinstance(raw, str) else None)
        value = _number(raw)
        if value is None and label is None:
            errors.add(f"{where}.value", f"{raw!r} is neither a number nor a label")
            continue
        human = source == "ANNOTATION"
        author = _text(_get(d, "authorUserId", "author_user_id"))
        if human and author is None:
            errors.add(f"{where}.authorUserId", "an ANNOTATION score needs its author to become a rating")
            continue
        kind: Kind = (
            "boolean" if dtype == "BOOLEAN" else "categorical" if dtype == "CATEGORICAL" else "numeric"
        )
        if kind == "boolean" and label is not None and value is None:
            value = BOOLEAN_LABELS.get(label.lower())
        comment = _text(d.get("comment"))
        out.append(Annotation(where, name, human, author, value, label, comment, trace, obs, kind=kind))
    return out


def _langfuse_configs(doc: Any, errors: _Errors) -> dict[str, ScoreConfig]:
    items, prefix = _items(doc, ("data", "configs"), "configs")
    out: dict[str, ScoreConfig] = {}
    for i, d in enumerate(items):
        where = "configs" + _where(prefix and f".{prefix}", i)
        name = _text(d.get("name")) if isinstance(d, dict) else None
        if name is None or not isinstance(d, dict):
            errors.add(f"{where}.name", "a score config has a name")
            continue
        dtype = (_text(_get(d, "dataType", "data_type")) or "").upper()
        if dtype == "NUMERIC":
            lo, hi = _number(_get(d, "minValue", "min_value")), _number(_get(d, "maxValue", "max_value"))
            out[name] = ScoreConfig(name, "numeric", lo, hi)
        elif dtype in ("CATEGORICAL", "BOOLEAN"):
            cats = {}
            for j, c in _dicts(d.get("categories"), errors, f"{where}.categories"):
                label, value = _text(c.get("label")), _number(c.get("value"))
                if label is None or value is None:
                    errors.add(f"{where}.categories[{j}]", "a category has a label and a numeric value")
                    continue
                cats[label] = value
            kind: Kind = "boolean" if dtype == "BOOLEAN" else "categorical"
            default = {"False": 0.0, "True": 1.0} if kind == "boolean" else {}
            out[name] = ScoreConfig(name, kind, categories=cats or default)
        elif dtype not in ("TEXT", "CORRECTION"):
            errors.add(f"{where}.dataType", f"{dtype or None!r} is not NUMERIC, CATEGORICAL or BOOLEAN")
    return out


# ---------------------------------------------------------------------------------------------------- Opik


def _input_text(value: Any) -> str | None:
    """The question of an Opik trace's input: the text, or the one text field of its object."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in ("question", "query", "user_input", "input", "text", "prompt"):
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key]).strip()
        texts = [v for v in value.values() if isinstance(v, str) and v.strip()]
        return texts[0].strip() if len(texts) == 1 else None
    return None


def _opik_score(fs: dict[str, Any], where: str, trace: str | None, question: str | None) -> list[Annotation]:
    name = _text(fs.get("name"))
    assert name is not None
    source = fs.get("source")
    by_author = fs.get("value_by_author") or {}
    if isinstance(by_author, dict) and by_author:
        out = []
        for author, entry in by_author.items():
            entry = entry if isinstance(entry, dict) else {}
            human = (entry.get("source") or source) == "ui"
            out.append(
                Annotation(
                    f"{where}.value_by_author.{author}",
                    name,
                    human,
                    _text(entry.get("author")) or author,
                    _number(entry.get("value")),
                    _text(entry.get("category_name")),
                    _text(entry.get("reason")),
                    trace,
                    None,
                    question,
                )
            )
        return out
    author = _text(fs.get("last_updated_by")) or _text(fs.get("created_by"))
    return [
        Annotation(
            where,
            name,
            source == "ui",
            author,
            _number(fs.get("value")),
            _text(fs.get("category_name")),
            _text(fs.get("reason")),
            trace,
            None,
            question,
        )
    ]


def _opik(doc: Any, errors: _Errors, skipped: list[str]) -> list[Annotation]:
    items, prefix = _items(doc, ("content", "traces", "data"), "file")
    out: list[Annotation] = []
    for i, t in enumerate(items):
        where = _where(prefix, i)
        if not isinstance(t, dict):
            errors.add(where, "must be a trace object")
            continue
        trace = _text(t.get("id"))
        question = _input_text(t.get("input"))
        if trace is None and question is None:
            errors.add(f"{where}.id", "a trace needs its id (or an input naming the question)")
            continue
        if t.get("span_feedback_scores"):
            skipped.append(f"{where}.span_feedback_scores: averages over spans, not one judgment")
        for j, fs in _dicts(t.get("feedback_scores"), errors, f"{where}.feedback_scores"):
            at = f"{where}.feedback_scores[{j}]"
            if _text(fs.get("name")) is None:
                errors.add(f"{at}.name", "a feedback score has a name")
                continue
            if fs.get("source") not in ("ui", "sdk", "online_scoring"):
                errors.add(f"{at}.source", f"{fs.get('source')!r} is not ui, sdk or online_scoring")
                continue
            for a in _opik_score(fs, at, trace, question):
                if a.value is None and a.label is None:
                    errors.add(f"{a.field}.value", "no value")
                elif a.human and a.author is None:
                    errors.add(f"{a.field}.last_updated_by", "a score given in the UI needs its author")
                else:
                    out.append(a)
    return out


def _opik_configs(doc: Any, errors: _Errors) -> dict[str, ScoreConfig]:
    items, prefix = _items(doc, ("content", "data"), "configs")
    out: dict[str, ScoreConfig] = {}
    for i, d in enumerate(items):
        where = "configs" + _where(prefix and f".{prefix}", i)
        name = _text(d.get("name")) if isinstance(d, dict) else None
        if name is None or not isinstance(d, dict):
            errors.add(f"{where}.name", "a feedback definition has a name")
            continue
        details = _object(d.get("details"))
        kind = d.get("type")
        if kind == "numerical":
            out[name] = ScoreConfig(name, "numeric", _number(details.get("min")), _number(details.get("max")))
        elif kind == "categorical":
            cats = {str(k): _number(v) for k, v in _object(details.get("categories")).items()}
            found = {k: v for k, v in cats.items() if v is not None}
            out[name] = ScoreConfig(name, "categorical", categories=found)
        elif kind == "boolean":
            true = _text(_get(details, "true_label", "trueLabel")) or "true"
            false = _text(_get(details, "false_label", "falseLabel")) or "false"
            out[name] = ScoreConfig(name, "boolean", categories={false: 0.0, true: 1.0})
        else:
            errors.add(f"{where}.type", f"{kind!r} is not numerical, categorical or boolean")
    return out


# ------------------------------------------------------------------------------------------------- Phoenix


def _phoenix(doc: Any, errors: _Errors, skipped: list[str]) -> list[Annotation]:
    items, prefix = _items(doc, ("data", "annotations"), "file")
    out: list[Annotation] = []
    for i, d in enumerate(items):
        where = _where(prefix, i)
        if not isinstance(d, dict):
            errors.add(where, "must be an annotation object")
            continue
        name = _text(d.get("name"))
        kind = d.get("annotator_kind")
        if name is None:
            errors.add(f"{where}.name", "missing: every annotation has a name")
            continue
        if kind not in ("HUMAN", "LLM", "CODE"):
            errors.add(f"{where}.annotator_kind", f"{kind!r} is not HUMAN, LLM or CODE")
            continue
        result: dict[str, Any] = d["result"] if isinstance(d.get("result"), dict) else {}
        score = _number(_get(result, "score") if result else d.get("result.score"))
        label = _text(_get(result, "label") if result else d.get("result.label"))
        comment = _text(_get(result, "explanation") if result else d.get("result.explanation"))
        trace, span = _text(d.get("trace_id")), _text(d.get("span_id"))
        if trace is None and span is None:
            if d.get("session_id") is not None:
                skipped.append(f"{name} ({where}): a session annotation is about no trace")
            else:
                errors.add(
                    f"{where}.span_id", "a span annotation names its span (a trace annotation, its trace)"
                )
            continue
        if score is None and label is None:
            errors.add(f"{where}.result", "neither a score nor a label")
            continue
        author = _text(d.get("user_id")) or _text(d.get("identifier"))
        if kind == "HUMAN" and author is None:
            errors.add(f"{where}.user_id", "a HUMAN annotation needs its author (user_id, else identifier)")
            continue
        out.append(Annotation(where, name, kind == "HUMAN", author, score, label, comment, trace, span))
    return out


def _phoenix_configs(doc: Any, errors: _Errors) -> dict[str, ScoreConfig]:
    items, prefix = _items(doc, ("data", "configs"), "configs")
    out: dict[str, ScoreConfig] = {}
    for i, d in enumerate(items):
        where = "configs" + _where(prefix and f".{prefix}", i)
        name = _text(d.get("name")) if isinstance(d, dict) else None
        if name is None or not isinstance(d, dict):
            errors.add(f"{where}.name", "an annotation config has a name")
            continue
        direction = {"MAXIMIZE": True, "MINIMIZE": False}.get(str(d.get("optimization_direction")))
        kind = d.get("type")
        if kind == "CONTINUOUS":
            lo, hi = _number(d.get("lower_bound")), _number(d.get("upper_bound"))
            out[name] = ScoreConfig(name, "numeric", lo, hi, higher_is_better=direction)
        elif kind == "CATEGORICAL":
            cats = {}
            for j, v in _dicts(d.get("values"), errors, f"{where}.values"):
                label, score = _text(v.get("label")), _number(v.get("score"))
                if label is None:
                    errors.add(f"{where}.values[{j}].label", "a value has a label")
                elif score is not None:
                    cats[label] = score
            out[name] = ScoreConfig(name, "categorical", categories=cats, higher_is_better=direction)
        elif kind != "FREEFORM":
            errors.add(f"{where}.type", f"{kind!r} is not CATEGORICAL, CONTINUOUS or FREEFORM")
    return out


# -------------------------------------------------------------------------------------------------- MLflow


def _assessments(doc: Any) -> list[tuple[str, Any]]:
    """Every assessment of the file with its path: alone, in a list, under ``assessments`` or in traces."""
    items, prefix = _items(doc, ("assessments", "traces", "data"), "file")
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(items):
        where = _where(prefix, i)
        info = item.get("info") if isinstance(item, dict) else None
        if isinstance(info, dict) and isinstance(info.get("assessments"), list):
            out += [(f"{where}.info.assessments[{j}]", a) for j, a in enumerate(info["assessments"])]
        else:
            out.append((where, item))
    return out


def _mlflow(doc: Any, errors: _Errors, skipped: list[str]) -> list[Annotation]:
    out: list[Annotation] = []
    expectations = 0
    for where, d in _assessments(doc):
        if not isinstance(d, dict):
            errors.add(where, "must be an assessment object")
            continue
        name = _text(_get(d, "assessment_name", "name"))
        source: dict[str, Any] = d["source"] if isinstance(d.get("source"), dict) else {}
        stype = _get(source, "source_type", "sourceType")
        if name is None:
            errors.add(f"{where}.assessment_name", "missing: every assessment has a name")
            continue
        if d.get("expectation") is not None:
            expectations += 1
            continue
        if d.get("valid") is False:
            skipped.append(f"{name} ({where}): overridden by a later assessment (valid: false)")
            continue
        feedback = d.get("feedback")
        if feedback is None and d.get("error") is not None:
            skipped.append(f"{name} ({where}): the judge failed (error)")
            continue
        if not isinstance(feedback, dict):
            errors.add(f"{where}.feedback", "an assessment is a feedback (or an expectation)")
            continue
        if stype not in ("HUMAN", "LLM_JUDGE", "CODE"):
            errors.add(f"{where}.source.source_type", f"{stype!r} is not HUMAN, LLM_JUDGE or CODE")
            continue
        trace = _text(_get(d, "trace_id", "request_id"))
        if trace is None:
            errors.add(f"{where}.trace_id", "missing: an assessment belongs to a trace")
            continue
        raw = feedback.get("value")
        value = _number(raw)
        label = _text(raw) if isinstance(raw, str) else None
        if label is not None:
            value = BOOLEAN_LABELS.get(label.lower())
        if value is None and label is None:
            if feedback.get("error") is not None:
                skipped.append(f"{name} ({where}): the judge failed (feedback.error)")
            else:
                errors.add(f"{where}.feedback.value", f"{raw!r} is neither a number, a boolean nor a label")
            continue
        author = _text(_get(source, "source_id", "sourceId"))
        if stype == "HUMAN" and author is None:
            errors.add(f"{where}.source.source_id", "a HUMAN assessment needs its author")
            continue
        boolean = isinstance(raw, bool) or (label is not None and label.lower() in BOOLEAN_LABELS)
        kind: Kind = "boolean" if boolean else "categorical" if label is not None else "numeric"
        comment, span = _text(d.get("rationale")), _text(d.get("span_id"))
        out.append(
            Annotation(where, name, stype == "HUMAN", author, value, label, comment, trace, span, kind=kind)
        )
    if expectations:
        skipped.append(
            f"{expectations} expectation(s): the ground truth a judge is checked against, not a judgment of "
            "the answer"
        )
    return out


_READERS: Mapping[str, Callable[[Any, _Errors, list[str]], list[Annotation]]] = MappingProxyType(
    {
        "langfuse": _langfuse,
        "opik": _opik,
        "phoenix": _phoenix,
        "mlflow": _mlflow,
    }
)
_CONFIGS: Mapping[str, Callable[[Any, _Errors], dict[str, ScoreConfig]]] = MappingProxyType(
    {
        "langfuse": _langfuse_configs,
        "opik": _opik_configs,
        "phoenix": _phoenix_configs,
    }
)


def parse(platform: str, raw: bytes, configs: bytes | None) -> Parsed:
    """The export's annotations and the score configurations beside it; InvalidItems naming every bad item
    and field, MalformedInput for a file that is not JSON."""
    errors = _Errors()
    skipped: list[str] = []
    annotations = _READERS[platform](load(raw, "file"), errors, skipped)
    found: dict[str, ScoreConfig] = {}
    if configs is not None:
        reader = _CONFIGS.get(platform)
        if reader is None:
            errors.add("configs", f"{platform} exports have no score configurations; leave configs out")
        else:
            found = reader(load(configs, "configs"), errors)
    if errors.items:
        raise InvalidItems(f"the {platform} export has {len(errors.items)} bad item(s)", errors.items[:100])
    if not annotations:
        raise InvalidItems(
            f"the {platform} export holds no score to import",
            [ItemError(None, "file", "; ".join(skipped[:5]) or "no score")],
        )
    return Parsed(annotations, found, skipped)
