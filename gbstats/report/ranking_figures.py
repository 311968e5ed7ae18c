"""The two figures of a model ranking (`gbstats.alignment.ranking.rank_models`), drawn the
way a paper shows them:

- `ranking_forest`: one row per model, sorted by estimate, with its simultaneous 95%
  interval, the people's ceiling as a shaded band, and the model's marginal rank set
  printed beside it;
- `difference_heatmap`: every pair's difference (row model minus column model), with the
  cells whose Holm-adjusted p is below .05 outlined and marked.

Both return a Figure on the Agg canvas (`gbstats.report.figures.new_figure`), sized for a
one-column layout (3.4 in wide) or, with `width`, any other.
"""
from __future__ import annotations

import textwrap

import numpy as np

from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

ONE_COLUMN_IN = 3.4


def ranking_forest(result, *, statistic: str = "correlation with people's item means",
                   width: float = ONE_COLUMN_IN, simulated: bool = False):
    """Forest plot of `result.ranking` (a ModelRanking)."""
    table = result.ranking.sort_values("estimate")
    n = len(table)
    fig, ax = new_figure(width=width, height=1.9 + 0.3 * n)
    with figure_style():
        ceiling = result.ceiling
        ax.axvspan(ceiling["ci_low"], ceiling["ci_high"], color="0.85", zorder=0,
                   label="people's ceiling (95% CI)")
        ax.axvline(ceiling["estimate"], color="0.5", lw=1, zorder=1)
        y = np.arange(n)
        colours = [OKABE_ITO[0] if best else OKABE_ITO[7] for best in table["in_best_set"]]
        ax.hlines(y, table["ci_low"], table["ci_high"], colors=colours, lw=1.5, zorder=2)
        ax.scatter(table["estimate"], y, c=colours, s=18, zorder=3)
        ax.set_yticks(y, [str(m) for m in table.index])
        ax.grid(axis="y", visible=False)
        ax.grid(axis="x", alpha=0.3)
        for k, (_, row) in enumerate(table.iterrows()):
            lo, hi = int(row["rank_lo_marginal"]), int(row["rank_hi_marginal"])
            ax.annotate(f"rank {lo}" if lo == hi else f"ranks {lo}–{hi}", (1.0, k),
                        xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=8)
        # the statistic in words is long: wrapped to the figure's width, never cut off
        ax.set_xlabel(textwrap.fill(statistic, width=max(30, int(width * 11))), fontsize=8)
        ax.set_ylabel("model")
        handles = [ax.scatter([], [], c=OKABE_ITO[0], s=18, label="may be the best"),
                   ax.scatter([], [], c=OKABE_ITO[7], s=18, label="shown not the best")]
        low = min(float(table["ci_low"].min()), ceiling["ci_low"])
        high = max(float(table["ci_high"].max()), ceiling["ci_high"])
        ax.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.set_ylim(-0.6, n - 0.4)
        fig.legend(handles=[*handles, *ax.get_legend_handles_labels()[0][:1]],
                   loc="outside lower center", ncol=2, fontsize=7)
        title = "Models ranked against people"
        ax.set_title(("SIMULATED: " if simulated else "") + title, fontsize=10)
    return fig


def difference_heatmap(result, *, width: float = ONE_COLUMN_IN, simulated: bool = False):
    """Heat map of the pairwise differences in `result.differences`."""
    models = list(result.ranking.sort_values("estimate", ascending=False).index)
    n = len(models)
    grid = np.full((n, n), np.nan)
    significant = np.zeros((n, n), dtype=bool)
    at = {m: k for k, m in enumerate(models)}
    for row in result.differences.itertuples():
        i, j = at[row.model_a], at[row.model_b]
        grid[i, j], grid[j, i] = row.difference, -row.difference
        significant[i, j] = significant[j, i] = bool(row.differs)
    fig, ax = new_figure(width=width, height=width * 0.85 + 0.3)
    with figure_style():
        limit = float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0
        limit = limit or 1.0
        # the colour scale reaches past the largest difference, so that no cell is so dark
        # that its number cannot be read
        image = ax.imshow(grid, cmap="PuOr", vmin=-1.6 * limit, vmax=1.6 * limit)
        ax.set_xticks(range(n), models, rotation=45, ha="right")
        ax.set_yticks(range(n), models)
        ax.grid(False)
        for i in range(n):
            for j in range(n):
                if i != j and np.isfinite(grid[i, j]):
                    value = 0.0 if abs(grid[i, j]) < 0.005 else grid[i, j]
                    ax.text(j, i, f"{value:+.2f}".replace("+0.00", "0.00")
                            + ("*" if significant[i, j] else ""),
                            ha="center", va="center", fontsize=7)
        bar = fig.colorbar(image, ax=ax, shrink=0.8)
        bar.set_label("row minus column")
        ax.set_xlabel("model (* differs, Holm p < .05)")
        ax.set_ylabel("model")
        ax.set_title(("SIMULATED: " if simulated else "") + "Pairwise differences",
                     fontsize=10, loc="left")
    return fig
