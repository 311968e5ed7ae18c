"""How the role-noun tables read in a paper: words for columns and values, and the views that
reshape a long table for print (results.json keeps every table as computed)."""
from __future__ import annotations

import pandas as pd

METHOD_WORDS = {"corpus_prior": "Corpus prior", "model_likelihood": "Model likelihood",
                "posterior": "Posterior", "direct": "Direct"}
SPLIT_WORDS = {"mens_names": "men's", "womens_names": "women's", "all": "all"}
GROUPING_WORDS = {"attitude": "attitude", "party": "party"}
LABELS = {"method": "Method", "set_type": "Sets", "grouping": "Grouping", "group": "Group",
          "split": "Names", "n_participants": "Participants"}
VALUES = {"method": METHOD_WORDS, "split": SPLIT_WORDS, "source": {"people": "People",
                                                                     **METHOD_WORDS},
          "name_gender": {"men": "men's", "women": "women's"},
          "group": {"model": "prediction"}}


def loglik_view(loglik: pd.DataFrame) -> pd.DataFrame:
    """group_loglik for print: one row per method x set type x grouping x group, the mean
    log-likelihood for men's names, women's names and all names (with its interval)."""
    return loglik[["method", "set_type", "grouping", "group", "n_participants",
                   "loglik_mens_names", "loglik_womens_names", "loglik_all", "ci_low_all",
                   "ci_high_all"]]


LOGLIK_LABELS = {**LABELS, "loglik_mens_names": "Men's names", "loglik_womens_names":
                 "Women's names", "loglik_all": "All names", "ci_all": "95% CI (all)"}


def tests_view(tests: pd.DataFrame) -> pd.DataFrame:
    """best_group_tests for print: the two groups compared in one column."""
    view = tests.copy()
    view["comparison"] = view["group_best"].astype(str) + " vs " + view["group_next"].astype(str)
    return view[["method", "set_type", "grouping", "split", "comparison", "difference", "ci_low",
                 "ci_high", "p_value", "p_holm"]]


TESTS_LABELS = {**LABELS, "comparison": "Best vs next", "difference": "Difference",
                "p_holm": "p (Holm)"}


def proportions_view(proportions: pd.DataFrame) -> pd.DataFrame:
    """proportions for print: FEM, MASC and G-NEUT side by side, with the rows or items each
    share is over."""
    keys = ["set_type", "source", "group", "name_gender"]
    wide = proportions.pivot_table(index=keys, columns="response_gender", values="proportion",
                                   aggfunc="first", sort=False)
    counts = proportions.groupby(keys, sort=False)[["n_obs", "n_items"]].first()
    wide = wide.join(counts).reset_index()
    wide["n"] = wide["n_obs"].fillna(wide["n_items"])
    forms = [c for c in ("FEM", "MASC", "G-NEUT") if c in wide.columns]
    return wide[keys + forms + ["n"]]


PROPORTIONS_LABELS = {**LABELS, "set_type": "Sets", "source": "Source", "group": "Group",
                      "name_gender": "Names", "n": "N"}
