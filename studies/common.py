"""What every study shares: command-line flags, model loading, the report's provenance.

Kept small on purpose: a study is `load -> score -> join -> fit -> report` in
its own package; only the plumbing that would otherwise be copied lives here.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from gbstats.cli import positive_int  # re-exported: studies import it from here
from gbstats.errors import DataValidationError, GbstatsError

DEFAULT_MODEL = "smollm2-135m"
_STARTED = time.perf_counter()


def add_common_flags(parser: argparse.ArgumentParser, study: str, *, model_none: bool = False,
                     multiple_models: bool = False, bayes: bool = True,
                     ranking: bool = False) -> argparse.ArgumentParser:
    """--model, --out, --data-dir, --seed, --device, cache flags and (optionally) Bayesian flags."""
    none_help = "; 'none' skips language-model scoring" if model_none else ""
    model_help = ("registry name, Hugging Face id or local path (default: smollm2-135m, the "
                  f"embedded offline model){none_help}")
    if multiple_models:
        parser.add_argument("--model", action="append", default=None,
                            help=model_help + "; repeat to compare several models")
    elif ranking:
        parser.add_argument("--model", default=DEFAULT_MODEL, action=RankedModels,
                            help=model_help + "; repeat (or use --models) to rank several "
                                 "models against people: the first gets the full analysis")
        parser.add_argument("--models", default=None, metavar="FILE", action=ModelsFile,
                            help="a text file naming one model a line (registry name, hub id "
                                 "or local folder; blank lines and # comments skipped), "
                                 "added after any --model")
    else:
        parser.add_argument("--model", default=DEFAULT_MODEL, action=OneModel,
                            help=model_help + "; one model per run")
    parser.add_argument("--out", default=str(Path("reports") / study),
                        help="output folder (default: %(default)s)")
    parser.add_argument("--data-dir", default=None,
                        help="data directory (default: $GBSTATS_DATA, then the user cache)")
    parser.add_argument("--seed", type=seed_int, default=2023,
                        help="seed for sampling, bootstrap and MCMC (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the score cache")
    parser.add_argument("--cache-dir", default=None,
                        help="score cache folder (default: $GBSTATS_CACHE, then the user cache)")
    if bayes:
        parser.add_argument("--no-bayes", action="store_true",
                            help="skip the Bayesian (PyMC) fits")
        parser.add_argument("--draws", type=positive_int, default=1000,
                            help="posterior draws per chain (default: %(default)s; a twin "
                                 "that has not converged is refitted with up to 4x as many)")
        parser.add_argument("--max-draws", type=positive_int, default=None, metavar="N",
                            help="the most draws per chain a twin that has not converged is "
                                 "refitted with (default: 4x --draws; equal to --draws: no "
                                 "refits, the first attempt is reported with its diagnostics)")
        parser.add_argument("--prior-sensitivity", action="store_true",
                            help="refit every Bayesian twin with priors twice as wide and "
                                 "report both side by side (table prior_sensitivity)")
    return parser


def check_twin_budget(args: argparse.Namespace) -> None:
    """--max-draws below --draws is refused before anything runs (the twins would stop
    with the same error only when the first one is fitted, after the scoring)."""
    max_draws, draws = getattr(args, "max_draws", None), getattr(args, "draws", None)
    if max_draws is not None and draws is not None and max_draws < draws:
        raise DataValidationError("the twins' refit budget is below the draws asked for",
                                  source="--max-draws",
                                  expected=f"at least --draws ({draws}), or left out "
                                           f"(4x --draws)", found=str(max_draws))


class OneModel(argparse.Action):
    """--model for a study that compares one model with people: a second --model is
    refused. argparse's default would keep only the last one and score it without a
    word about the first (issue 42)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, "_model_given", None) is not None:
            parser.error(f"--model was given twice ({namespace._model_given!r}, then "
                         f"{values!r}); this study compares one model with people per run: "
                         f"run it once per model, with its own --out")
        namespace._model_given = values
        setattr(namespace, self.dest, values)


class RankedModels(argparse.Action):
    """--model for a study that ranks many models against people: every name is kept, in
    order, in `ranked_models`; `model` stays the first, which gets the study's full
    analysis (so a run with one model is what it always was)."""

    def __call__(self, parser, namespace, values, option_string=None):
        names = getattr(namespace, "ranked_models", None) or []
        if not names:
            setattr(namespace, self.dest, values)
        namespace.ranked_models = [*names, values]


