"""CSV as spreadsheets save it, everywhere a CSV is accepted; files of the wrong kind; error counts; name
conflicts that name the id holding the name."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import assert_envelope, create_dataset, load_mini, upload
from tests.api.test_outputs import make_run, native_outputs

RATINGS = [
    ("q1", "alice", 5, "précis; complet"),
    ("q1", "bob", 4, "bien, mais\nun peu long"),
    ("q4", "alice", 5, 'a dit "je ne sais pas"'),
    ("q4", "bob", 3, ""),
]


def french_sheet(delimiter: str, header: list[str] | None = None) -> str:
    """The ratings sheet as a French team's spreadsheet exports it (quoted cells, CRLF line ends)."""

    def cell(v: Any) -> str:
        v = str(v)
        return (
            f'"{v.replace(chr(34), chr(34) * 2)}"' if any(c in v for c in (delimiter, "\n", '"', ",")) else v
        )

    lines = [delimiter.join(header or ["question_id", "rater", "score", "comment"])]
    lines += [delimiter.join(cell(v) for v in row) for row in RATINGS]
    return "\r\n".join(lines) + "\r\n"


VARIANTS = {
    # Excel, French locale, "CSV UTF-8": byte-order mark, semicolons, CRLF
    "excel-utf8": lambda: codecs.BOM_UTF8 + french_sheet(";").encode("utf-8"),
    # Excel, French locale, "CSV (séparateur: point-virgule)": Windows-1252, semicolons, CRLF
    "excel-cp1252": lambda: french_sheet(";").encode("cp1252"),
    # LibreOffice / Excel "Text (tab delimited)"
    "tab": lambda: french_sheet("\t").encode("utf-8"),
    # Excel "Unicode text": UTF-16 with its byte-order mark, tabs
    "unicode-text": lambda: french_sheet("\t").encode("utf-16"),
}


def rated_run(client: TestClient) -> int:
    ds = load_mini(client)
    run = make_run(client, ds)
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    assert client.post("/raters", json=[{"name": "alice"}, {"name": "bob"}]).status_code == 200
    return run


def stored(client: TestClient, run: int) -> list[tuple[Any, ...]]:
    return sorted(
        (r["question_id"], r["rater"], r["score"], r["comment"])
        for r in client.get(f"/runs/{run}/ratings").json()
    )


EXPECTED = sorted((q, r, s, c or None) for q, r, s, c in RATINGS)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_ratings_sheet_variants_import_identically(client: TestClient, variant: str) -> None:
    run = rated_run(client)
    r = upload(client, f"/runs/{run}/ratings", "notes.csv", VARIANTS[variant]())
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["created"] == 4
    assert stored(client, run) == EXPECTED
    if variant == "excel-cp1252":
        assert len(body["notes"]) == 1 and "Windows-1252" in body["notes"][0]
    else:
        assert body["notes"] == []


def test_json_ratings_give_the_same_rows(client: TestClient) -> None:
    run = rated_run(client)
    rows = [{"question_id": q, "rater": r, "score": s, "comment": c} for q, r, s, c in RATINGS]
    assert client.post(f"/runs/{run}/ratings", json=rows).status_code == 200
    assert stored(client, run) == EXPECTED


def test_header_names_in_any_case_and_accepted_aliases(client: TestClient) -> None:
    run = rated_run(client)
    sheet = french_sheet(";", ["Question ID", "Évaluateur", "Note", "Commentaire"])
    r = upload(client, f"/runs/{run}/ratings", "notes.csv", sheet.encode("utf-8"))
    assert r.status_code == 200, r.text
    assert stored(client, run) == EXPECTED


def test_a_missing_column_lists_the_accepted_names(client: TestClient) -> None:
    run = rated_run(client)
    sheet = french_sheet(";", ["question_id", "who", "score", "comment"])
    body = assert_envelope(upload(client, f"/runs/{run}/ratings", "notes.csv", sheet.encode()), 422)
    assert body["detail"] == "the CSV header has no column for rater"
    [item] = body["items"]
    assert item["field"] == "rater"
    assert (
        "rater or rater_name or annotator" in item["reason"]
        and "the header has: question_id, who" in item["reason"]
    )


def test_decimal_comma_in_a_score_table(client: TestClient) -> None:
    run = rated_run(client)
    sheet = "question_id;metric;value\r\nq1;external.mine;0,75\r\nq4;external.mine;1\r\n"
    r = upload(client, f"/runs/{run}/scores", "s.csv", sheet.encode("cp1252"))
    assert r.status_code == 200, r.text
    rows = {row["question_id"]: row for row in client.get(f"/runs/{run}/scores").json()["rows"]}
    assert rows["q1"]["external.mine"] == 0.75 and rows["q4"]["external.mine"] == 1.0


