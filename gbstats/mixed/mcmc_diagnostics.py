"""Rank-normalized split R-hat, bulk ESS and tail ESS for many parameters at once.

The definitions are those of Vehtari, Gelman, Simpson, Carpenter & Buerkner
(2021), "Rank-normalization, folding, and localization: an improved R-hat for
assessing convergence of MCMC", Bayesian Analysis 16(2), as ArviZ and Stan
compute them:

- split each chain in two halves (the middle draw of an odd-length chain is
  left out), giving 2M chains of N = floor(n / 2) draws;
- rank-normalize: pooled ranks r (ties averaged) of all S draws, then
  z = Phi^-1((r - 3/8) / (S + 1/4));
- R-hat of z (bulk) and of the folded draws |x - median(x)| rank-normalized
  (tail; the median over the split draws); R-hat = max(bulk, tail), with
  R-hat(z) = sqrt(((N - 1) / N * W + B / N) / W), W the mean within-chain
  variance, B = N * variance of the chain means;
- bulk ESS = M N / tau of z, tau = -1 + 2 sum_t rho_t over Geyer's initial
  positive sequence of autocorrelation pairs, made monotone, where
  rho_t = 1 - (W' - mean_m acov_m(t)) / var+, acov by FFT (divided by N),
  W' = mean_m acov_m(0) N / (N - 1), var+ = W' (N - 1) / N + var(chain means);
  the first pair that turns negative ends the sum, an even term still
  positive after it is added once more (Geyer's improved estimate), and tau
  is at least 1 / log10(M N);
- tail ESS = the smaller of the ESS (same estimator, on split chains, without
  rank-normalization) of the indicators I(x <= q05) and I(x <= q95), with
  q05 and q95 R's type-7 quantiles over all draws; an indicator that never
  changes counts as M N effective draws (ArviZ's convention).

ArviZ evaluates these one parameter at a time in Python (seconds for the
hundreds of group-level effects of a mixed model, tens of seconds for the
1,500 item effects of a 7,500-trial GLMM). Here every step is an array
operation over all parameters; tests/stats/test_mcmc_diagnostics.py checks
the numbers against ArviZ's.
"""
from __future__ import annotations

import numpy as np
from scipy import fft, special, stats


def split_chains(draws: np.ndarray) -> np.ndarray:
    """(chains, draws, k) -> (2 chains, draws // 2, k)."""
    half = draws.shape[1] // 2
    return np.concatenate([draws[:, :half], draws[:, draws.shape[1] - half:]], axis=0)