class ModelsFile(argparse.Action):
    """--models FILE: the names in FILE join those given with --model (see RankedModels)."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            names = read_model_list(values)
        except GbstatsError as exc:
            parser.error(str(exc))
        given = getattr(namespace, "ranked_models", None) or []
        if not given:
            namespace.model = names[0]
        namespace.ranked_models = [*given, *names]
        namespace.models = values


def read_model_list(path: str) -> list[str]:
    """The model names in a --models file: one a line, blank lines and # comments skipped."""
    from gbstats.data.validate import require_readable_file

    p = require_readable_file(path, column="--models")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataValidationError("the file is not valid text", source=str(path),
                                  column="--models", expected="UTF-8 text, one model a line",
                                  found="undecodable bytes") from None
    names = [line.split("#", 1)[0].strip() for line in lines]
    names = [n for n in names if n]
    if not names:
        raise DataValidationError("no model is named", source=str(path), column="--models",
                                  expected="one model a line (registry name, hub id or "
                                           "local folder)",
                                  found=f"{len(lines)} line(s), all blank or comments")
    return names


def ranked_model_names(args) -> list[str]:
    """Every model a ranking study was given (--model, then --models), each once; [] for
    `--model none`. A name given twice, or 'none' among several, is an error."""
    names = getattr(args, "ranked_models", None) or [args.model]
    if len(names) == 1:
        return names if wants_model(names[0]) else []
    nones = [n for n in names if not wants_model(n)]
    if nones:
        raise DataValidationError("'none' was named among several models",
                                  source="--model/--models", expected="either 'none' alone "
                                  "(the people's side only) or models to score",
                                  found=", ".join(names))
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataValidationError("a model is named twice", source="--model/--models",
                                  expected="each model once (two copies of one model need "
                                           "two folders)",
                                  found=", ".join(repeated))
    return list(names)


def seed_int(text: str) -> int:
    """argparse type for --seed: numpy seeds are whole numbers 0 .. 2**32 - 1 (a negative seed
    fails deep inside numpy or PyMC after the data are loaded)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected a seed from 0 to {2**32 - 1}, found {value}")
    return value


def wants_model(name: str | None) -> bool:
    return name is not None and name.lower() != "none"


def load_model(args, name: str | None = None):
    """The LanguageModel for `name` (default: args.model), reused within a process."""
    from models.loading import load_scorer

    return load_scorer(name or args.model, device=args.device)


def model_record(lm) -> dict:
    """What results.json records of a model: the revision is a hub model's commit (never a
    branch name) or a local folder's content digest; `weights_sha256` is the full digest of a
    local folder's or the embedded model's files (models.fingerprint), which the score cache
    keys on."""
    from models.registry import described_as

    record = {"id": lm.model_id, "revision": lm.revision, "name": lm.name, "kind": lm.kind,
              "described_as": described_as(lm.name, lm.model_id)}
    if getattr(lm, "fingerprint", None):
        record["weights_sha256"] = lm.fingerprint
    return record


def dataset_checksums(names: list[str], data_dir=None) -> dict[str, str]:
    """{path: sha256} of every file of the named datasets, for provenance."""
    from gbstats.data.registry import get_dataset

    out = {}
    for name in names:
        entry = get_dataset(name)
        folder = entry.folder(data_dir)
        out.update({str(folder / f.local): f.sha256 for f in entry.files})
    return out


def say(message: str) -> None:
    """Progress messages, with the time elapsed, go to stderr (stdout stays clean)."""
    print(f"[{time.perf_counter() - _STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


class _SayHandler(logging.Handler):
    """Log records of gbstats' long steps, shown as progress lines (`say`)."""

    def emit(self, record: logging.LogRecord) -> None:
        say("      " + record.getMessage())


def show_gbstats_progress() -> None:
    """Show gbstats' progress records (each Bayesian twin attempt: "twin attempt 2/3: refit
    at 2,000 draws ...") as progress lines on stderr; once per process."""
    logger = logging.getLogger("gbstats.progress")
    if not any(isinstance(h, _SayHandler) for h in logger.handlers):
        logger.addHandler(_SayHandler())
        logger.setLevel(logging.INFO)
        logger.propagate = False  # shown here; not a second time by a root handler
        # bambi prints "Modeling the probability that y==1" on every binomial fit: the
        # report says which outcome is modelled, so stderr keeps to progress and warnings
        logging.getLogger("bambi").addFilter(lambda record: record.levelno >= logging.WARNING)
