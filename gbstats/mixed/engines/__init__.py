"""Fitting engines behind `gbstats.mixed.lmm`.

Each engine module exposes ``fit(parsed, prepared, family) -> FitResult`` and
translates the lme4 formula in that one place:

* `gbstats.mixed.engines.lme4`: R's lme4/lmerTest through pymer4 (the only module
  that touches pymer4 or rpy2; both are imported inside functions, so
  ``import gbstats`` works without R);
* `gbstats.mixed.engines.statsmodels`: statsmodels MixedLM.
"""
