"""Classical inference: hypothesis tests (pingouin), resampling, metrics, probabilities.

Imports only gbstats' top-level cross-cutting modules and gbstats.data.
"""
