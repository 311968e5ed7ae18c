"""Mixed-effects models, frequentist and Bayesian.

formula (lme4 syntax) and contrasts -> engines (lme4 through pymer4, statsmodels) and
bayes (bambi/PyMC) -> one result shape (results) -> fit cache, model comparison,
marginal means, random effects and MCMC diagnostics. Imports only gbstats' top-level
cross-cutting modules (errors, config, exclusions, blas) and gbstats.data.
"""
