"""What a team would otherwise find out too late, said where it happens: a rating task that cannot yield a
report, a signed-out browser sent to the login form, the favicon, question names on pages."""

from __future__ import annotations

from fastapi.testclient import TestClient

from services.labels import question_label
from tests.api.team import make_team
from tests.integration.test_scoring import drain

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


def test_a_task_with_fewer_raters_per_output_than_a_report_needs_is_warned(client: TestClient) -> None:
    team = make_team(client)
    one = client.post(
        "/tasks", json={"name": "k1", "run_id": team.run, "raters": ["alice", "bob"], "per_output": 1}
    )
    assert one.status_code == 201, one.text
    (warning,) = one.json()["warnings"]
    assert "per_output=1" in warning and "ratings.min_raters" in warning and "at least 2 raters" in warning
    # one rater listed, everyone rating everything: the same, naming the raters
    alone = client.post("/tasks", json={"name": "solo", "run_id": team.run, "raters": ["alice"]}).json()
    assert "1 rater(s) listed in raters" in alone["warnings"][0]
    # the dashboard and the task itself say it again
    task_id = one.json()["id"]
    assert client.get(f"/tasks/{task_id}/dashboard").json()["task"]["warnings"] == [warning]
    assert client.get(f"/tasks/{task_id}").json()["warnings"] == [warning]
    # a design that yields a report has no warning (the team's task: two raters rate everything)
    assert client.get(f"/tasks/{team.task}").json()["warnings"] == []
    two = client.post(
        "/tasks",
        json={"name": "k2", "run_id": team.run, "raters": ["alice", "bob", "carol"], "per_output": 2},
    )
    assert two.json()["warnings"] == []


def test_a_signed_out_browser_opening_a_report_is_sent_to_the_login_form(client: TestClient) -> None:
    team = make_team(client)
    anonymous = TestClient(client.app)
    for path in (
        f"/runs/{team.run}/report.html?ci=bca",
        f"/runs/{team.run}/report",
        f"/report.html?runs={team.run}",
        f"/runs/{team.run}/metrics/ref.word_recall@5/items.html",
    ):
        r = anonymous.get(path, headers={"Accept": BROWSER}, follow_redirects=False)
        assert r.status_code == 303, (path, r.status_code)
        assert r.headers["location"].startswith("/login?next=/"), r.headers["location"]
    r = anonymous.get(f"/runs/{team.run}/report.html?ci=bca", headers={"Accept": BROWSER})
    assert r.status_code == 200 and 'name="next"' in r.text and "report.html?ci=bca" in r.text
    # API clients keep the 401 envelope: JSON asked for, any media type (fetch, curl, httpx), or a key
    for accept in ("application/json", "*/*", "application/json, text/html;q=0.5"):
        r = anonymous.get(f"/runs/{team.run}/report.html", headers={"Accept": accept}, follow_redirects=False)
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized", accept
    r = anonymous.get(
        f"/runs/{team.run}/report",
        headers={"Accept": BROWSER, "Authorization": "Bearer not-a-key"},
        follow_redirects=False,
    )
    assert r.status_code == 401
    r = anonymous.post(f"/runs/{team.run}/scoring-jobs", json={}, headers={"Accept": BROWSER})
    assert r.status_code == 401


def test_the_favicon_is_served_and_named_by_every_page(client: TestClient) -> None:
    team = make_team(client)
    for path in ("/favicon.ico", "/static/favicon.svg"):
        r = TestClient(client.app).get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
        assert r.text.startswith("<svg")
    icon = '<link rel="icon" href="/static/favicon.svg"'
    assert icon in client.get("/").text
    assert icon in TestClient(client.app).get("/login").text
    assert icon.replace('"', "'") in client.get(f"/runs/{team.run}/report.html").text


def test_question_labels_hide_ids_derived_from_the_text() -> None:
    assert question_label("L01", "Peut-on copier ?") == "L01"
    assert question_label("q-0123456789ab", "Peut-on copier le texte ?") == "Peut-on copier le texte ?"
    long = "Une question " + "très " * 30 + "longue ?"
    label = question_label("q-0123456789ab", long)
    assert len(label) == 60 and label.endswith("…")
    assert question_label("q-0123456789ab") == "q-0123456789ab"  # no text at hand: the id is all there is
    assert question_label("q-notahexid12", "texte") == "q-notahexid12"


def test_an_unanswerable_question_keeps_its_reference_answer_as_the_expected_refusal(
    client: TestClient,
) -> None:
    ds = client.post("/datasets", json={"name": "lic", "language": "en"}).json()["id"]
    docs = [{"external_id": "d", "text": "The licence is royalty-free."}]
    assert client.post(f"/datasets/{ds}/documents", json=docs).status_code == 200
    refusal = {
        "external_id": "L09",
        "question": "Who wrote the licence?",
        "reference_answer": "The documents do not say.",
        "answerable": False,
    }
    r = client.post(f"/datasets/{ds}/questions", json=[refusal])
    assert r.status_code == 200, r.text
    (got,) = client.get(f"/datasets/{ds}/questions").json()
    assert (got["answerable"], got["reference_answer"]) == (False, "The documents do not say.")
    # answer metrics compare an output with the expected refusal, not "no reference answer"
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    out = [{"question_id": "L09", "answer": "The documents do not say.", "retrieved": []}]
    assert client.post(f"/runs/{run}/outputs", json=out).status_code == 200
    job = client.post(f"/runs/{run}/scoring-jobs", json={"metrics": ["classic.rouge_l"]}).json()
    drain(client)
    assert client.get(f"/jobs/{job['id']}").json()["failed"] == 0
    (row,) = client.get(f"/runs/{run}/scores").json()["rows"]
    assert row["classic.rouge_l"] == 1.0
    # still no passage on an unanswerable question, the field named
    bad = {**refusal, "external_id": "L10", "passages": [{"document_id": "d", "start": 0, "end": 3}]}
    r = client.post(f"/datasets/{ds}/questions", json=[bad])
    assert r.status_code == 422 and "carries no passages" in r.json()["items"][0]["reason"]


