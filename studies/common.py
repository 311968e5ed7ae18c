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

DEFAULT_MODEL = "smollm2-135m"
_STARTED = time.perf_counter()


def add_common_flags(parser: argparse.ArgumentParser, study: str, *, model_none: bool = False,
                     multiple_models: bool = False, bayes: bool = True) -> argparse.ArgumentParser:
    """--model, --out, --data-dir, --seed, --device, cache flags and (optionally) Bayesian flags."""
    none_help = "; 'none' skips language-model scoring" if model_none else ""
    model_help = ("registry name, Hugging Face id or local path (default: smollm2-135m, the "
                  f"embedded offline model){none_help}")
    if multiple_models:
        parser.add_argument("--model", action="append", default=None,
                            help=model_help + "; repeat to compare several models")
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
        parser.add_argument("--prior-sensitivity", action="store_true",
                            help="refit every Bayesian twin with priors twice as wide and "
                                 "report both side by side (table prior_sensitivity)")
    return parser


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
