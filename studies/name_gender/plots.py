"""The authors' own view: she-rate against the first name's gender rating, people and model."""
from __future__ import annotations

import pandas as pd


def rating_figure(tables: dict, items: pd.DataFrame | None):
    import matplotlib.pyplot as plt

    from gbstats.report.figures import figure_style

    with figure_style():
        ncols = 2 if items is not None else 1
        fig, axes = plt.subplots(1, ncols, figsize=(5 * ncols, 4), squeeze=False, sharey=True)
        ax = axes[0, 0]
        for exp, marker in ((1, "o"), (3, "s")):
            t = tables[f"exp{exp}"].dropna(subset=["GenderRating"])
            t = t[t["Condition"] != "last"] if exp == 1 else t
            per = t.groupby("Item").agg(rating=("GenderRating", "first"), she=("She", "mean"))
            ax.scatter(per["rating"], per["she"], marker=marker, alpha=0.7, label=f"Exp {exp}")
        ax.set(title="People", xlabel="first-name gender rating (1 masc. - 7 fem.)",
               ylabel="P(she)")
        ax.legend(frameon=False)
        if items is not None:
            ax = axes[0, 1]
            for exp, marker in ((1, "o"), (3, "s")):
                part = items[(items["experiment"] == exp) & items["GenderRating"].notna()]
                ax.scatter(part["GenderRating"], part["p_she"], marker=marker, alpha=0.7,
                           label=f"Exp {exp}")
            ax.set(title="Model (three-way P(she))",
                   xlabel="first-name gender rating (1 masc. - 7 fem.)")
            ax.legend(frameon=False)
        fig.tight_layout()
    return fig