QUESTIONS_CSV = (
    "external_id,question,reference_answer,answerable,types\n"
    'L01,May I copy it?,Yes: it is royalty-free.,true,"[""factual""]"\n'
    "L09,Who wrote the licence?,The documents do not say.,false,\n"
    "L10,Is it free?,,TRUE,\n"
)


def test_the_study_import_hint_for_a_questions_file_leads_to_a_route_that_reads_it(
    client: TestClient,
) -> None:
    ds = client.post("/datasets", json={"name": "lic", "language": "en"}).json()["id"]
    docs = [{"external_id": "d", "text": "The licence is royalty-free."}]
    assert client.post(f"/datasets/{ds}/documents", json=docs).status_code == 200
    files = {"file": ("questions.csv", QUESTIONS_CSV.encode(), "text/csv")}
    hint = client.post("/studies/import", data={"dataset_id": str(ds)}, files=files)
    assert hint.status_code == 422, hint.text
    reason = hint.json()["items"][0]["reason"]
    assert "this looks like a questions file" in reason and "POST /datasets/{id}/questions" in reason
    # the route named takes the same file as it is
    r = client.post(f"/datasets/{ds}/questions", files=files)
    assert r.status_code == 200, r.text
    got = {q["external_id"]: q for q in client.get(f"/datasets/{ds}/questions").json()}
    assert got["L01"]["types"] == ["factual"] and got["L01"]["answerable"] is True
    assert (got["L09"]["answerable"], got["L09"]["reference_answer"]) == (False, "The documents do not say.")
    assert (got["L10"]["answerable"], got["L10"]["reference_answer"]) == (True, None)


def test_pages_show_the_question_text_for_an_id_derived_from_it(client: TestClient) -> None:
    from tests.conftest import issue_key

    derived, own = "q-0123456789ab", "L02"
    ds = client.post("/datasets", json={"name": "lic", "language": "en"}).json()["id"]
    assert client.post(f"/datasets/{ds}/documents", json=[{"external_id": "d", "text": "Free."}]).is_success
    qs = [
        {"external_id": derived, "question": "May I copy the licence text?", "reference_answer": "Yes."},
        {"external_id": own, "question": "Is it free?", "reference_answer": "Yes."},
    ]
    assert client.post(f"/datasets/{ds}/questions", json=qs).status_code == 200
    run = client.post(f"/datasets/{ds}/runs", json={"name": "r"}).json()["id"]
    outs = [{"question_id": q["external_id"], "answer": "Yes.", "retrieved": []} for q in qs]
    assert client.post(f"/runs/{run}/outputs", json=outs).status_code == 200
    keys = {name: issue_key(client.app, name, "rater") for name in ("alice", "bob")}  # type: ignore[arg-type]
    task = client.post("/tasks", json={"name": "t", "run_id": run, "raters": ["alice", "bob"]}).json()["id"]
    alice = TestClient(client.app, headers={"Authorization": f"Bearer {keys['alice']}"})
    for entry in alice.get(f"/tasks/{task}/queue").json()["entries"]:
        r = alice.put(f"/tasks/{task}/queue/{entry['position']}", json={"action": "flag", "reason": "cut"})
        assert r.status_code == 200, r.text
    page = client.get(f"/tasks/{task}/dashboard.html").text
    flagged = page.split("Flagged as unratable", 1)[1].split("</section>", 1)[0]
    assert f'<b title="{derived}">May I copy the licence text?</b>' in flagged
    assert f'<b title="{own}">{own}</b>' in flagged


def test_the_study_import_keeps_an_unanswerable_questions_reference_as_the_expected_refusal(
    client: TestClient,
) -> None:
    study = (
        "question_id,question,reference_answer,answerable,answer,gold_passages\n"
        'L01,May I copy it?,Yes: it is royalty-free.,true,Yes.,"[""The licence is royalty-free.""]"\n'
        "L09,Who wrote the licence?,The documents do not say.,false,The documents do not say.,\n"
    )
    corpus = b'{"external_id": "d", "text": "The licence is royalty-free."}\n'
    files = [("file", ("licences.csv", study.encode())), ("corpus", ("corpus.jsonl", corpus))]
    r = client.post("/studies/import", files=files, data={"dataset": "lic", "format": "mapped"})
    assert r.status_code == 201, r.text
    got = {q["external_id"]: q for q in client.get(f"/datasets/{r.json()['dataset']['id']}/questions").json()}
    assert (got["L09"]["answerable"], got["L09"]["reference_answer"]) == (False, "The documents do not say.")
    # gold passages on an unanswerable question are still refused, the field named
    bad = study.replace("false,The documents do not say.,", 'false,No.,"[""The licence is royalty-free.""]"')
    r = client.post(
        "/studies/import",
        files=[("file", ("licences.csv", bad.encode())), ("corpus", ("corpus.jsonl", corpus))],
        data={"dataset": "lic2", "format": "mapped"},
    )
    assert r.status_code == 422, r.text
    [item] = r.json()["items"]
    assert item["field"] == "answerable" and "carries no gold passages" in item["reason"], item
