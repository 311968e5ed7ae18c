"""Write the seeded data sets that make_refs.R fits with lme4.

Run from the repo root:  .venv/bin/python tests/reference/make_data.py
then:                    Rscript tests/reference/make_refs.R

Each design is a small psycholinguistic-style experiment; the true parameters
are chosen so that every variance component is clearly non-zero (no singular
fits), which keeps the lme4 optimum well defined and lets statsmodels agree.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20240611
CONDITIONS = ["anti", "neutral", "pro"]


def random_intercept(rng: np.random.Generator) -> pd.DataFrame:
    """y ~ x + cond + (1 | subject): 30 subjects x 10 trials."""
    n_subj, n_trials = 30, 10
    subject = np.repeat(np.arange(n_subj), n_trials)
    x = rng.normal(size=subject.size)
    cond = rng.choice(CONDITIONS, size=subject.size)
    effect = pd.Series({"anti": 0.0, "neutral": 0.4, "pro": 0.9})[cond].to_numpy()
    u = rng.normal(scale=0.8, size=n_subj)[subject]
    y = 2.0 + 0.5 * x + effect + u + rng.normal(scale=1.0, size=subject.size)
    return pd.DataFrame({"subject": [f"s{s:02d}" for s in subject], "x": x, "cond": cond, "y": y})


def random_slope(rng: np.random.Generator) -> pd.DataFrame:
    """y ~ x + (1 + x | subject): 30 subjects x 12 trials, correlated intercept/slope."""
    n_subj, n_trials = 30, 12
    subject = np.repeat(np.arange(n_subj), n_trials)
    x = rng.normal(size=subject.size)
    cov = np.array([[0.6**2, 0.3 * 0.6 * 0.4], [0.3 * 0.6 * 0.4, 0.4**2]])
    u = rng.multivariate_normal([0.0, 0.0], cov, size=n_subj)
    y = 1.0 + u[subject, 0] + (0.7 + u[subject, 1]) * x + rng.normal(scale=0.5, size=subject.size)
    return pd.DataFrame({"subject": [f"s{s:02d}" for s in subject], "x": x, "y": y})


def crossed(rng: np.random.Generator) -> pd.DataFrame:
    """y ~ cond + (1 | subject) + (1 | item): 24 subjects x 20 items, fully crossed."""
    n_subj, n_item = 24, 20
    subject = np.repeat(np.arange(n_subj), n_item)
    item = np.tile(np.arange(n_item), n_subj)
    cond = np.array(CONDITIONS)[(item + subject) % 3]  # Latin-square style rotation
    effect = pd.Series({"anti": 0.0, "neutral": -0.3, "pro": 0.6})[cond].to_numpy()
    y = (5.0 + effect + rng.normal(scale=0.7, size=n_subj)[subject]
         + rng.normal(scale=0.5, size=n_item)[item] + rng.normal(scale=1.0, size=subject.size))
    return pd.DataFrame({"subject": [f"s{s:02d}" for s in subject],
                         "item": [f"i{i:02d}" for i in item], "cond": cond, "y": y})


def binomial_glmm(rng: np.random.Generator) -> pd.DataFrame:
    """correct ~ cond * x + (1 | subject) + (1 | item), logit link: 30 subjects x 24 items."""
    n_subj, n_item = 30, 24
    subject = np.repeat(np.arange(n_subj), n_item)
    item = np.tile(np.arange(n_item), n_subj)
    cond = np.array(["anti", "pro"])[(item + subject) % 2]
    x = rng.normal(size=subject.size)
    eta = (0.5 + 0.8 * (cond == "pro") + 0.4 * x - 0.3 * (cond == "pro") * x
           + rng.normal(scale=0.9, size=n_subj)[subject] + rng.normal(scale=0.6, size=n_item)[item])
    correct = (rng.random(subject.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"subject": [f"s{s:02d}" for s in subject],
                         "item": [f"i{i:02d}" for i in item], "cond": cond, "x": x,
                         "correct": correct})


def factorial(rng: np.random.Generator) -> pd.DataFrame:
    """A 2 x 3 within-subject design with an interaction, as in the seeds'
    close x gendered and stereotype x alpha analyses: 24 subjects x 36 items,
    each item seen in one cell per subject (rotated). y is continuous, correct
    is 0/1. Used for contrasts, model comparison and marginal means
    (tests/reference/make_toolkit_refs.R)."""
    n_subj, n_item = 24, 36
    subject = np.repeat(np.arange(n_subj), n_item)
    item = np.tile(np.arange(n_item), n_subj)
    cell = (item + subject) % 6
    close = np.array(["distant", "near"])[cell % 2]
    stance = np.array(CONDITIONS)[cell // 2]
    effect = (0.5 * (close == "near") + pd.Series({"anti": 0.0, "neutral": 0.3, "pro": 0.8})[stance].to_numpy()
              - 0.6 * ((close == "near") & (stance == "pro")))
    u_subj = rng.normal(scale=0.6, size=n_subj)[subject]
    u_item = rng.normal(scale=0.4, size=n_item)[item]
    y = 3.0 + effect + u_subj + u_item + rng.normal(scale=1.0, size=subject.size)
    eta = -0.2 + 1.2 * effect + 1.5 * u_subj + 1.5 * u_item
    correct = (rng.random(subject.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"subject": [f"s{s:02d}" for s in subject],
                         "item": [f"i{i:02d}" for i in item], "close": close, "stance": stance,
                         "y": y, "correct": correct})


DESIGNS = {"random_intercept": random_intercept, "random_slope": random_slope,
           "crossed": crossed, "binomial_glmm": binomial_glmm, "factorial": factorial}


def main() -> None:
    rng = np.random.default_rng(SEED)
    for name, make in DESIGNS.items():
        # %.17g keeps every double exactly, so R reads the very numbers Python wrote.
        make(rng).to_csv(HERE / f"{name}.csv", index=False, float_format="%.17g")


if __name__ == "__main__":
    main()
