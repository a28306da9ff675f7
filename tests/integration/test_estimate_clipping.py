"""Intervals of a mean on the rubric's scale stay on it: clipped, and the report says so (JSON and page)."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from scipy import stats as sps

from tests.integration.test_reports import study

# Eight outputs rated near the top of the 1-5 scale, four left unrated.
R1 = [5, 5, 5, 5, 5, 5, 4, 3, None, None, None, None]
R2 = [5, 5, 5, 5, 5, 5, 4, 4, None, None, None, None]


def test_intervals_past_the_scale_are_clipped_with_a_note(client: TestClient) -> None:
    _, run = study(client, raters=(R1, R2))
    body = client.get(f"/runs/{run}/estimate").json()
    h = (np.array(R1[:8], dtype=float) + np.array(R2[:8], dtype=float)) / 2
    half = sps.t.ppf(0.975, 7) * np.std(h, ddof=1) / np.sqrt(8)
    computed_high = h.mean() + half
    assert computed_high > 5.1  # the interval as computed goes past the scale
    ro = body["rated_only"]
    assert ro["ci_high"] == 5.0 and abs(ro["ci_low"] - (h.mean() - half)) < 1e-9
    assert abs(ro["width"] - 2 * half) < 1e-9  # the width stays the computed one
    assert ro["ci_clipped"] == (
        f"interval clipped to the rubric's scale [1, 5] (computed: [{h.mean() - half:.2f}, "
        f"{computed_high:.2f}], width {2 * half:.2f})"
    )
    clipped = [w for w in body["warnings"] if w["code"] == "ci_clipped"]
    assert len(clipped) == 1 and "rated only" in clipped[0]["message"]
    for row in body["metrics"]:
        if row["ppi"] is not None:
            p = row["ppi"]
            assert 1.0 <= p["ci_low"] <= p["ci_high"] <= 5.0
            assert (p["ci_clipped"] is not None) == (p["ci_high"] == 5.0 or p["ci_low"] == 1.0)
    # the terminal says it too (ragmeta estimate)
    from app.cli import _estimate_text

    assert f"note: {ro['ci_clipped']}" in _estimate_text(body)
    page = client.get(f"/runs/{run}/report.html").text
    assert f"[{ro['ci_low']:.2f}, 5.00]*" in page
    assert "id='estimate-clipped'>* interval clipped to the rubric&#x27;s scale [1, 5]" in page
    assert f"[{h.mean() - half:.2f}, {computed_high:.2f}], width {2 * half:.2f}" in page


def test_intervals_inside_the_scale_are_left_alone(client: TestClient) -> None:
    r1 = [1, 2, 2, 3, 3, 4, 4, 5, None, None, None, None]
    r2 = [1, 1, 3, 3, 4, 4, 5, 5, None, None, None, None]
    _, run = study(client, raters=(r1, r2))
    body = client.get(f"/runs/{run}/estimate").json()
    assert body["rated_only"]["ci_clipped"] is None
    assert not [w for w in body["warnings"] if w["code"] == "ci_clipped"]
    assert "estimate-clipped" not in client.get(f"/runs/{run}/report.html").text