def test_outputs_from_the_csv_ragas_writes(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    # Ragas' writer quotes cells holding commas; list cells are Python literals
    sheet = (
        "user_input,retrieved_contexts,response,reference\r\n"
        '"Combien coûte le forfait Essentiel ?","[\'Le forfait Essentiel coûte 9,99 € par mois\', '
        '""redémarrez la box""]","9,99 €.","9,99 € par mois."\r\n'
    )
    r = upload(client, f"/runs/{run}/outputs", "ragas.csv", sheet.encode())
    assert r.status_code == 200, r.text
    [out] = client.get(f"/runs/{run}/outputs").json()
    assert [c["text"] for c in out["retrieved"]] == [
        "Le forfait Essentiel coûte 9,99 € par mois",
        "redémarrez la box",
    ]
    assert [c["location"] for c in out["retrieved"]] == ["exact", "exact"]


@pytest.mark.parametrize(
    ("path", "rows", "looks_like"),
    [
        ("/runs/{run}/outputs", [{"question_id": "q1", "rater": "alice", "score": 4}], "a ratings file"),
        ("/runs/{run}/ratings", [{"question_id": "q1", "answer": "x", "retrieved": []}], "a file of outputs"),
        (
            "/runs/{run}/ratings",
            [{"question_id": "q1", "metric": "external.x", "value": 1}],
            "a file of precomputed",
        ),
        ("/runs/{run}/scores", [{"question_id": "q1", "rater": "alice", "score": 4}], "a ratings file"),
        ("/raters", [{"question_id": "q1", "rater": "alice", "score": 4}], "a ratings file"),
        (
            "/datasets/{ds}/documents",
            [{"external_id": "q9", "question": "?", "passages": []}],
            "a questions file",
        ),
        ("/datasets/{ds}/questions", [{"external_id": "d9", "title": "t", "text": "x"}], "a documents file"),
        ("/runs/{run}/outputs", [{"input": "q?", "actual_output": "a", "context": ["c"]}], "a DeepEval"),
    ],
)
def test_a_file_of_the_wrong_kind_gets_one_message(
    client: TestClient, path: str, rows: list[dict[str, Any]], looks_like: str
) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    for content in (json.dumps(rows * 3).encode(), None):
        if content is None:  # the same rows as a CSV file
            keys = list(rows[0])
            lines = [",".join(keys)] + [",".join(str(r[k]) for k in keys) for r in rows * 3]
            content = ("\r\n".join(lines) + "\r\n").encode()
            name = "f.csv"
            if path.startswith("/datasets"):
                continue  # documents and questions are JSON or JSONL only
        else:
            name = "f.json"
        body = assert_envelope(upload(client, path.format(run=run, ds=ds), name, content), 422, "WrongKind")
        assert body["detail"].startswith(f"this looks like {looks_like}"), body
        assert len(body["items"]) == 1


def test_error_counts_say_rows_and_errors(client: TestClient) -> None:
    ds = load_mini(client)
    run = make_run(client, ds)
    bad = [
        {"question_id": f"nope{i}", "answer": "x", "retrieved": [{"start": 1}, {"text": " "}]}
        for i in range(6)
    ]
    body = assert_envelope(client.post(f"/runs/{run}/outputs", json=bad), 422)
    assert (
        body["detail"] == f"outputs: 6 rows, {len(body['items'])} errors in 6 of them; nothing was imported"
    )
    assert len(body["items"]) == 12
    one = [
        {"question_id": "q1", "rater": "alice", "score": 9},
        {"question_id": "q4", "rater": "alice", "score": 5},
    ]
    assert client.post("/raters", json=[{"name": "alice"}]).status_code == 200
    assert client.post(f"/runs/{run}/outputs", json=native_outputs()).status_code == 200
    body = assert_envelope(client.post(f"/runs/{run}/ratings", json=one), 422)
    assert body["detail"] == "ratings: 2 rows, 1 error in 1 of them; nothing was imported"


def test_name_conflicts_name_the_existing_id(client: TestClient) -> None:
    ds = create_dataset(client, "same")
    body = assert_envelope(client.post("/datasets", json={"name": "same"}), 409)
    assert f"(id {ds})" in body["detail"] and body["items"][0]["reason"] == f"already taken by dataset {ds}"
    run = make_run(client, ds, "v1")
    body = assert_envelope(client.post(f"/datasets/{ds}/runs", json={"name": "v1"}), 409)
    assert f"(id {run})" in body["detail"]
    r = client.post("/rubrics", json={"name": "pm", "min": 0, "max": 3}).json()
    body = assert_envelope(client.post("/rubrics", json={"name": "pm", "min": 0, "max": 3}), 409)
    assert f"(id {r['id']})" in body["detail"]
