"""Alignment of a model with groups of people.

ratings (validated rating frames and item-mean matrices) -> groups (group
log-likelihoods, raw correlations) and reliability (noise ceilings, corrected
correlations, size-matched comparison) -> mixed_model (the alignment mixed model)
-> simulation (panels for calibration). Imports gbstats.inference and gbstats.mixed,
never gbstats.report.
"""
