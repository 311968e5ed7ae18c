"""Score a file of stimuli with several models: the engine behind `python -m models score`.

    stimuli = read_stimuli("stimuli.csv", measure="causal")      # validated; errors name row and column
    scores = sweep(stimuli, ["smollm2-135m", "gpt2"])            # one row per item x model (x variant)
    write_scores(scores, "scores.csv")

The measures (what is scored, from which columns):
- `causal`: log P(text) with a causal LM (natural log, summed over its tokens;
  BOS per `bos`). Columns: text.
- `continuation`: log P(continuation | prefix) with a causal LM, the
  continuation appended verbatim (so " they" carries its space).
  Columns: prefix, continuation.
- `pll_original` / `pll_word_l2r`: the pseudo-log-likelihood of the text with a
  masked LM (Salazar et al. 2020 / Kauf & Ivanova 2023). Columns: text.
- `choice`: forced choice among variants put in the frame's slot ("[BLANK]");
  `probability` sums to 1 per item and model. Columns: frame, plus either a
  variant column (one row per item x variant) or one variant list for all.

The result is long, with DESIGN.md's score columns (item, logprob,
surprisal_bits, n_tokens, scoring, model, revision, bos), ready to join with
human data on `item`. Scores go through the shared cache, so a re-run scores
nothing twice and a killed run resumes; where misses are scored is the
current engine's choice (models.engine).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gbstats.data.validate import file_row, read_table, require_columns, require_unique
from gbstats.errors import DataValidationError, OutputPathError, UnknownNameError

MEASURES = {
    "causal": "log P(text), causal LM",
    "continuation": "log P(continuation | prefix), causal LM",
    "pll_original": "pseudo-log-likelihood of the text, masked LM (Salazar et al. 2020)",
    "pll_word_l2r": "pseudo-log-likelihood, a word's pieces left to right, masked LM "
                    "(Kauf & Ivanova 2023)",
    "choice": "forced choice among variants in the frame's slot (probability sums to 1 per item)",
}
MODEL_KIND = {"causal": "causal", "continuation": "causal", "pll_original": "masked",
              "pll_word_l2r": "masked"}  # choice takes either kind
TEXT_COLUMN_GUESSES = ("text", "sentence")
STIMULUS_FORMATS = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": "\t", ".parquet": None}
SCORE_FORMATS = (".csv", ".tsv", ".parquet")


@dataclass
class Stimuli:
    """A validated stimulus table: `item` plus the columns its measure needs, renamed
    to their standard names (text / prefix, continuation / frame[, variant])."""

    table: pd.DataFrame
    measure: str
    source: str
    variants: list[str] | None = None  # choice: one list for every frame
    notes: list[str] = field(default_factory=list)


def read_stimulus_file(path: str | os.PathLike) -> pd.DataFrame:
    """CSV / TSV / Parquet, every cell read as text (nothing turned into NaN or numbers)."""
    from gbstats.data.validate import require_readable_file

    # a folder, '-' (standard input) or a device: said as such before the file type, which
    # they were reported as before ("unknown stimulus file type"; issue 44, new cases)
    require_readable_file(path, column="--stimuli")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in STIMULUS_FORMATS:
        raise DataValidationError("unknown stimulus file type", source=str(path),
                                  expected=f"one of {', '.join(STIMULUS_FORMATS)}",
                                  found=repr(suffix or "no extension"))
    if suffix != ".parquet":
        return read_table(path, sep=STIMULUS_FORMATS[suffix], dtype=str, keep_default_na=False)
    if not path.exists():
        raise DataValidationError("file not found", source=str(path), expected="an existing file")
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise DataValidationError("the file is not a readable Parquet file", source=str(path),
                                  found=str(exc).splitlines()[0]) from None
    if df.empty:
        raise DataValidationError("the file has no rows", source=str(path),
                                  expected="at least one row", found="0 rows")
    return df


def _require_text(df: pd.DataFrame, column: str, *, source: str, allow_empty: bool = False) -> None:
    """Every cell of `column` a string, non-empty unless allowed; names the first bad cell."""
    for pos, value in enumerate(df[column]):
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            shown = "an empty cell" if isinstance(value, str) or value is None or value != value \
                else repr(value)
            raise DataValidationError(
                f"the {column!r} cell is not usable text", source=source, row=file_row(pos),
                column=column, expected="non-empty text" if not allow_empty else "text",
                found=shown)


def _items(df: pd.DataFrame, item_column: str, source: str, notes: list) -> pd.Series:
    """The item ids: the item column (integers where every id is one), else row numbers."""
    if item_column not in df.columns:
        notes.append(f"{source} has no {item_column!r} column: items are the file's row "
                     f"numbers (header = row 1)")
        return pd.Series([file_row(i) for i in range(len(df))], index=df.index)
    as_text = df[item_column].map(lambda v: "" if v is None or v != v else str(v).strip())
    empty = as_text == ""
    if empty.any():
        pos = int(empty.to_numpy().nonzero()[0][0])
        raise DataValidationError("an item id is missing", source=source, row=file_row(pos),
                                  column=item_column, expected="an item id", found="an empty cell")
    if as_text.str.fullmatch(r"-?\d+").all():
        return as_text.astype(int)
    return as_text


def _pick_text_column(df: pd.DataFrame, text_column: str | None, source: str) -> str:
    if text_column is not None:
        return text_column
    for guess in TEXT_COLUMN_GUESSES:
        if guess in df.columns:
            return guess
    raise DataValidationError(
        "no text column", source=source, column=TEXT_COLUMN_GUESSES[0],
        expected=f"a column named {' or '.join(TEXT_COLUMN_GUESSES)}, or --text-column NAME",
        found=f"columns {', '.join(map(str, df.columns))}")


def _rows_text(positions: list[int]) -> str:
    shown = ", ".join(str(file_row(p)) for p in positions[:5])
    return f"row{'s' if len(positions) > 1 else ''} {shown}{' ...' if len(positions) > 5 else ''}"


def normalise_joins(table: pd.DataFrame, *, source: str, verbatim: bool = False,
                    prefix_column: str = "prefix", continuation_column: str = "continuation"
                    ) -> tuple[pd.DataFrame, list[str]]:
    """Prefix and continuation joined by exactly one space where they are two words.

    The continuation is appended to the prefix as it is, so spreadsheets that
    strip or add spaces change what is scored (issue 33: "that  they" scored
    22-23 bits, "thatthey" 19.9 bits over 3 tokens, against 6.9 for " they").
    The rule, applied to every row and counted in a note:
    - a prefix ending in whitespace loses it, and its continuation starts
      with one space (never a doubled one);
    - a continuation that starts with a letter or digit right after a prefix
      that ends in a non-space gets one leading space ("they" -> " they"),
      unless `verbatim` (--verbatim-continuations: scored as written, for
      languages written without spaces or a continuation that continues a
      word). A continuation starting with punctuation (",", "'s") or with its
      own space is left as it is.
    """
    prefixes, continuations = list(table["prefix"]), list(table["continuation"])
    trimmed, spaced, glued = [], [], []
    for k, (prefix, continuation) in enumerate(zip(prefixes, continuations)):
        if prefix[-1:].isspace():
            prefix = prefix.rstrip()
            trimmed.append(k)
            if not continuation[:1].isspace():
                continuation = " " + continuation
        elif prefix and continuation[:1].isalnum():
            if verbatim:
                glued.append(k)
            else:
                continuation = " " + continuation
                spaced.append(k)
        prefixes[k], continuations[k] = prefix, continuation
    notes = []
    if trimmed:
        notes.append(f"{len(trimmed)} prefix(es) in {source} ended in whitespace ({_rows_text(trimmed)}, "
                     f"column {prefix_column!r}); it was removed, so prefix and continuation are "
                     f"joined by exactly one space")
    if spaced:
        notes.append(f"{len(spaced)} continuation(s) in {source} had no leading space "
                     f"({_rows_text(spaced)}, column {continuation_column!r}); one was added "
                     f"(' they', as a word inside a sentence is tokenized). "
                     f"--verbatim-continuations scores them as written")
    if glued:
        notes.append(f"{len(glued)} continuation(s) in {source} start with a letter or digit "
                     f"right after the prefix ({_rows_text(glued)}, column "
                     f"{continuation_column!r}) and are scored as written, glued to the prefix's "
                     f"last word (--verbatim-continuations)")
    out = table.copy()
    out["prefix"], out["continuation"] = prefixes, continuations
    return out, notes


# Spaces a spreadsheet or a word processor leaves that a tokenizer reads as other
# characters: no-break (U+00A0), narrow no-break (U+202F), figure (U+2007), thin and
# other Unicode spaces, tabs and line breaks; and runs of them.
_ODD_SPACE = re.compile(r"[^\S ]| {2,}")


def normalise_texts(table: pd.DataFrame, *, source: str, text_column: str = "text",
                    verbatim: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """Plain texts with the whitespace a reader cannot see made plain (issue 44): stripped
    at both ends, and every other kind of space or run of spaces inside made one space.
    On smollm2-135m a leading space moved a sentence's score by 3.6 nats, a trailing one by
    3.8 and a no-break space before "they" by 12.5. Each change is counted in a note;
    `verbatim` (--verbatim-texts) scores the texts as written."""
    texts = list(table["text"])
    ends = [k for k, t in enumerate(texts) if t != t.strip()]
    inner = [k for k, t in enumerate(texts) if _ODD_SPACE.search(t.strip())]
    if verbatim or not (ends or inner):
        return table, []
    cleaned = [_ODD_SPACE.sub(" ", t.strip()) for t in texts]
    notes = []
    if ends:
        notes.append(f"{len(ends)} text(s) in {source} began or ended with whitespace "
                     f"({_rows_text(ends)}, column {text_column!r}); it was removed "
                     f"(--verbatim-texts scores them as written)")
    if inner:
        notes.append(f"{len(inner)} text(s) in {source} held a no-break or other special space, "
                     f"or a run of spaces ({_rows_text(inner)}, column {text_column!r}); each "
                     f"became one plain space (--verbatim-texts scores them as written)")
    return table.assign(text=cleaned), notes


def _strip_variants(table: pd.DataFrame, *, source: str, variant_column: str
                    ) -> tuple[pd.DataFrame, list[str]]:
    """Variants with whitespace around them are stripped (a variant is put in the slot after
    the frame's own space; " they" would be scored after two), and counted."""
    stripped = table["variant"].str.strip()
    changed = [k for k, (a, b) in enumerate(zip(table["variant"], stripped)) if a != b]
    if not changed:
        return table, []
    return table.assign(variant=stripped), [
        f"{len(changed)} variant(s) in {source} had whitespace around them "
        f"({_rows_text(changed)}, column {variant_column!r}); it was removed (the frame's "
        f"space before the slot is the one space before the variant)"]


def read_stimuli(path: str | os.PathLike, *, measure: str = "causal", item_column: str = "item",
                 text_column: str | None = None, prefix_column: str = "prefix",
                 continuation_column: str = "continuation", frame_column: str = "frame",
                 variant_column: str = "variant", variants: list[str] | None = None,
                 verbatim_continuations: bool = False, verbatim_texts: bool = False) -> Stimuli:
    """Read and validate a stimulus file for `measure` (see the module docstring).

    Continuations are joined to their prefixes by one space (`normalise_joins`,
    each change counted in `notes`) unless verbatim_continuations.
    """
    if measure not in MEASURES:
        raise UnknownNameError("measure", measure, list(MEASURES))
    source = str(path)
    df = read_stimulus_file(path)
    notes: list[str] = []
    if measure in ("causal", "pll_original", "pll_word_l2r"):
        wanted = {_pick_text_column(df, text_column, source): "text"}
    elif measure == "continuation":
        wanted = {prefix_column: "prefix", continuation_column: "continuation"}
    else:
        wanted = {frame_column: "frame"}
        if variants is None:
            wanted[variant_column] = "variant"
    require_columns(df, list(wanted), source=source)
    for column, standard in wanted.items():
        _require_text(df, column, source=source, allow_empty=standard == "prefix")
    table = pd.DataFrame({standard: df[column].to_numpy() for column, standard in wanted.items()})
    table.insert(0, "item", _items(df, item_column, source, notes).to_numpy())
    if "text" in table:
        table, spaced = normalise_texts(table, source=source, text_column=next(iter(wanted)),
                                        verbatim=verbatim_texts)
        notes += spaced
    if measure == "continuation":
        table, joined = normalise_joins(table, source=source, verbatim=verbatim_continuations,
                                        prefix_column=prefix_column,
                                        continuation_column=continuation_column)
        notes += joined
    if "variant" in table:
        table, stripped = _strip_variants(table, source=source, variant_column=variant_column)
        notes += stripped
    keys = ["item", "variant"] if "variant" in table else ["item"]
    shown = table.rename(columns={"item": item_column, **{s: c for c, s in wanted.items()}})
    require_unique(shown, [item_column] + ([variant_column] if "variant" in table else []),
                   source=source, what="stimulus")
    if measure == "choice":
        _check_choice(table, shown, source, variants, frame_column, item_column)
    return Stimuli(table[keys + [c for c in table if c not in keys]], measure, source,
                   list(variants) if variants is not None else None, notes)


def _check_choice(table, shown, source, variants, frame_column, item_column) -> None:
    """One frame per item, at least two variants per item."""
    if variants is not None:
        if len(set(variants)) < 2 or len(set(variants)) != len(variants):
            raise DataValidationError("--variants must be at least two distinct words",
                                      source="--variants", found=repr(list(variants)))
        return
    frames = table.groupby("item", sort=False)["frame"].transform("first")
    differs = table["frame"] != frames
    if differs.any():
        pos = int(differs.to_numpy().nonzero()[0][0])
        raise DataValidationError(
            f"item {table['item'].iloc[pos]!r} has more than one frame", source=source,
            row=file_row(pos), column=frame_column,
            expected="the same frame on every row of an item", found=repr(table["frame"].iloc[pos]))
    counts = table.groupby("item", sort=False)["variant"].transform("size")
    if (counts < 2).any():
        pos = int((counts < 2).to_numpy().nonzero()[0][0])
        raise DataValidationError(
            f"item {table['item'].iloc[pos]!r} has one variant; a forced choice needs two or more",
            source=source, row=file_row(pos), column=item_column, expected=">= 2 rows per item")


def score_stimuli(stimuli: Stimuli, lm, *, bos: str = "prepend", slot: str = "[BLANK]",
                  span: str = "word", pll_variant: str | None = None, batch_size: int | None = None,
                  cache_dir=None, use_cache: bool = True, progress: bool | None = None,
                  token_budget: int | None = None) -> pd.DataFrame:
    """One model's score table for the stimuli (one row per item, or per item x variant).

    token_budget (padded tokens per forward pass; None: the device's default)
    applies to the causal, continuation and PLL measures; a forced choice runs
    at the device's default.
    """
    from models.causal import score_continuations, score_sentences
    from models.forced_choice import forced_choice
    from models.masked import pll_sentences

    needed = MODEL_KIND.get(stimuli.measure)
    if needed is not None and lm.kind != needed:
        fitting = [m for m, kind in MODEL_KIND.items() if kind == lm.kind] + ["choice"]
        raise DataValidationError(
            f"--measure {stimuli.measure} needs a {needed} LM, but {lm.name!r} is a {lm.kind} LM",
            source="--measure", expected=f"for this model: {', '.join(fitting)}",
            found=stimuli.measure)
    run = {"batch_size": batch_size, "cache_dir": cache_dir, "use_cache": use_cache,
           "progress": progress}
    t = stimuli.table
    budget = {"token_budget": token_budget}
    if stimuli.measure == "causal":
        return score_sentences(t["text"].tolist(), items=t["item"].tolist(), lm=lm, bos=bos,
                               **run, **budget)
    if stimuli.measure == "continuation":
        return score_continuations(t["prefix"].tolist(), t["continuation"].tolist(),
                                   items=t["item"].tolist(), lm=lm, bos=bos, **run, **budget)
    if stimuli.measure in ("pll_original", "pll_word_l2r"):
        return pll_sentences(t["text"].tolist(), items=t["item"].tolist(), lm=lm,
                             variant=stimuli.measure, **run, **budget)
    choice = {"slot": slot, "span": span, "bos": bos, **run}
    if pll_variant is not None:  # else forced_choice's own default PLL variant
        choice["pll"] = pll_variant
    if stimuli.variants is not None:
        return forced_choice(t["frame"].tolist(), stimuli.variants, items=t["item"].tolist(),
                             lm=lm, **choice)
    return _choice_per_variant_set(t, lm, choice)


def _choice_per_variant_set(t: pd.DataFrame, lm, choice: dict) -> pd.DataFrame:
    """Forced choice where items bring their own variants: one call per distinct variant set,
    rows back in the file's order."""
    from models.forced_choice import forced_choice

    per_item = t.groupby("item", sort=False).agg(frame=("frame", "first"),
                                                 variants=("variant", tuple))
    parts = []
    for variant_set, group in per_item.groupby("variants", sort=False):
        parts.append(forced_choice(group["frame"].tolist(), list(variant_set),
                                   items=group.index.tolist(), lm=lm, **choice))
    out = pd.concat(parts, ignore_index=True)
    order = t[["item", "variant"]].reset_index().rename(columns={"index": "_row"})
    out = out.merge(order, on=["item", "variant"], validate="one_to_one")
    return out.sort_values("_row").drop(columns="_row").reset_index(drop=True)


def sweep(stimuli: Stimuli, model_names: list[str], *, device: str = "cpu",
          dtype: str = "float32", revision: str | None = None, report=None,
          device_map: str | None = None, **options) -> pd.DataFrame:
    """Score the stimuli with every model in turn; one long table (models stacked).

    report: called with (model name, its run statistics) after each model.
    Each model is freed before the next loads, so a many-model sweep holds one at a time.
    """
    from models.engine import current_engine
    from models.loading import clear_loaded_models, load_scorer

    # None: the device's own batch plan (models.batching.plan_batches)
    batch_size = options.get("batch_size")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise DataValidationError("the batch size must be a whole number >= 1",
                                  source="--batch-size", expected="1 or more",
                                  found=repr(batch_size))
    if len(set(model_names)) != len(model_names):
        raise DataValidationError("a model is named twice", source="--model",
                                  expected="distinct model names", found=repr(model_names))
    tables = []
    for name in model_names:
        lm = load_scorer(name, device=current_engine().driver_device(device), dtype=dtype,
                         revision=revision, device_map=device_map)
        scored = score_stimuli(stimuli, lm, **options)
        if report is not None:
            report(name, scored.attrs.get("run", {}))
        tables.append(scored)
        clear_loaded_models()
    out = pd.concat(tables, ignore_index=True)
    out.attrs = {}
    return out


def require_score_format(path: str | os.PathLike) -> Path:
    """The output path, if its extension names a format write_scores writes."""
    path = Path(path)
    if path.suffix.lower() not in SCORE_FORMATS:
        raise DataValidationError("unknown output file type", source=str(path),
                                  expected=f"one of {', '.join(SCORE_FORMATS)}",
                                  found=repr(path.suffix.lower() or "no extension"))
    return path


def write_scores(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write the score table (format from the extension), atomically: a reader never sees
    half, and two runs writing one path each write their own temporary file (the last one
    to finish wins, whole)."""
    from gbstats.errors import place_problem
    from gbstats.report.files import write_atomically

    path = require_score_format(path)
    suffix = path.suffix.lower()

    def write(tmp: Path) -> None:
        if suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, sep="," if suffix == ".csv" else "\t", index=False)

    try:
        write_atomically(path, write)
    except OSError as exc:
        # The scores are computed (and cached) by now: say where the write failed and
        # that a re-run with another --out costs nothing.
        reason = place_problem(exc)
        reason = f"the folder is {reason}" if reason else (exc.strerror or str(exc))
        raise OutputPathError(f"cannot write the scores to {path} ({reason}); "
                              f"the scores are in the cache, so re-running with another --out "
                              f"scores nothing again") from None
    return path
