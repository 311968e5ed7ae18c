"""The singular-*they* stimuli: 40 frames x 8 antecedent types + 15 inanimate controls.

The design follows Camilliere et al. (2021) as described by Watson, Beekhuizen &
Stevenson (2023). Before their sentences were found to be public, gbstats wrote
its own, reviewed and versioned, in `data/singular_they/` (`--stimuli gbstats`):

- `frames.tsv`: one row per frame (f01..f40): the target form (they / them /
  their / themselves, 10 frames each), a template with `{NP}` where the
  antecedent goes (always before the pronoun, so a causal LM can score the
  pronoun given its antecedent), and the antecedent chosen for each type.
- `inanimate_controls.tsv`: 15 whole sentences (i01..i15) with an inanimate
  antecedent.

`expand_stimuli` turns them into the 335 stimuli; `data/singular_they/stimuli.tsv`
is that expansion, committed so reviewers can read every sentence, and a test
checks that the two never drift apart.

Since issue 23 the study's default is the published set instead
(`camilliere_stimuli`): Camilliere et al.'s own 335 sentences, registered as the
dataset `camilliere2021`, with the typos listed in
`data/singular_they/camilliere_corrections.csv` corrected (or scored as
published with `--as-published`). Their stimulus ids are built from the file's
(`cond`, `itm`) keys, the keys of the authors' rating file, so ratings join
exactly. The gbstats frames stay available as `--stimuli gbstats`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from gbstats.data.validate import read_table, require_readable_file, validate_frame
from gbstats.errors import DataValidationError

STIMULI_VERSION = "1.0"
STIMULI_DIR = Path(__file__).resolve().parents[2] / "data" / "singular_they"
CORRECTIONS_FILE = STIMULI_DIR / "camilliere_corrections.csv"
# --stimuli names: the published set (default) and gbstats' own frames
CAMILLIERE = "camilliere2021"
GBSTATS_FRAMES = "gbstats"
TARGET_FORMS = ["they", "them", "their", "themselves"]

# antecedent type -> (close, gendered) as 0/1 indicators, as in the paper's
# regression; None where the factor does not apply (NaN in the table).
ANTECEDENT_TYPES = {
    "gendered_name": (None, None),
    "nongendered_name": (None, None),
    "close_gendered": (1, 1),
    "distant_gendered": (0, 1),
    "close_nongendered": (1, 0),
    "distant_nongendered": (0, 0),
    "quantified": (None, None),
    "plural": (None, None),
    "inanimate": (None, None),
}
ANTECEDENT_LABELS = {
    "gendered_name": "Gendered name", "nongendered_name": "Non-gendered name",
    "close_gendered": "Close, gendered", "distant_gendered": "Distant, gendered",
    "close_nongendered": "Close, non-gendered", "distant_nongendered": "Distant, non-gendered",
    "quantified": "Quantified NP", "plural": "Plural NP", "inanimate": "Inanimate control",
}
# The four conditions of the closeness x gender model (160 items).
BOLD_TYPES = ["close_gendered", "distant_gendered", "close_nongendered", "distant_nongendered"]
# Condition codes of the Camilliere et al. data file, as documented in Watson et
# al.'s analysis code (juliawatson/bert-social-attitudes).
CAMILLIERE_CONDITIONS = {
    "gname": "gendered_name", "ngname": "nongendered_name", "gfamily": "close_gendered",
    "gnoun": "distant_gendered", "spkknows": "close_nongendered", "ngnoun": "distant_nongendered",
    "quantifier": "quantified", "plural": "plural", "inanimate": "inanimate",
}
FRAME_COLUMNS = ["frame_id", "target_form", "template", "gendered_name", "nongendered_name",
                 "close_gendered", "distant_gendered", "close_nongendered",
                 "distant_nongendered", "distant_nongendered_plural"]


def stimulus_id(frame_or_control: str, antecedent_type: str) -> str:
    return frame_or_control if antecedent_type == "inanimate" else f"{frame_or_control}-{antecedent_type}"


def read_frames(path: Path = STIMULI_DIR / "frames.tsv") -> pd.DataFrame:
    df = read_table(path, sep="\t", dtype=str, keep_default_na=False)
    return validate_frame(df, source=str(path), required=FRAME_COLUMNS,
                          allowed={"target_form": TARGET_FORMS}, unique=["frame_id"], what="frame")


def read_controls(path: Path = STIMULI_DIR / "inanimate_controls.tsv") -> pd.DataFrame:
    df = read_table(path, sep="\t", dtype=str, keep_default_na=False)
    return validate_frame(df, source=str(path),
                          required=["control_id", "target_form", "sentence", "antecedent"],
                          allowed={"target_form": TARGET_FORMS}, unique=["control_id"],
                          what="control")


def split_at_target(sentence: str, target: str, *, source: str) -> tuple[str, str]:
    """Split a sentence into (prefix, rest) at the one whole-word occurrence of `target`.

    The prefix keeps no trailing space: causal scoring adds " " + target, which
    is how BPE tokenizers see a word inside a sentence.
    """
    hits = [m.start() for m in re.finditer(rf"\b{re.escape(target)}\b", sentence)]
    if len(hits) != 1:
        raise DataValidationError(
            "the target form must occur exactly once as a whole word", source=source,
            expected=f"one {target!r}", found=f"{len(hits)} in {sentence!r}")
    return sentence[: hits[0]].rstrip(), sentence[hits[0] + len(target):]


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def antecedents_of(frame: pd.Series) -> dict[str, str]:
    """The eight antecedents of one frame; quantified and plural reuse its distant noun."""
    noun = frame["distant_nongendered"].removeprefix("the ")
    return {
        "gendered_name": frame["gendered_name"],
        "nongendered_name": frame["nongendered_name"],
        "close_gendered": frame["close_gendered"],
        "distant_gendered": frame["distant_gendered"],
        "close_nongendered": frame["close_nongendered"],
        "distant_nongendered": frame["distant_nongendered"],
        "quantified": f"every {noun}",
        "plural": frame["distant_nongendered_plural"],
    }


def expand_stimuli(frames: pd.DataFrame, controls: pd.DataFrame) -> pd.DataFrame:
    """One row per stimulus: 8 per frame plus the inanimate controls."""
    rows = []
    for _, frame in frames.iterrows():
        for ant_type, antecedent in antecedents_of(frame).items():
            sentence = _capitalize(frame["template"].replace("{NP}", antecedent))
            prefix, _ = split_at_target(sentence, frame["target_form"],
                                        source=f"frames.tsv frame {frame['frame_id']}")
            rows.append((stimulus_id(frame["frame_id"], ant_type), frame["frame_id"], ant_type,
                         antecedent, frame["target_form"], sentence, prefix))
    for _, ctl in controls.iterrows():
        prefix, _ = split_at_target(ctl["sentence"], ctl["target_form"],
                                    source=f"inanimate_controls.tsv {ctl['control_id']}")
        rows.append((ctl["control_id"], ctl["control_id"], "inanimate", ctl["antecedent"],
                     ctl["target_form"], ctl["sentence"], prefix))
    out = pd.DataFrame(rows, columns=["item", "frame", "antecedent_type", "antecedent",
                                      "target_form", "sentence", "prefix"])
    return add_design_columns(out).assign(stimuli_version=STIMULI_VERSION)


def add_design_columns(stimuli: pd.DataFrame) -> pd.DataFrame:
    """Add the 0/1 indicators `close` and `gendered` (NaN outside the 4 bold types)."""
    out = stimuli.copy()
    for position, column in enumerate(("close", "gendered")):
        out[column] = out["antecedent_type"].map(
            lambda t: ANTECEDENT_TYPES[t][position]).astype(float)
    return out


def load_stimuli(path: Path | None = None) -> pd.DataFrame:
    """The study's stimuli: the shipped set, or a user's file with the same columns."""
    if path is None:
        return expand_stimuli(read_frames(), read_controls())
    df = read_table(path, sep="\t" if str(path).endswith(".tsv") else ",", dtype=str,
                    keep_default_na=False)
    df = validate_frame(df, source=str(path),
                        required=["item", "frame", "antecedent_type", "target_form",
                                  "sentence", "prefix"],
                        allowed={"antecedent_type": list(ANTECEDENT_TYPES)},
                        unique=["item"], what="stimulus")
    df = add_design_columns(df)
    prefixes, trimmed = [], 0
    for pos, row in enumerate(df.itertuples()):
        prefix = row.prefix.rstrip()
        trimmed += prefix != row.prefix
        check_target_after_prefix(row.sentence, prefix, row.target_form, source=str(path),
                                  row=pos + 2)
        prefixes.append(prefix)
    df["prefix"] = prefixes
    # read by the study, which notes how many prefixes were normalised
    df.attrs["prefixes_trimmed"] = trimmed
    return df


def check_target_after_prefix(sentence: str, prefix: str, target: str, *, source: str,
                              row: int) -> None:
    """The sentence must be the prefix, one space, the target form as a whole word, then the
    rest: what the model scores is " " + target after the prefix (causal LMs) or the target in
    a slot cut out of the sentence at that place (masked LMs). A sentence without its target
    form there would be cut in the wrong place (the masked frame became "[BLANK]would",
    issue 33), so it is an error naming the row.
    """
    if not sentence.startswith(prefix):
        raise DataValidationError("prefix is not the start of the sentence", source=source,
                                  row=row, column="prefix",
                                  expected=f"a prefix of {sentence!r}", found=repr(prefix))
    if re.search(rf"(?<!\w){re.escape(target)}(?!\w)", sentence) is None:
        raise DataValidationError(
            f"the sentence does not contain its target form {target!r}", source=source,
            row=row, column="sentence",
            expected=f"the word {target!r} right after the prefix {prefix!r}",
            found=repr(sentence))
    after = sentence[len(prefix):]
    if not re.match(rf" {re.escape(target)}(?!\w)", after):
        raise DataValidationError(
            f"the target form {target!r} does not follow the prefix", source=source, row=row,
            column="prefix", expected=f"the sentence to continue the prefix with one space and "
            f"{target!r}", found=f"prefix {prefix!r} followed by {after[:30]!r}")


def camilliere_item_id(cond: str, itm: int) -> str:
    """The stimulus id of a (cond, itm) key of Camilliere et al.'s files, e.g. gfamily-01."""
    return f"{cond}-{int(itm):02d}"


