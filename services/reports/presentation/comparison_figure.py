"""Figures of the comparisons between runs, in the style of the report's figure (presentation.figure):
matplotlib with the Agg backend imported on first use, SVG text kept as text, SVG scaled to its container.

Pairwise: one row per metric, two panels — the Pearson r of the metric's difference with the human
preference (point and BCa interval by question; the best metric starred) and the sign agreement (point and
Wilson interval; the chance line at 0.5)."""

from __future__ import annotations

import io
import textwrap

from services.reports.comparison_schemas import PairwiseRead
from services.reports.presentation.figure import (
    FONT,
    LIB_COLOURS,
    ROW_IN,
    WIDTH_IN,
    Format,
    _fluid_svg,
    _metadata,
)


def pairwise_figure(read: PairwiseRead, fmt: Format = "svg") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    rows = [m for m in read.metrics if m.pearson.estimate is not None]
    n = max(len(rows), 1)
    head_lines = [
        f"Pairwise preference: run #{read.run_b.id} ({read.run_b.name}) vs run #{read.run_a.id} "
        f"({read.run_a.name}), {read.n_pairs} pairs",
        *textwrap.wrap(
            (
                "Preference from side-by-side ratings"
                if read.source == "preference_ratings"
                else "Preference derived from absolute ratings (reference score of B minus A)"
            )
            + f"; {read.n_human_ties} human ties left out of sign agreement. "
            + " ".join(read.notes),
            130,
        )[:3],
        *[f"⚠ {w.scope}: {w.message}" for w in read.warnings][:4],
    ]
    head_in = 0.3 + 0.18 * len(head_lines)
    fig_h = head_in + n * ROW_IN + 0.8
    fig = plt.figure(figsize=(WIDTH_IN, fig_h))
    y = 1 - 0.1 / fig_h
    for i, line in enumerate(head_lines):
        fig.text(
            0.01,
            y,
            line,
            fontsize=FONT + (1.5 if i == 0 else -0.5),
            weight="bold" if i == 0 else "normal",
            color="#b3261e" if line.startswith("⚠") else ("#222" if i == 0 else "#555"),
            va="top",
        )
        y -= 0.18 / fig_h
    bottom = 0.55 / fig_h
    height = n * ROW_IN / fig_h
    ax_r = fig.add_axes((0.30, bottom, 0.36, height))
    ax_s = fig.add_axes((0.70, bottom, 0.27, height))
    labels = []
    for k, m in enumerate(reversed(rows)):
        colour = LIB_COLOURS.get(m.library, "#333333")
        c = m.pearson
        if c.estimate is None:
            continue
        if c.ci_low is not None and c.ci_high is not None:
            ax_r.plot([c.ci_low, c.ci_high], [k, k], color=colour, linewidth=2)
        best = m.metric == read.best
        ax_r.plot(
            [c.estimate],
            [k],
            "*" if best else "o",
            color=colour,
            markersize=11 if best else 5,
            markeredgecolor="#000" if best else colour,
        )
        s = m.sign_agreement
        if s.estimate is not None:
            if s.ci_low is not None and s.ci_high is not None:
                ax_s.plot([s.ci_low, s.ci_high], [k, k], color=colour, linewidth=2)
            ax_s.plot([s.estimate], [k], "o", color=colour, markersize=5)
        labels.append(m.metric + ("" if m.higher_is_better else " (↓ better)"))
    for ax in (ax_r, ax_s):
        ax.set_ylim(-0.6, n - 0.4)
        ax.grid(axis="x", color="#e3e3e3", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.tick_params(axis="x", labelsize=FONT - 0.5)
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    ax_r.set_yticks(range(len(labels)), labels, fontsize=FONT)
    ax_s.set_yticks([])
    ax_r.set_xlim(-1.02, 1.02)
    ax_r.axvline(0, color="#444", linewidth=0.9)
    ax_s.set_xlim(-0.02, 1.02)
    ax_s.axvline(0.5, color="#444", linewidth=0.9, linestyle=":")
    ax_r.set_title("Pearson r of Δmetric with the preference, 95 % BCa", fontsize=FONT)
    ax_s.set_title("sign agreement, 95 % Wilson", fontsize=FONT)
    if not rows:
        ax_r.text(0, 0, "no metric with a defined correlation", ha="center", va="center", fontsize=FONT)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150 if fmt == "png" else None, metadata=_metadata(fmt))
    plt.close(fig)
    data = buf.getvalue()
    return _fluid_svg(data) if fmt == "svg" else data
