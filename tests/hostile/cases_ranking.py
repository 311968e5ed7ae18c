"""Hostile cases of the many-models ranking (issue 42; issue 44 asks for 40 on the
many-models CLI and the ranking functions): every bad input to
gbstats.alignment.ranking is one gbstats error saying what was expected, and the
edge cases that are valid (ties, identical models, exact differences) give the right
answer."""
from __future__ import annotations

import numpy as np
import pandas as pd

from hostile_cases import CASES, Wrong, case, study

MODELS = ["a", "b", "c"]


def _est(values=(0.5, 0.3, 0.1), index=MODELS):
    return pd.Series(list(values), index=list(index), dtype=float)


def _cov(matrix=None, index=MODELS, columns=None):
    matrix = np.eye(len(index)) * 0.01 if matrix is None else np.asarray(matrix, dtype=float)
    return pd.DataFrame(matrix, index=list(index), columns=list(columns or index))


def _people(n_items=30, n_people=20, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n_items)
    items = pd.DataFrame({"item": np.arange(n_items), "name": np.arange(n_items) // 3,
                          "a": mu + rng.normal(size=n_items), "b": rng.normal(size=n_items)})
    trials = pd.DataFrame([(p, i, mu[i] + rng.normal()) for p in range(n_people)
                           for i in range(n_items)], columns=["participant", "item", "rating"])
    return items, trials


def _rank_sets(estimates, covariance, **kw):
    from gbstats.alignment.ranking import rank_confidence_sets

    return rank_confidence_sets(estimates, covariance, **kw)


_BAD_SETS = [
    ("estimates given as a list", lambda: _rank_sets([0.5, 0.3], _cov(index=["a", "b"])),
     ("pandas Series",)),
    ("a single model", lambda: _rank_sets(_est([0.5], ["a"]), _cov(index=["a"])),
     ("at least 2",)),
    ("a NaN estimate", lambda: _rank_sets(_est([0.5, np.nan, 0.1]), _cov()),
     ("finite numbers", "b")),
    ("an infinite estimate", lambda: _rank_sets(_est([np.inf, 0.3, 0.1]), _cov()),
     ("finite numbers", "a")),
    ("a text estimate", lambda: _rank_sets(pd.Series(["x", 0.3, 0.1], index=MODELS), _cov()),
     ("finite numbers", "a")),
    ("a covariance without one model", lambda: _rank_sets(_est(), _cov(index=["a", "b", "x"])),
     ("no row or column", "c")),
    ("a covariance with an extra model", lambda: _rank_sets(
        _est([0.5, 0.3], ["a", "b"]), _cov())),
    ("an asymmetric covariance", lambda: _rank_sets(_est(), _cov(
        [[0.01, 0.005, 0], [0, 0.01, 0], [0, 0, 0.01]])), ("symmetric",)),
    ("a covariance that is not positive semi-definite", lambda: _rank_sets(_est(), _cov(
        [[0.01, 0.02, 0], [0.02, 0.01, 0], [0, 0, 0.01]])), ("positive semi-definite",)),
    ("a covariance with a NaN", lambda: _rank_sets(_est(), _cov(
        [[0.01, 0, 0], [0, np.nan, 0], [0, 0, 0.01]])), ("finite",)),
    ("a covariance of text", lambda: _rank_sets(_est(), _cov().astype(object).map(str).replace(
        "0.01", "x")), ("numbers",)),
    ("level 95 (a percentage)", lambda: _rank_sets(_est(), _cov(), level=95),
     ("level must be a probability",)),
    ("level 0", lambda: _rank_sets(_est(), _cov(), level=0), ("level must be a probability",)),
    ("a model named twice", lambda: _rank_sets(_est(index=["a", "a", "c"]), _cov()),
     ("repeated: a",)),
]
_BAD_SETS[6] = (_BAD_SETS[6][0], _BAD_SETS[6][1], ("exactly the models",))

for _label, _call, _names in _BAD_SETS:
    case(f"rank_confidence_sets: {_label}", "ranking", names=_names)(
        lambda ws, call=_call: call())


def _best(**kw):
    from gbstats.alignment.ranking import best_set

    return best_set(_est(), _cov(), **kw)


