#!/usr/bin/env python3
"""Validate the ragmeta demo dataset (documents.jsonl and questions.jsonl).

Checks the structure of both files, the passage offsets and the design
constraints of the dataset, prints a summary and exits with status 1 if any
problem was found. When build.py sits next to the files, also checks that the
JSONL files are up to date with it (byte-identical regeneration).

Pure standard library.

Usage::

    python data/demo/check.py          # checks the files next to this script
    python data/demo/check.py DIR      # checks DIR/documents.jsonl and DIR/questions.jsonl
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CATEGORIES = ("offres", "appareils", "facturation", "procedures", "depannage", "conditions")
TYPES = (
    "factual",
    "procedural",
    "comparison",
    "yes_no",
    "list",
    "numerical",
    "multi_passage",
    "definition",
)
DOC_FIELDS = {"external_id", "title", "text", "metadata"}
QUESTION_FIELDS = {"external_id", "question", "reference_answer", "answerable", "types", "passages"}
PASSAGE_FIELDS = {"document_id", "start", "end"}

# Design constraints of the demo dataset.
MIN_PER_TYPE = {
    "procedural": 6,
    "numerical": 6,
    "yes_no": 5,
    "list": 4,
    "comparison": 4,
    "multi_passage": 6,
}
UNANSWERABLE_SHARE = (0.10, 0.20)
PASSAGE_WORDS = (5, 200)
MAX_PASSAGES = 4

DOC_ID_RE = re.compile(r"^doc-\d{2}$")
QUESTION_ID_RE = re.compile(r"^q-\d{3}$")


class Report:
    def __init__(self):
        self.errors = []

    def error(self, where, message):
        self.errors.append("%s: %s" % (where, message))


def is_word_char(ch):
    return ch.isalnum() or ch == "_"


def read_jsonl(path, report):
    records = []
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        report.error(name, "cannot read file (%s)" % exc)
        return records
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.error(name, "not valid UTF-8 (%s)" % exc)
        return records
    if content and not content.endswith("\n"):
        report.error(name, "last line does not end with a newline")
    for lineno, line in enumerate(content.split("\n")[:-1] if content.endswith("\n") else content.split("\n"), 1):
        if not line.strip():
            report.error("%s:%d" % (name, lineno), "empty line")
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            report.error("%s:%d" % (name, lineno), "invalid JSON (%s)" % exc)
            continue
        if not isinstance(obj, dict):
            report.error("%s:%d" % (name, lineno), "not a JSON object")
            continue
        records.append(obj)
    return records


def check_documents(docs, report):
    by_id = {}
    for i, doc in enumerate(docs, 1):
        where = "documents.jsonl:%d" % i
        keys = set(doc)
        if keys != DOC_FIELDS:
            report.error(where, "fields %s, expected %s" % (sorted(keys), sorted(DOC_FIELDS)))
        did = doc.get("external_id")
        if not isinstance(did, str) or not DOC_ID_RE.match(did):
            report.error(where, "bad external_id %r" % (did,))
            continue
        where = did
        if did in by_id:
            report.error(where, "duplicate external_id")
        by_id[did] = doc
        if not isinstance(doc.get("title"), str) or not doc["title"].strip():
            report.error(where, "empty or missing title")
        text = doc.get("text")
        if not isinstance(text, str) or not text.strip():
            report.error(where, "empty or missing text")
        elif text != text.strip():
            report.error(where, "text has leading or trailing whitespace")
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            report.error(where, "metadata is not an object")
            continue
        if meta.get("category") not in CATEGORIES:
            report.error(where, "bad category %r" % (meta.get("category"),))
        if meta.get("language") != "fr":
            report.error(where, "bad language %r" % (meta.get("language"),))
    return by_id


def check_questions(questions, docs_by_id, report):
    seen = set()
    for i, q in enumerate(questions, 1):
        where = "questions.jsonl:%d" % i
        keys = set(q)
        if keys != QUESTION_FIELDS:
            report.error(where, "fields %s, expected %s" % (sorted(keys), sorted(QUESTION_FIELDS)))
        qid = q.get("external_id")
        if not isinstance(qid, str) or not QUESTION_ID_RE.match(qid):
            report.error(where, "bad external_id %r" % (qid,))
        else:
            where = qid
            if qid in seen:
                report.error(where, "duplicate external_id")
            seen.add(qid)
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            report.error(where, "empty or missing question")

        answerable = q.get("answerable")
        answer = q.get("reference_answer")
        passages = q.get("passages")
        if not isinstance(answerable, bool):
            report.error(where, "answerable is not a boolean")
        if not isinstance(passages, list):
            report.error(where, "passages is not a list")
            passages = []
        if answerable is True:
            if not isinstance(answer, str) or not answer.strip():
                report.error(where, "answerable question without a reference answer")
            if not 1 <= len(passages) <= MAX_PASSAGES:
                report.error(where, "answerable question with %d passages (expected 1 to %d)" % (len(passages), MAX_PASSAGES))
        elif answerable is False:
            if answer is not None:
                report.error(where, "unanswerable question with a non-null reference answer")
            if passages:
                report.error(where, "unanswerable question with passages")

        types = q.get("types")
        if not isinstance(types, list) or not types:
            report.error(where, "types must be a non-empty list")
            types = []
        for t in types:
            if t not in TYPES:
                report.error(where, "unknown type %r" % (t,))
        if len(set(map(str, types))) != len(types):
            report.error(where, "duplicate types")
        if ("multi_passage" in types) != (len(passages) >= 2):
            report.error(where, "type multi_passage must be set exactly when there are 2 or more passages")

        spans = set()
        for j, p in enumerate(passages, 1):
            pwhere = "%s passage %d" % (where, j)
            if not isinstance(p, dict) or set(p) != PASSAGE_FIELDS:
                report.error(pwhere, "fields must be %s" % sorted(PASSAGE_FIELDS))
                continue
            did, start, end = p["document_id"], p["start"], p["end"]
            if did not in docs_by_id:
                report.error(pwhere, "unknown document %r" % (did,))
                continue
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
                report.error(pwhere, "start and end must be integers")
                continue
            text = docs_by_id[did].get("text") or ""
            if not 0 <= start < end <= len(text):
                report.error(pwhere, "offsets %d-%d outside %s (length %d) or empty" % (start, end, did, len(text)))
                continue
            span = text[start:end]
            if not span.strip():
                report.error(pwhere, "span is blank")
                continue
            if span != span.strip():
                report.error(pwhere, "span has leading or trailing whitespace: %r" % span[:60])
            if start > 0 and is_word_char(text[start - 1]) and is_word_char(text[start]):
                report.error(pwhere, "span starts inside a word: %r" % span[:60])
            if end < len(text) and is_word_char(text[end - 1]) and is_word_char(text[end]):
                report.error(pwhere, "span ends inside a word: %r" % span[-60:])
            n_words = len(span.split())
            if not PASSAGE_WORDS[0] <= n_words <= PASSAGE_WORDS[1]:
                report.error(pwhere, "span has %d words (expected %d to %d)" % ((n_words,) + PASSAGE_WORDS))
            if (did, start, end) in spans:
                report.error(pwhere, "duplicate passage")
            spans.add((did, start, end))


def check_design(docs, questions, report):
    counts = collections.Counter(t for q in questions for t in q.get("types") or [])
    for t, minimum in MIN_PER_TYPE.items():
        if counts[t] < minimum:
            report.error("design", "%d questions of type %s, expected at least %d" % (counts[t], t, minimum))
    if questions:
        share = sum(1 for q in questions if q.get("answerable") is False) / len(questions)
        low, high = UNANSWERABLE_SHARE
        if not low <= share <= high:
            report.error("design", "unanswerable share %.0f %% outside %.0f-%.0f %%" % (100 * share, 100 * low, 100 * high))


def check_build_sync(directory, report):
    """If build.py is next to the files, regenerate in memory and compare bytes."""
    build_path = os.path.join(directory, "build.py")
    if not os.path.exists(build_path):
        return None
    sys.dont_write_bytecode = True  # do not leave a __pycache__ next to the data
    spec = importlib.util.spec_from_file_location("_ragmeta_demo_build", build_path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        doc_records, question_records = module.build_records()
    except Exception as exc:  # report any failure of the generator as a problem
        report.error("build.py", "generation failed: %s" % exc)
        return False
    ok = True
    for name, records in (("documents.jsonl", doc_records), ("questions.jsonl", question_records)):
        expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        try:
            with open(os.path.join(directory, name), "rb") as fh:
                actual = fh.read()
        except OSError:
            actual = None
        if actual != expected:
            report.error(name, "out of date with build.py (run: python build.py)")
            ok = False
    return ok


def word_count(text):
    return len(text.split())


def summarize(docs, questions, build_sync):
    lines = []
    words = [word_count(d.get("text") or "") for d in docs]
    lines.append("Documents: %d" % len(docs))
    if words:
        lines.append(
            "  words: total %d, min %d, mean %.0f, median %.0f, max %d"
            % (sum(words), min(words), statistics.mean(words), statistics.median(words), max(words))
        )
        buckets = collections.Counter(
            "< 100" if w < 100 else "100-999" if w < 1000 else ">= 1000" for w in words
        )
        lines.append(
            "  length buckets: "
            + ", ".join("%s words: %d" % (b, buckets[b]) for b in ("< 100", "100-999", ">= 1000"))
        )
        longest = sorted(zip(words, (d.get("external_id") for d in docs)), reverse=True)[:3]
        lines.append("  longest: " + ", ".join("%s (%d)" % (i, w) for w, i in longest))
    cats = collections.Counter((d.get("metadata") or {}).get("category") for d in docs)
    lines.append("  per category: " + ", ".join("%s %d" % (c, cats[c]) for c in CATEGORIES))

    answerable = [q for q in questions if q.get("answerable") is True]
    unanswerable = [q for q in questions if q.get("answerable") is False]
    lines.append("Questions: %d" % len(questions))
    lines.append(
        "  answerable: %d, unanswerable: %d (%.0f %%)"
        % (len(answerable), len(unanswerable), 100.0 * len(unanswerable) / max(1, len(questions)))
    )
    types = collections.Counter(t for q in questions for t in q.get("types") or [])
    lines.append("  per type: " + ", ".join("%s %d" % (t, types[t]) for t in TYPES))
    n_passages = [len(q.get("passages") or []) for q in answerable]
    if n_passages:
        per_q = collections.Counter(n_passages)
        lines.append(
            "  passages: %d in total, per answerable question: %s"
            % (sum(n_passages), ", ".join("%d: %d" % (k, per_q[k]) for k in sorted(per_q)))
        )
    cross_doc = sum(
        1 for q in answerable if len({p.get("document_id") for p in q.get("passages") or []}) >= 2
    )
    lines.append("  questions whose passages span 2+ documents: %d" % cross_doc)
    cited = {p.get("document_id") for q in answerable for p in q.get("passages") or []}
    lines.append("  documents cited by at least one question: %d/%d" % (len(cited), len(docs)))
    if build_sync is not None:
        lines.append("build.py: JSONL files %s" % ("up to date" if build_sync else "OUT OF DATE"))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Validate the ragmeta demo dataset.")
    parser.add_argument("directory", nargs="?", default=HERE, help="directory holding the JSONL files")
    args = parser.parse_args(argv)

    report = Report()
    docs = read_jsonl(os.path.join(args.directory, "documents.jsonl"), report)
    questions = read_jsonl(os.path.join(args.directory, "questions.jsonl"), report)
    docs_by_id = check_documents(docs, report)
    check_questions(questions, docs_by_id, report)
    check_design(docs, questions, report)
    build_sync = check_build_sync(args.directory, report)

    print(summarize(docs, questions, build_sync))
    if report.errors:
        print("\n%d problem(s):" % len(report.errors))
        for err in report.errors:
            print("  - " + err)
        return 1
    print("\nOK: no problems found.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
