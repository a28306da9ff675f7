"""NUL (U+0000) in text that validation decodes or that a caller made: refused by validate_rows naming the
field, as the parsers refuse it in what they read (services/nul.py)."""

from __future__ import annotations

from services.datasets.schemas import DocumentCreate
from services.ingest import Row, parse_rows
from services.nul import REASON
from services.runs.schemas import NativeOutput
from services.validation import validate_rows


def test_nul_in_a_json_list_of_a_csv_cell_names_the_field() -> None:
    raw = (
        b"question_id,answer,retrieved\r\n"
        b'q1,yes,"[{""text"": ""fine""}]"\r\n'
        b'q2,yes,"[{""text"": ""ok""}, {""text"": ""a\\u0000b""}]"\r\n'
        b"q3,a literal \\u0000 in text is six characters,\r\n"
    )
    rows = parse_rows(raw, "csv")
    good, errors = validate_rows(rows, NativeOutput)
    assert [(e.index, e.field, e.reason) for e in errors] == [(1, "retrieved[1].text", REASON)]
    assert [item.question_id for _, item in good] == ["q1", "q3"]
    assert good[1][1].answer == "a literal \\u0000 in text is six characters"


def test_nul_in_rows_a_caller_made_names_the_field() -> None:
    rows = [
        Row(0, None, {"external_id": "a.txt", "text": "clean"}),
        Row(1, None, {"external_id": "b.txt", "text": "bad\x00text"}),
    ]
    good, errors = validate_rows(rows, DocumentCreate)
    assert [(e.index, e.field) for e in errors] == [(1, "text")]
    assert [d.external_id for _, d in good] == ["a.txt"]
