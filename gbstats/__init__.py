"""gbstats: statistics of gender bias in language, comparing language models with people.

`import gbstats` is cheap and needs neither R nor torch nor PyMC: the public
names below are imported lazily, on first use, from the module that owns them.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> owning module. Engines (lme4/rpy2, PyMC, torch) are imported
# only when a function that needs them is called.
_EXPORTS = {
    # results
    "FitResult": "gbstats.results",
    # mixed models (lme4 via pymer4, statsmodels)
    "fit_lmm": "gbstats.lmm",
    "fit_glmm": "gbstats.lmm",
    "refit_simpler": "gbstats.lmm",
    "near_zero_components": "gbstats.lmm",
    "parse_formula": "gbstats.formula",
    "fixed_effect_names": "gbstats.formula",
    "fit_notes": "gbstats.lmm",
    # the statistician's toolkit: contrasts, comparison, marginal means, random effects
    "resolve_contrasts": "gbstats.contrasts",
    "compare_models": "gbstats.compare",
    "marginal_means": "gbstats.marginal",
    "random_effects": "gbstats.ranef",
    "r2_nakagawa": "gbstats.ranef",
    # Bayesian models (bambi / PyMC)
    "fit_bayes": "gbstats.bayes",
    # hypothesis tests (pingouin)
    "welch_ttest": "gbstats.hypothesis_tests",
    "mann_whitney": "gbstats.hypothesis_tests",
    "correlation": "gbstats.hypothesis_tests",
    "correct_pvalues": "gbstats.hypothesis_tests",
    "binomial_tail_p": "gbstats.hypothesis_tests",
    # resampling and probabilities
    "cluster_bootstrap": "gbstats.resampling",
    "softmax_within": "gbstats.probabilities",
    "posterior_draws": "gbstats.posterior",
    # alignment of a model with groups of people
    "group_loglik": "gbstats.alignment",
    "group_correlations": "gbstats.alignment",
    "compare_group_loglik": "gbstats.alignment",
    "compare_dependent_correlations": "gbstats.alignment",
    "compare_group_correlations": "gbstats.alignment",
    "group_loglik_wide": "gbstats.alignment",
    "group_reliability": "gbstats.alignment_reliability",
    "compare_size_matched": "gbstats.alignment_reliability",
    "fit_alignment_lmm": "gbstats.alignment_lmm",
    "correct_within_families": "gbstats.hypothesis_tests",
    # metrics
    "delta": "gbstats.metrics",
    "log2_ratio": "gbstats.metrics",
    "fpr": "gbstats.metrics",
    "accuracy": "gbstats.metrics",
    "f1": "gbstats.metrics",
    "group_minimum_consistency": "gbstats.metrics",
    # reports
    "to_latex_table": "gbstats.report",
    "to_markdown_table": "gbstats.report",
    "write_results_json": "gbstats.report",
    "provenance": "gbstats.report",
    "StudyReport": "gbstats.report",
    # data
    "load_dataset": "gbstats.data.registry",
    "ExclusionLog": "gbstats.exclusions",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gbstats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
