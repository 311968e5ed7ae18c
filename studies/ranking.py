"""Many models against people in one study run (issue 42).

A study that answers "which of these models is most like people?" declares a
`RankingSpec`: its primary model-vs-people statistic in words, how to get one
score per item from a model, and people's responses per item. Given two or more
models (`--model A --model B`, or `--models FILE`), the runner gives the first
model the study's full analysis, as with one model, and then:

1. scores every model on the study's items (each once, through the content-keyed
   score cache: adding a model scores only that model);
2. draws one seeded two-way bootstrap (participants x items, or x the clusters
   the items come in) and applies it to every model
   (`gbstats.alignment.ranking.rank_models`), so that the models' estimates keep
   the covariance they have from sharing items and people;
3. reports the simultaneous intervals, the pairwise differences (max-t, Holm,
   TOST within the study's delta), the confidence sets for ranks (Mogstad,
   Romano, Shaikh & Wilhelm 2023) and the people's ceiling
   (`gbstats.report.ranking_report.write_ranking`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from gbstats.errors import GbstatsError


@dataclass(frozen=True)
class RankingSpec:
    """What a study declares so that many models can be ranked against its people.

    item_scores(run, state, lm) -> one row per item: the `item_keys` columns, `score`
        (the model's quantity compared with people), and the `cluster` column if any.
    people(run, state) -> one row per response: `participant`, the `item_keys`, `rating`.
    statistic: the statistic in words, for the table note and the figure's axis.
    items: which items, in words ("Exp 3's 189 name items").
    delta: the equivalence bound of the TOST between two models, on the statistic's scale.
    """
    statistic: str
    items: str
    item_scores: Callable[[Any, Any, Any], pd.DataFrame]
    people: Callable[[Any, Any], pd.DataFrame]
    item_keys: tuple[str, ...]
    rating: str
    participant: str
    cluster: str | None = None
    delta: float = 0.10
    n_boot: int = 1000
    # whether the people's side is simulated (labelled SIMULATED in the caption and title)
    simulated: Callable[[Any, Any], bool] = lambda run, state: bool(run.simulated)


def model_labels(names: list[str]) -> dict[str, str]:
    """{name as given: the name the model goes by in tables and figures}: a registered
    name or hub id as given; a local folder by its own name, or by as many of its last
    path parts as it takes to tell it from the others (two copies of one model in two
    folders stay two models)."""
    from pathlib import Path

    def parts(name: str) -> tuple[str, ...]:
        path = Path(name)
        return path.parts if path.exists() else (name,)

    labels: dict[str, str] = {}
    for depth in range(1, 1 + max(len(parts(n)) for n in names)):
        labels = {n: "/".join(parts(n)[-depth:]) for n in names}
        if len(set(labels.values())) == len(names):
            return labels
    return {n: n for n in names}


def safetensors_parameters(folder: Path) -> int | None:
    """The number of parameters in a folder's safetensors files, from their headers (the
    8-byte length, then JSON with each tensor's shape): no weights are read."""
    import json
    import struct

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for file in files:
        with open(file, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        for key, tensor in header.items():
            if key != "__metadata__":
                count = 1
                for size in tensor["shape"]:
                    count *= int(size)
                total += count
    return total


def parameter_count(lm) -> int | None:
    """The model's parameters (tied embeddings once): from the loaded weights, else from a
    local folder's safetensors headers, else from the weights of an embedded GGUF model
    (small; loaded from its converted copy); None where only loading a hub model's
    weights would tell."""
    if not lm.weights_loaded and lm.content_path is not None:
        path = Path(lm.content_path)
        if path.is_dir():
            counted = safetensors_parameters(path)
            if counted is not None:
                return counted
        elif path.suffix != ".gguf":
            return None
    elif not lm.weights_loaded:
        return None
    return int(sum(p.numel() for p in lm.model.parameters()))


def ranking_table(run, state, spec: RankingSpec, names: list[str]) -> pd.DataFrame:
    """One row per item, one score column per model (named by `model_labels`)."""
    labels = model_labels(names)
    parameters: dict[str, int | None] = {}
    table = None
    for i, name in enumerate(names, start=1):
        run.say(f"      ranking: scoring model {i} of {len(names)}: {name}")
        lm = run.model(name)
        scores = spec.item_scores(run, state, lm)
        parameters[labels[name]] = parameter_count(lm)
        missing = [c for c in (*spec.item_keys, "score") if c not in scores.columns]
        if missing:
            raise GbstatsError(f"the ranking's item scores lack column(s) "
                               f"{', '.join(missing)} (study {run.study.name})")
        if scores.duplicated(list(spec.item_keys)).any():
            raise GbstatsError(f"the ranking's item scores of {name} name an item twice "
                               f"(study {run.study.name})")
        keep = [*spec.item_keys, *([spec.cluster] if spec.cluster and table is None else [])]
        part = scores[keep + ["score"]].rename(columns={"score": labels[name]})
        if table is None:
            table = part
        else:
            before = len(table)
            table = table.merge(part, on=list(spec.item_keys), how="inner", validate="1:1")
            if len(table) != before:
                raise GbstatsError(f"{name} was scored on {len(part)} items and the models "
                                   f"before it on {before}; the ranking needs every model "
                                   f"scored on the same items")
    table.attrs["parameters"] = parameters
    return table


def rank_many(run, state, spec: RankingSpec, names: list[str]):
    """The joint ranking of `names` (ModelRanking), from one bootstrap shared by all."""
    from gbstats.alignment.ranking import rank_models

    items = ranking_table(run, state, spec, names)
    people = spec.people(run, state)
    run.say(f"      ranking {len(names)} models: one bootstrap of {spec.n_boot:,} replicates "
            f"shared by all")
    labels = model_labels(names)
    result = rank_models(items, people, models=[labels[n] for n in names],
                         rating=spec.rating, participant=spec.participant,
                         item_keys=spec.item_keys, cluster=spec.cluster, n_boot=spec.n_boot,
                         seed=run.seed, delta=spec.delta)
    result.settings["items"] = spec.items
    result.settings["models_as_given"] = {labels[n]: n for n in names}
    result.settings["parameters"] = items.attrs.get("parameters", {})
    result.settings["simulated"] = bool(spec.simulated(run, state))
    return result