def camilliere_version(*, corrected: bool) -> str:
    from gbstats.data.registry import get_dataset

    commit = get_dataset(CAMILLIERE).commit[:7]
    return f"{CAMILLIERE}@{commit}" + ("+corrections" if corrected else " as published")


def camilliere_stimuli(published: pd.DataFrame, corrections: pd.DataFrame | None, *,
                       source: str = CAMILLIERE,
                       corrections_source: str = str(CORRECTIONS_FILE)) -> pd.DataFrame:
    """The study's stimulus table from the published file (gbstats.data.camilliere2021).

    `corrections` (None: score the text as published) replaces the typos first.
    Conditions map to the study's antecedent types (CAMILLIERE_CONDITIONS:
    gfamily = close gendered, gnoun = distant gendered, spkknows = close
    non-gendered, ngnoun = distant non-gendered); `frame` is the item number,
    shared by the 8 conditions of an item. The scored position is the one
    whole-word occurrence of `form`, never found through the `antecedent`
    column, which paraphrases some sentences.
    """
    from gbstats.data.camilliere2021 import apply_corrections, locate_form

    table = published if corrections is None else apply_corrections(
        published, corrections, source=corrections_source)
    rows = []
    for pos, row in enumerate(table.itertuples(index=False)):
        start = locate_form(row.sentence, row.form, source=source, row=pos + 2)
        if start == 0 or row.sentence[start - 1] != " ":
            # scoring appends " " + form to the prefix, as a tokenizer sees a word
            # inside a sentence; anything else before the form would change the text
            raise DataValidationError(
                "the they-form must follow a space", source=source, row=pos + 2,
                column="sentence", expected=f"' {row.form}' inside the sentence",
                found=repr(row.sentence))
        rows.append((camilliere_item_id(row.cond, row.itm), f"{int(row.itm):02d}",
                     CAMILLIERE_CONDITIONS[row.cond], row.antecedent, row.form, row.sentence,
                     row.sentence[:start].rstrip(), row.cond, int(row.itm)))
    out = pd.DataFrame(rows, columns=["item", "frame", "antecedent_type", "antecedent",
                                      "target_form", "sentence", "prefix", "cond", "itm"])
    return add_design_columns(out).assign(
        stimuli_version=camilliere_version(corrected=corrections is not None))