def _pairs(**kw):
    from gbstats.alignment.ranking import pairwise_differences

    return pairwise_differences(_est(), _cov(), **kw)


for _label, _call, _names in [
        ("best_set: tau 0", lambda: _best(tau=0), ("tau must be a whole number from 1 to 3",)),
        ("best_set: tau beyond the models", lambda: _best(tau=4), ("tau must be",)),
        ("best_set: tau 1.5", lambda: _best(tau=1.5), ("tau must be",)),
        ("pairwise_differences: a negative delta", lambda: _pairs(delta=-0.1),
         ("delta must be a positive number",)),
        ("pairwise_differences: delta NaN", lambda: _pairs(delta=float("nan")),
         ("delta must be",)),
]:
    case(_label, "ranking", names=_names)(lambda ws, call=_call: call())


def _joint(draws):
    from gbstats.alignment.ranking import joint_covariance

    return joint_covariance(draws)


for _label, _call, _names in [
        ("joint_covariance: a model undefined in some replicates",
         lambda: _joint(pd.DataFrame({"a": [0.1, np.nan, 0.2, 0.3, 0.1],
                                      "b": [0.2, 0.1, 0.3, 0.2, 0.2]})), ("a (1 of 5)",)),
        ("joint_covariance: fewer replicates than twice the models",
         lambda: _joint(pd.DataFrame({"a": [0.1, 0.2, 0.3], "b": [0.2, 0.1, 0.3]})),
         ("3 bootstrap replicates cannot estimate",)),
        ("joint_covariance: one model", lambda: _joint(pd.DataFrame({"a": [0.1] * 10})),
         ("one column per model",)),
]:
    case(_label, "ranking", names=_names)(lambda ws, call=_call: call())


def _rank(**kw):
    from gbstats.alignment.ranking import rank_models

    items, trials = kw.pop("data", None) or _people()
    return rank_models(items, trials, **{"models": ["a", "b"], "n_boot": 200, **kw})


for _label, _call, _names in [
        ("rank_models: one model", lambda: _rank(models=["a"]), ("at least 2 models",)),
        ("rank_models: a model named twice", lambda: _rank(models=["a", "a"]), ("repeated: a",)),
        ("rank_models: a model with no column", lambda: _rank(models=["a", "gpt2"]),
         ("no column for model(s) gpt2",)),
        ("rank_models: 100 replicates", lambda: _rank(n_boot=100), ("n_boot must be",)),
        ("rank_models: a cluster column that is not there", lambda: _rank(cluster="story"),
         ("no column 'story'",)),
        ("rank_models: three clusters", lambda: _rank(
            data=(_people()[0].assign(name=lambda t: t["item"] % 3), _people()[1]),
            cluster="name"), ("too few to resample",)),
        ("rank_models: a model score missing for one item", lambda: _rank(
            data=(_people()[0].assign(b=lambda t: t["b"].where(t["item"] != 4)), _people()[1])),
         ("missing or non-numeric scores", "b")),
        ("rank_models: trials without a rating column", lambda: _rank(
            data=(_people()[0], _people()[1].rename(columns={"rating": "score"}))),
         ("rating",)),
        ("rank_models: a rated item with no model score", lambda: _rank(
            data=(_people()[0][_people()[0]["item"] != 7], _people()[1])), ("item",)),
]:
    case(_label, "ranking", names=_names)(lambda ws, call=_call: call())


# --- valid edge cases: the right answer --------------------------------------------------

@case("rank_confidence_sets: every difference known exactly", "ranking",
      expect="correct_result")
def _(ws):
    return _rank_sets(_est([0.9, 0.5, 0.1]), _cov(np.zeros((3, 3))))


def _check_exact(ws, sets):
    if sets[["rank_lo", "rank_hi"]].values.tolist() != [[1, 1], [2, 2], [3, 3]]:
        raise Wrong(f"exact differences did not give exact ranks: {sets}")


CASES[-1].check = _check_exact


@case("rank_confidence_sets: three models tied exactly", "ranking", expect="correct_result")
def _(ws):
    return _rank_sets(_est([0.4, 0.4, 0.4]), _cov())


def _check_tied(ws, sets):
    if sets["rank"].tolist() != [1, 1, 1] or not (sets["rank_hi"] == 3).all():
        raise Wrong(f"tied models: {sets}")


