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
    "FitResult": "gbstats.mixed.results",
    # mixed models (lme4 via pymer4, statsmodels)
    "fit_lmm": "gbstats.mixed.lmm",
    "fit_glmm": "gbstats.mixed.lmm",
    "refit_simpler": "gbstats.mixed.lmm",
    "near_zero_components": "gbstats.mixed.lmm",
    "parse_formula": "gbstats.mixed.formula",
    "fixed_effect_names": "gbstats.mixed.formula",
    "fit_notes": "gbstats.mixed.lmm",
    # the statistician's toolkit: contrasts, comparison, marginal means, random effects
    "resolve_contrasts": "gbstats.mixed.contrasts",
    "CenteredHelmert": "gbstats.mixed.contrasts",
    "compare_models": "gbstats.mixed.compare",
    "marginal_means": "gbstats.mixed.marginal",
    "random_effects": "gbstats.mixed.ranef",
    "r2_nakagawa": "gbstats.mixed.ranef",
    # Bayesian models (bambi / PyMC)
    "fit_bayes": "gbstats.mixed.bayes",
    # hypothesis tests (pingouin)
    "welch_ttest": "gbstats.inference.hypothesis_tests",
    "mann_whitney": "gbstats.inference.hypothesis_tests",
    "correlation": "gbstats.inference.hypothesis_tests",
    "correct_pvalues": "gbstats.inference.hypothesis_tests",
    "binomial_tail_p": "gbstats.inference.hypothesis_tests",
    # resampling and probabilities
    "cluster_bootstrap": "gbstats.inference.resampling",
    "softmax_within": "gbstats.inference.probabilities",
    "posterior_draws": "gbstats.mixed.posterior",
    # alignment of a model with groups of people
    "group_loglik": "gbstats.alignment.groups",
    "group_correlations": "gbstats.alignment.groups",
    "compare_group_loglik": "gbstats.alignment.groups",
    "compare_dependent_correlations": "gbstats.alignment.groups",
    "compare_group_correlations": "gbstats.alignment.groups",
    "group_loglik_wide": "gbstats.alignment.groups",
    "group_reliability": "gbstats.alignment.reliability",
    "compare_size_matched": "gbstats.alignment.reliability",
    "compare_corrected_correlations": "gbstats.alignment.reliability",
    "group_alignment": "gbstats.alignment.reliability",
    "fit_alignment_lmm": "gbstats.alignment.mixed_model",
    "correct_within_families": "gbstats.inference.hypothesis_tests",
    # metrics
    "delta": "gbstats.inference.metrics",
    "log2_ratio": "gbstats.inference.metrics",
    "fpr": "gbstats.inference.metrics",
    "accuracy": "gbstats.inference.metrics",
    "f1": "gbstats.inference.metrics",
    "group_minimum_consistency": "gbstats.inference.metrics",
    # reports
    "to_latex_table": "gbstats.report.latex",
    "to_markdown_table": "gbstats.report.markdown",
    "model_table": "gbstats.report.model_table",
    "present_table": "gbstats.report.table_grammar",
    "write_results_json": "gbstats.report.results_json",
    "provenance": "gbstats.report.provenance",
    "StudyReport": "gbstats.report.study_report",
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