def load_camilliere(data_dir=None, *, as_published: bool = False
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(stimuli, corrections applied) from the registered dataset and the project's table."""
    from gbstats.data.camilliere2021 import read_corrections
    from gbstats.data.registry import load_dataset

    published = load_dataset(CAMILLIERE, data_dir).table
    corrections = None if as_published else read_corrections(CORRECTIONS_FILE)
    stimuli = camilliere_stimuli(published, corrections)
    applied = (corrections if corrections is not None
               else pd.DataFrame(columns=["cond", "itm", "original", "corrected", "reason"]))
    return stimuli, applied.reset_index(drop=True)


# Why the published text is the default with real ratings: Watson et al.'s copy of the
# stimuli was "adapted from the javascript code for Camilliere et al's experiment"
# (juliawatson/bert-social-attitudes, camilliere/README.md), so the typos it holds were
# most likely on the participants' screens, and their ratings are of that text.
TEXT_AS_PUBLISHED, TEXT_CORRECTED = "as published", "corrected"


def choose_text(stimuli: str | None, *, human_given: bool, as_published: bool,
                keep_corrections: bool) -> tuple[bool, str]:
    """(score the published text as published?, why), from the flags.

    Real ratings (`--human`) imply the published text: participants rated what
    the experiment showed them, typos included (see the comment above), and a
    model scored on other sentences would be compared with ratings of text it
    never read. `--keep-corrections` asks for the corrected text anyway. The
    SIMULATED panel rates stimulus ids, not text, so without `--human` the
    typos are corrected unless `--as-published` is given. The two flags
    contradict each other, and both apply only to the published stimuli.
    """
    choice = stimuli or CAMILLIERE
    from gbstats.errors import GbstatsError

    if as_published and keep_corrections:
        raise GbstatsError("--as-published and --keep-corrections contradict each other: "
                           "give one (--as-published scores the text as published, "
                           "--keep-corrections the corrected text)")
    if choice != CAMILLIERE:
        if as_published or keep_corrections:
            flag = "--as-published" if as_published else "--keep-corrections"
            raise GbstatsError(f"{flag} applies to the published stimuli "
                               f"(--stimuli {CAMILLIERE}), not to --stimuli {choice}")
        return False, ""
    if as_published:
        return True, "`--as-published` was given"
    if human_given and keep_corrections:
        return False, ("`--keep-corrections` was given: the corrected text was scored although "
                       "the ratings joined (`--human`) are most likely of the text as "
                       "published, so the sentences the model read and the sentences people "
                       "rated differ where a typo was corrected")
    if human_given:
        return True, ("real ratings were joined (`--human`), and participants most likely "
                      "rated the text as published: Watson et al.'s copy of the stimuli was "
                      "adapted from the experiment's own code (their camilliere/README.md), "
                      "typos included. `--keep-corrections` scores the corrected text instead")
    return False, ("no real ratings were joined (the SIMULATED panel rates stimulus ids, not "
                   "text); `--as-published` scores the text exactly as published, the default "
                   "with `--human`")


def select_stimuli(choice: str | None, data_dir=None, *, as_published: bool = False
                   ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """--stimuli: `camilliere2021` (default), `gbstats` (the frames), or a file.

    Returns (stimuli, corrections applied); corrections are None where the
    published set is not used.
    """
    choice = choice or CAMILLIERE
    if choice == CAMILLIERE:
        return load_camilliere(data_dir, as_published=as_published)
    if as_published:
        from gbstats.errors import GbstatsError

        raise GbstatsError(f"--as-published applies to the published stimuli "
                           f"(--stimuli {CAMILLIERE}), not to --stimuli {choice}")
    if choice == GBSTATS_FRAMES:
        return load_stimuli(), None
    if not Path(choice).exists():
        raise DataValidationError(
            "no such stimuli", source=choice, column="--stimuli",
            expected=f"{CAMILLIERE} (the published stimuli), {GBSTATS_FRAMES} (gbstats' "
                     "own frames) or an existing stimulus file",
            found="neither a name nor a file")
    return load_stimuli(require_readable_file(choice, column="--stimuli")), None