def rank_normalize(draws: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled ranks of each parameter (last axis)."""
    chains, n, k = draws.shape
    ranks = stats.rankdata(draws.reshape(chains * n, k), method="average", axis=0)
    size = chains * n
    return special.ndtri((ranks - 0.375) / (size + 0.25)).reshape(chains, n, k)


def _rhat_plain(z: np.ndarray) -> np.ndarray:
    n = z.shape[1]
    within = z.var(axis=1, ddof=1).mean(axis=0)
    between = n * z.mean(axis=1).var(axis=0, ddof=1)
    return np.sqrt((between / within + n - 1) / n)


def rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalized split R-hat per parameter of a (chains, draws, k) array."""
    if draws.shape[0] < 2 or draws.shape[1] < 4:
        return np.full(draws.shape[2], np.nan)  # too short to compare halves
    split = split_chains(draws)
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
    return np.maximum(_rhat_plain(rank_normalize(split)), _rhat_plain(rank_normalize(folded)))


def autocovariance(z: np.ndarray) -> np.ndarray:
    """Per chain and parameter, the autocovariance at every lag (divided by n), by FFT."""
    n = z.shape[1]
    centred = z - z.mean(axis=1, keepdims=True)
    length = fft.next_fast_len(2 * n)
    spectrum = np.fft.rfft(centred, n=length, axis=1)
    return np.fft.irfft(spectrum * np.conjugate(spectrum), n=length, axis=1)[:, :n] / n


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk effective sample size per parameter of a (chains, draws, k) array."""
    if draws.shape[1] < 4:
        return np.full(draws.shape[2], np.nan)
    return geyer_ess(rank_normalize(split_chains(draws)))


def ess_tail(draws: np.ndarray) -> np.ndarray:
    """Tail effective sample size per parameter of a (chains, draws, k) array:
    the ESS of the 5% and 95% quantiles (whichever is smaller)."""
    if draws.shape[1] < 4:
        return np.full(draws.shape[2], np.nan)
    pooled = draws.reshape(-1, draws.shape[2])
    out = []
    for prob in (0.05, 0.95):
        below = (draws <= np.quantile(pooled, prob, axis=0)).astype(float)
        split = split_chains(below)
        with np.errstate(divide="ignore", invalid="ignore"):  # constant: replaced below
            ess = geyer_ess(split)
        # an indicator that never changes (a parameter stuck on one side of its
        # quantile, or ties) has no variance: ArviZ counts every draw
        constant = np.ptp(split.reshape(-1, split.shape[2]), axis=0) < np.finfo(float).resolution
        out.append(np.where(constant, split.shape[0] * split.shape[1], ess))
    return np.minimum(*out)


def geyer_ess(z: np.ndarray) -> np.ndarray:
    """ESS per parameter of already split (chains, draws, k) draws (Geyer's
    initial monotone sequence, as in the module docstring)."""
    chains, n, k = z.shape
    acov = autocovariance(z).mean(axis=0)  # (lag, k), averaged over chains
    mean_var = acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + z.mean(axis=1).var(axis=0, ddof=1)
    rho = 1.0 - (mean_var - acov) / var_plus  # autocorrelation estimates by lag
    rho[0] = 1.0
    # Pair sums P_j = rho[2j] + rho[2j+1]. Pairs j = 1..n_pairs are examined in
    # turn while the previous one summed to > 0; J is the last pair examined
    # (0 when P_0 <= 0). Pairs 0..J-1 enter the sum, made non-increasing
    # (Geyer's initial monotone sequence: each pair at most the one before).
    n_pairs = len(range(1, n - 3, 2))
    pairs = rho[0:2 * n_pairs + 2:2] + rho[1:2 * n_pairs + 2:2]  # (n_pairs + 1, k)
    stops = pairs[1:] <= 0
    first_stop = stops.argmax(axis=0) + 1 if n_pairs else np.zeros(k, dtype=int)
    last = np.where(stops.any(axis=0), first_stop, n_pairs)
    last = np.where(pairs[0] > 0, last, 0)
    monotone = np.minimum.accumulate(pairs, axis=0)
    summed = np.where(np.arange(n_pairs + 1)[:, None] < last, monotone, 0.0).sum(axis=0)
    # the even term of the last pair examined counts once more if it is positive
    # (Geyer's improved estimate) or if that pair was kept (P_J >= 0)
    even = rho[2 * last, np.arange(k)]
    pair_last = pairs[last, np.arange(k)]
    extra = np.where((even > 0) | (pair_last >= 0), even, 0.0)
    tau = np.maximum(-1.0 + 2.0 * summed + extra, 1.0 / np.log10(chains * n))
    return chains * n / tau


def summary(posterior: dict[str, np.ndarray]) -> tuple[float, float]:
    """(max R-hat, min bulk ESS) over every scalar of {name: (chains, draws, ...) array},
    ignoring the non-finite values a constant parameter gives."""
    extremes = extremes_summary(posterior)
    return extremes["rhat_max"], extremes["ess_bulk_min"]


def extremes_summary(posterior: dict[str, np.ndarray]) -> dict[str, float]:
    """{"rhat_max", "ess_bulk_min", "ess_tail_min"} over every scalar of
    {name: (chains, draws, ...) array}, ignoring the non-finite values a
    constant parameter gives (NaN when nothing is left)."""
    blocks = [v.reshape(v.shape[0], v.shape[1], -1) for v in posterior.values() if v.size]
    if not blocks:
        return {"rhat_max": float("nan"), "ess_bulk_min": float("nan"),
                "ess_tail_min": float("nan")}
    draws = np.concatenate(blocks, axis=2).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r, e, t = rhat(draws), ess_bulk(draws), ess_tail(draws)
    # a constant parameter (R-hat/bulk ESS NaN) says nothing about mixing
    t = np.where(np.isfinite(e), t, np.nan)
    r, e, t = r[np.isfinite(r)], e[np.isfinite(e)], t[np.isfinite(t)]
    return {"rhat_max": float(r.max()) if r.size else float("nan"),
            "ess_bulk_min": float(e.min()) if e.size else float("nan"),
            "ess_tail_min": float(t.min()) if t.size else float("nan")}
