"""name_gender's figures: one named quantity per axis, P(she | he or she) on both sides.

* `people_vs_model_figure`: per name item (a name as shown, in one condition), people's
  share of she among their he and she responses (Wilson 95% interval over trials)
  against the model's P(she) / (P(he) + P(she)) averaged over the item's prompts; one
  panel per experiment x condition; the diagonal is equality.
* `rating_figure`: the same share against the first name's gender rating (1 = most
  masculine, 7 = most feminine), people and the model in two colours, one panel per
  experiment x condition (Exp 1's last-name items show no first name and have no
  rating), a dashed line at the rating scale's midpoint (4) and at P = .5.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.alignment.like_for_like import wilson_interval

PANELS = [(1, "first"), (1, "full"), (1, "last"), (3, "first"), (3, "full"), (3, "last")]
SHARE_LABEL = "P(she | he or she)"
RATING_LABEL = "first name's gender rating (1 masculine - 7 feminine)"
RATING_MIDPOINT = 4.0


def _people_items(tables: dict) -> pd.DataFrame:
    """People's he/she counts per experiment x item x condition, from the trials."""
    parts = []
    for exp in (1, 3):
        t = tables[f"exp{exp}"]
        parts.append(t.groupby(["Item", "Condition"], as_index=False).agg(
            n_he_she=("He", "size"), n_she=("She", "sum"), n_he=("He", "sum"),
            GenderRating=("GenderRating", "first")).assign(experiment=exp))
    out = pd.concat(parts, ignore_index=True)
    out["n_he_she"] = out["n_he"] + out["n_she"]
    out["she_share"] = out["n_she"] / out["n_he_she"]
    return out.rename(columns={"Item": "item_key"})


def _intervals(items: pd.DataFrame) -> np.ndarray:
    low, high = wilson_interval(items["n_she"], items["n_he_she"])
    return np.clip(np.vstack([items["she_share"] - low, high - items["she_share"]]), 0, None)


def people_vs_model_figure(items: pd.DataFrame):
    from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

    fig, axes = new_figure(2, 3, sharex=True, sharey=True, width=10.5, height=7.0)
    with figure_style():
        for ax, (exp, cond) in zip(axes.ravel(), PANELS):
            part = items[(items["experiment"] == exp) & (items["Condition"] == cond)
                         & (items["n_he_she"] > 0)]
            ax.plot([0, 1], [0, 1], color="0.5", lw=1, ls="--", zorder=0)
            ax.errorbar(part["share_two_way"], part["she_share"], yerr=_intervals(part),
                        fmt="o", ms=3.5, lw=0.8, alpha=0.75, color=OKABE_ITO[exp == 3])
            ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal",
                   title=f"Exp {exp}, {cond} name ({len(part)} items)")
            ax.grid(True, alpha=0.3)
        fig.supxlabel(f"model: {SHARE_LABEL}, mean over the item's prompts")
        fig.supylabel(f"people: {SHARE_LABEL} (95% Wilson interval)")
    return fig


def rating_figure(items: pd.DataFrame | None, tables: dict | None = None):
    """People and (with `items`) the model against the rating; without `items` (no
    model scored) people's shares come from `tables`."""
    from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

    people = items if items is not None else _people_items(tables)
    fig, axes = new_figure(2, 3, sharex=True, sharey=True, width=10.5, height=6.5)
    with figure_style():
        for ax, (exp, cond) in zip(axes.ravel(), PANELS):
            part = people[(people["experiment"] == exp) & (people["Condition"] == cond)
                          & people["GenderRating"].notna() & (people["n_he_she"] > 0)]
            ax.axvline(RATING_MIDPOINT, color="0.5", lw=1, ls="--", zorder=0)
            ax.axhline(0.5, color="0.8", lw=0.8, zorder=0)
            ax.set(xlim=(0.8, 7.2), ylim=(-0.02, 1.02), title=f"Exp {exp}, {cond} name")
            if part.empty:
                ax.text(4, 0.5, "no first name shown,\nso no rating", ha="center",
                        va="center", color="0.4")
                continue
            ax.errorbar(part["GenderRating"], part["she_share"], yerr=_intervals(part),
                        fmt="o", ms=3.5, lw=0.8, alpha=0.75, color=OKABE_ITO[0], label="people")
            if items is not None:
                ax.plot(part["GenderRating"], part["share_two_way"], "s", ms=3.5, alpha=0.8,
                        color=OKABE_ITO[1], label="model")
        axes[0, 0].legend(loc="upper left")
        fig.supxlabel(RATING_LABEL)
        fig.supylabel(SHARE_LABEL + " (people: 95% Wilson interval)")
    return fig
