"""Figures: MAZE CDFs and Delta_MAZE, and systems on the human scale (paper's Figs. 3 and 5)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.report.figures import new_figure

CONDITION_COLOURS = {"pro": "#009E73", "anti": "#D55E00"}


def maze_cdf_figure(maze: pd.DataFrame, dataset: str):
    """Empirical CDFs of the response times, pro against anti, for one dataset."""
    fig, ax = new_figure()
    rows = maze[maze["dataset"] == dataset]
    for condition in ("pro", "anti"):
        times = np.sort(rows.loc[rows["condition"] == condition, "time_to_answer"].to_numpy())
        share = np.arange(1, len(times) + 1) / len(times)
        ax.step(times, share, where="post", color=CONDITION_COLOURS[condition],
                label=f"{condition} (n = {len(times)})")
    ax.set_xlabel("time to pick the pronoun (ms)")
    ax.set_ylabel("cumulative share of trials")
    ax.set_title(f"{dataset}: MAZE response times (correct trials, outliers removed)")
    ax.legend()
    return fig


def maze_delta_figure(delta: pd.DataFrame):
    """Delta_MAZE(p) = anti quantile - pro quantile, one line per dataset."""
    fig, ax = new_figure()
    for dataset, g in delta.groupby("dataset", sort=False):
        ax.plot(g["p"], g["delta"], label=dataset)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("cumulative share of trials p")
    ax.set_ylabel("anti minus pro quantile (ms)")
    ax.set_title("Delta_MAZE: positive = anti-stereotypical pronouns picked more slowly")
    ax.legend()
    return fig


def human_scale_figure(accuracy: pd.DataFrame, datasets=("wino", "BUG")):
    """Anti against pro accuracy: people at each alpha (joined line) and each system."""
    present = [d for d in datasets if d in set(accuracy["dataset"])]
    fig, axes = new_figure(1, len(present), squeeze=False)
    for ax, dataset in zip(axes[0], present):
        rows = accuracy[accuracy["dataset"] == dataset]
        wide = rows.assign(alpha=rows["alpha"].fillna(-1)).pivot_table(
            index=["source", "alpha"], columns="condition", values="accuracy").reset_index()
        humans = wide[wide["source"] == "human"].sort_values("alpha")
        ax.plot(humans["pro"], humans["anti"], marker="o", color="black", label="people")
        for h in humans.itertuples(index=False):
            ax.annotate(f"α={h.alpha:g}", (h.pro, h.anti), textcoords="offset points",
                        xytext=(4, -10), fontsize=8)
        for s in wide[wide["source"] != "human"].itertuples(index=False):
            ax.plot([s.pro], [s.anti], marker="s", linestyle="none", label=s.source)
        low = float(np.nanmin(wide[["pro", "anti"]].to_numpy())) - 0.05
        ax.plot([low, 1], [low, 1], color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel("accuracy on pro-stereotypical items")
        ax.set_ylabel("accuracy on anti-stereotypical items")
        ax.set_title(dataset)
        ax.legend(fontsize=8)
    return fig


SYSTEM_MARKERS = {"SpanBERT": "s", "s2e": "D"}


def maze_systems_figure(maze: pd.DataFrame, placement: pd.DataFrame, dataset: str):
    """Figure 5 analogue: the people's MAZE response-time quantile curves, pro and anti
    (correct trials, outliers removed), and each system at (its accuracy a_c, Q_c(a_c)),
    with the bootstrap intervals of both coordinates."""
    fig, ax = new_figure()
    rows = maze[maze["dataset"] == dataset]
    shares = np.round(np.arange(0.01, 1.0, 0.01), 2)
    for condition in ("pro", "anti"):
        times = rows.loc[rows["condition"] == condition, "time_to_answer"].to_numpy(dtype=float)
        ax.plot(shares, np.quantile(times, shares, method="inverted_cdf"),
                color=CONDITION_COLOURS[condition], label=f"people, {condition}")
    mine = placement[(placement["dataset"] == dataset) & (placement["source"] != "human")]
    mine = mine.set_index(["source", "quantity"])
    for source in mine.index.get_level_values("source").unique():
        for condition in ("pro", "anti"):
            acc = mine.loc[(source, f"accuracy_{condition}")]
            time = mine.loc[(source, f"time_{condition}")]
            ax.errorbar([acc["estimate"]], [time["estimate"]],
                        xerr=[[acc["estimate"] - acc["ci_low"]],
                              [acc["ci_high"] - acc["estimate"]]],
                        yerr=[[time["estimate"] - time["ci_low"]],
                              [time["ci_high"] - time["estimate"]]],
                        marker=SYSTEM_MARKERS.get(source, "o"), linestyle="none",
                        color=CONDITION_COLOURS[condition], markeredgecolor="black",
                        label=f"{source}, {condition}")
    ax.set_xlabel("share of people's correct trials answered (system: its accuracy)")
    ax.set_ylabel("time to pick the pronoun (ms)")
    ax.set_title(f"{dataset}: systems on the MAZE curves (Lior & Stanovsky Fig. 5)")
    ax.legend(fontsize=8)
    return fig