CASES[-1].check = _check_tied


@case("rank_models: the same model under two names", "ranking", expect="correct_result")
def _(ws):
    items, trials = _people()
    return _rank(data=(items.assign(a_again=items["a"]), trials), models=["a", "a_again", "b"])


def _check_copies(ws, result):
    r = result.ranking
    pair = result.differences.set_index(["model_a", "model_b"]).loc[("a", "a_again")]
    if r.loc["a", "estimate"] != r.loc["a_again", "estimate"] or pair["differs"] \
            or not pair["ci_low"] <= 0 <= pair["ci_high"]:
        raise Wrong(f"two copies were told apart: {pair.to_dict()}")


CASES[-1].check = _check_copies


@case("rank_models: item ids that are numbers in one table and text in the other", "ranking")
def _(ws):
    items, trials = _people()
    return _rank(data=(items.assign(item=items["item"].astype(str)), trials))


# a join of mismatched key types must not silently drop every rating: an error, or the
# ratings joined (either is honest); what it must not be is an all-NaN result
def _check_joined(ws, result):
    if not np.isfinite(result.ranking["estimate"]).all():
        raise Wrong(f"the estimates are not numbers: {result.ranking}")


CASES[-1].check = _check_joined
CASES[-1].expect = "clean_error"
CASES[-1].names = ("item",)


# --- the studies' --model flag -------------------------------------------------------------

for _study in ("pronoun_memory", "genda_lens", "winopron", "cognitive_bias", "example_they"):
    case(f"{_study} CLI: --model given twice", f"{_study} CLI",
         names=("--model was given twice",))(
        lambda ws, s=_study: study(s, "--model", "smollm2-135m", "--model", "gpt2", "--out",
                                   ws.fresh(f"two_models_{s}") / "r"))


# --- --model repeated and --models FILE on the studies that rank (issue 42) ---------------
# Each is refused before the study loads its data: what was expected, what was found.

def _models_file(ws, label: str, content: bytes | None) -> str:
    folder = ws.fresh(f"models_file_{label}")
    path = folder / "models.txt"
    if content is not None:
        path.write_bytes(content)
    return str(path)


for _label, _content, _names in [
        ("only comments", b"# none yet\n\n   \n", ("no model is named", "models.txt")),
        ("a missing file", None, ("models.txt", "file not found")),
        ("binary bytes", bytes(range(256)) * 4, ("models.txt", "not valid text")),
]:
    for _study in ("name_gender", "singular_they"):
        case(f"{_study} CLI: --models names {_label}", f"{_study} CLI", names=_names)(
            lambda ws, s=_study, lab=_label, c=_content: study(
                s, "--models", _models_file(ws, f"{s}_{lab}".replace(" ", "_"), c),
                "--out", ws.fresh(f"models_out_{s}_{lab}".replace(" ", "_")) / "r"))

case("role_nouns CLI: --models names a folder", "role_nouns CLI",
     names=("a folder, not a file",))(
    lambda ws: study("role_nouns", "--models", str(ws.fresh("models_folder")),
                     "--out", ws.fresh("models_folder_out") / "r"))

for _study in ("name_gender", "singular_they", "role_nouns"):
    case(f"{_study} CLI: 'none' among several models", f"{_study} CLI",
         names=("'none' was named among several models",))(
        lambda ws, s=_study: study(s, "--model", "none", "--model", "smollm2-135m",
                                   "--out", ws.fresh(f"none_among_{s}") / "r"))
    case(f"{_study} CLI: one model named twice (--model and --models)", f"{_study} CLI",
         names=("a model is named twice", "smollm2-135m"))(
        lambda ws, s=_study: study(s, "--model", "smollm2-135m", "--models",
                                   _models_file(ws, f"twice_{s}", b"smollm2-135m\n"),
                                   "--out", ws.fresh(f"twice_out_{s}") / "r"))
    case(f"{_study} CLI: --models lists a folder that does not exist", f"{_study} CLI",
         names=("no-such-model-folder",))(
        lambda ws, s=_study: study(s, "--models", _models_file(
            ws, f"missing_model_{s}", b"smollm2-135m\n/nonexistent/no-such-model-folder\n"),
            "--out", ws.fresh(f"missing_model_out_{s}") / "r"))
