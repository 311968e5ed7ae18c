"""Reporting: tables (LaTeX booktabs, Markdown), results.json with provenance, figures.

The top of gbstats: it may import every other subpackage, and none imports it.
"""
