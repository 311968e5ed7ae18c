"""Write the seeded rating panel that alignment_lmm.R fits with lme4.

Run from the repo root:  /work/main/.venv/bin/python tests/reference/make_alignment_data.py
then:                    Rscript tests/reference/alignment_lmm.R

Three groups (8, 12 and 16 participants) rate all of 24 items; each group's
true item means correlate differently with the model score (rho .2 / .5 /
.8), people differ in level and in slope, and each group has its own item
deviations, so every variance component of the alignment mixed model is
clearly non-zero (gbstats.alignment.simulation documents the generator).
"""
from __future__ import annotations

from pathlib import Path

from gbstats.alignment.simulation import panel_to_long, simulate_alignment_panel

HERE = Path(__file__).resolve().parent
SEED = 20261123


def main() -> None:
    x, groups = simulate_alignment_panel(
        {"alpha": 8, "beta": 12, "gamma": 16}, {"alpha": 0.2, "beta": 0.5, "gamma": 0.8},
        n_items=24, sd_item=1.0, sd_noise=1.0, sd_person=0.6, sd_slope=0.4, shared_item=0.5,
        seed=SEED)
    scores, trials = panel_to_long(x, groups)
    scores["item"] = [f"i{k:02d}" for k in scores["item"]]
    trials["item"] = [f"i{k:02d}" for k in trials["item"]]
    panel = trials.merge(scores, on="item", validate="many_to_one")
    panel["rating"] = panel["rating"].round(6)
    panel["score"] = panel["score"].round(6)
    panel.to_csv(HERE / "alignment_panel.csv", index=False)


if __name__ == "__main__":
    main()
