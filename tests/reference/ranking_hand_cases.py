"""Reference rank sets for tests/stats/test_ranking.py, worked without gbstats.

Run: python tests/reference/ranking_hand_cases.py  (writes ranking_hand_cases.json)

Each case is small enough to follow by hand: for every hypothesis family of
Mogstad, Romano, Shaikh & Wilhelm (2023) it lists the hypotheses, and each stepdown
step's critical value is found by numerical integration of the multivariate normal
(scipy's Genz algorithm, with brentq on the probability), not by Monte Carlo, so it is
an independent check of gbstats.alignment.ranking's simulated critical values.

The script also checks that every decision has a margin: no statistic lies within
MARGIN of the critical value it was compared with, so the module's Monte Carlo error
(about 0.01) cannot flip it. A case without that margin is an error here, not a test.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
from scipy import optimize, stats

MARGIN = 0.05
ALPHA = 0.05

CASES = {
    # Three independent models, equal SEs (sd of a difference sqrt(2)). Over all pairs at
    # once, step 1's c = 2.344 rejects H_AC (T = 5.86) and H_BC (T = 3.54) but not H_AB
    # (T = 3.2/sqrt(2) = 2.263); step 2's c = 2.196, over the hypotheses left, rejects
    # H_AB too: the stepdown orders all three, where one-step max-t intervals would not.
    "three_stepdown": {"estimates": {"A": 3.2, "B": 0.0, "C": -5.0},
                       "covariance": np.eye(3).tolist()},
    # The same models closer together: A above C is shown (T_AC = 2.47 > 2.212), nothing
    # else, marginally and simultaneously.
    "three_independent": {"estimates": {"A": 3.5, "B": 1.5, "C": 0.0},
                          "covariance": np.eye(3).tolist()},
    # Two models (sd of the difference 1): the family {H_AB, H_BA}; c = 1.960, then 1.645.
    "two_separated": {"estimates": {"A": 2.3, "B": 0.0}, "covariance": (0.5 * np.eye(2)).tolist()},
    "two_tied": {"estimates": {"A": 1.8, "B": 0.0}, "covariance": (0.5 * np.eye(2)).tolist()},
    # Strongly correlated models (as models scored on the same items are): the SE of a
    # difference is far below either model's SE, so close estimates still separate.
    "four_correlated": {"estimates": {"A": 0.60, "B": 0.55, "C": 0.40, "D": 0.39},
                        "covariance": (0.01 * (0.9 * np.ones((4, 4)) + 0.1 * np.eye(4))
                                       ).tolist()},
}


def difference_cov(cov: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Covariance of the standardised differences Z_(j,k) = (e_j - e_k) / sd_jk."""
    def vec(j, k):
        v = np.zeros(len(cov))
        v[j], v[k] = 1.0, -1.0
        return v / np.sqrt(v @ cov @ v)
    vs = np.array([vec(j, k) for j, k in pairs])
    return vs @ cov @ vs.T


def critical_value(cov: np.ndarray, active: set[tuple[int, int]]) -> float:
    """The 1 - ALPHA quantile of max over `active` ordered pairs of Z_(j,k), by
    integration: a pair with both directions active bounds |Z| <= c, one direction Z <= c
    (or -Z <= c, i.e. Z >= -c)."""
    pairs = sorted({(min(j, k), max(j, k)) for j, k in active})
    sigma = difference_cov(cov, pairs)
    both = [(j, k) in active and (k, j) in active for j, k in pairs]
    forward = [(j, k) in active for j, k in pairs]

    def prob(c):
        lower = np.array([-c if b else (-np.inf if f else -c) for b, f in zip(both, forward)])
        upper = np.array([c if (b or f) else np.inf for b, f in zip(both, forward)])
        if len(pairs) == 1:
            return stats.norm.cdf(upper[0]) - stats.norm.cdf(lower[0])
        return stats.multivariate_normal(mean=np.zeros(len(pairs)), cov=sigma,
                                         allow_singular=True).cdf(upper, lower_limit=lower)
    return optimize.brentq(lambda c: prob(c) - (1 - ALPHA), 0.5, 6.0, xtol=1e-6)


def stepdown(est, cov, family):
    t = {(j, k): (est[j] - est[k]) / np.sqrt(cov[j, j] + cov[k, k] - 2 * cov[j, k])
         for j, k in family}
    active, rejected, steps = set(family), set(), []
    while active:
        c = critical_value(cov, active)
        new = {h for h in active if t[h] > c}
        gaps = [abs(t[h] - c) for h in active]
        if min(gaps) < MARGIN:
            raise SystemExit(f"a statistic lies within {MARGIN} of c = {c:.4f}: choose "
                             f"estimates with a margin")
        steps.append(round(c, 4))
        if not new:
            break
        rejected |= new
        active -= new
    return rejected, steps


def sets(est, cov, rejected):
    p = len(est)
    above = [sum((k, j) in rejected for k in range(p) if k != j) for j in range(p)]
    below = [sum((j, k) in rejected for k in range(p) if k != j) for j in range(p)]
    return [[1 + above[j], p - below[j]] for j in range(p)], above


def work(case: dict) -> dict:
    names = list(case["estimates"])
    est = np.array([case["estimates"][n] for n in names])
    cov = np.array(case["covariance"])
    p = len(names)
    every = [(j, k) for j, k in itertools.permutations(range(p), 2)]
    simultaneous, steps_sim = stepdown(est, cov, every)
    sim_sets, above = sets(est, cov, simultaneous)
    marginal_sets, steps_marg = [], {}
    for j in range(p):
        family = [(a, b) for a, b in every if j in (a, b)]
        rejected, steps = stepdown(est, cov, family)
        marginal_sets.append(sets(est, cov, rejected)[0][j])
        steps_marg[names[j]] = steps
    return {"estimates": case["estimates"], "covariance": case["covariance"],
            "marginal": dict(zip(names, marginal_sets)),
            "simultaneous": dict(zip(names, sim_sets)),
            "best": [names[j] for j in range(p) if above[j] == 0],
            "critical_values": {"marginal": steps_marg, "simultaneous": steps_sim}}


if __name__ == "__main__":
    out = {name: work(case) for name, case in CASES.items()}
    target = Path(__file__).with_name("ranking_hand_cases.json")
    target.write_text(json.dumps({"source": "tests/reference/ranking_hand_cases.py",
                                  "alpha": ALPHA, "cases": out}, indent=1) + "\n")
    print(json.dumps(out, indent=1))
