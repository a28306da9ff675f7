"""The Markdown report carries the single run's estimate (PPI) as the page does: the rated-only interval
recomputed here, every metric's row as GET /estimate gives it, the clipping note, user text escaped."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from scipy import stats as sps

from services.reports.estimate_schemas import RunEstimate
from services.reports.presentation.markdown import ESTIMATE_TITLE, estimate_section
from tests.integration.test_estimate_clipping import R1, R2
from tests.integration.test_reports import study

SCRIPT = "<script>alert(1)</script> | x"


def test_the_markdown_report_has_the_estimate_section(client: TestClient) -> None:
    _, run = study(client, raters=(R1, R2))
    md = client.get(f"/runs/{run}/report", params={"format": "md"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown"), md.text
    section = md.text.split(f"## {ESTIMATE_TITLE}\n", 1)[1]
    # The rated-only interval, recomputed: a t interval of the mean of the two raters on the 8 rated outputs,
    # clipped at the top of the 1-5 scale.
    h = (np.array(R1[:8], dtype=float) + np.array(R2[:8], dtype=float)) / 2
    half = sps.t.ppf(0.975, 7) * np.std(h, ddof=1) / np.sqrt(8)
    assert h.mean() + half > 5
    assert (
        f"8 of 12 outputs rated. Rated only: **{h.mean():.2f}** [{h.mean() - half:.2f}, 5.00]\\*" in section
    )
    assert f"(width {2 * half:.2f};" in section
    assert "\\* interval clipped to the rubric's scale [1, 5]: the computed limits went past it" in section
    assert f"[{h.mean() - half:.2f}, {h.mean() + half:.2f}], width {2 * half:.2f}" in section
    body = client.get(f"/runs/{run}/estimate").json()
    for row in body["metrics"]:
        if row["ppi"] is None:
            assert f"| {row['undefined_reason']} |" in section, row
            continue
        p = row["ppi"]
        star = "\\*" if p["ci_clipped"] else ""
        name = f"**{row['metric']}**" if row["metric"] == body["narrowest"] else row["metric"]
        assert f"| {name} | {row['metric_human_r']:.2f} | {row['lam']:.2f} | {p['estimate']:.2f} " in section
        assert f"[{p['ci_low']:.2f}, {p['ci_high']:.2f}]{star} | {row['width_ratio']:.2f} |" in section


def test_a_run_without_rated_outputs_says_why_it_has_no_estimate(client: TestClient) -> None:
    # One rater only: every output has fewer raters than a rated item needs.
    _, run = study(client, raters=(R1,))
    section = client.get(f"/runs/{run}/report", params={"format": "md"}).text.split(
        f"## {ESTIMATE_TITLE}", 1
    )[1]
    why = client.get(f"/runs/{run}/estimate")
    assert why.status_code == 422, why.text
    reason = "; ".join(i["reason"] for i in why.json()["items"]) or why.json()["detail"]
    assert f"Not computed because {reason}." in section.replace("&#x27;", "'")


def test_the_estimate_section_escapes_user_text(client: TestClient) -> None:
    _, run = study(client, raters=(R1, R2))
    body = client.get(f"/runs/{run}/estimate").json()
    body["warnings"] = [{**body["warnings"][0], "scope": SCRIPT, "message": SCRIPT}]
    body["metrics"][0] = {**body["metrics"][0], "ppi": None, "undefined_reason": SCRIPT}
    md = estimate_section(RunEstimate.model_validate(body))
    assert "<script" not in md
    assert "> **Warning (&lt;script&gt;alert(1)&lt;/script&gt; | x):**" in md
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; \\| x |" in md
    assert "<script" not in estimate_section(None, SCRIPT) and "&lt;script&gt;" in estimate_section(
        None, SCRIPT
    )
