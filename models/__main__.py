"""`python -m models score`: score your own stimuli with one or many models, locally or on Ray.

    python -m models score --stimuli stimuli.csv --model smollm2-135m --out scores.csv
    python -m models score --stimuli s.parquet --measure continuation \\
        --model smollm2-135m --model /models/gpt2 --out scores.parquet --engine ray

See models/sweep.py for the measures and the input columns, and the README
("Scoring your own stimuli", "Sweeps on a cluster").
"""
from __future__ import annotations

import argparse
import sys
import time

from gbstats.cli import positive_int
from gbstats.errors import GbstatsError


# The exit code of a run stopped by Ctrl-C (SIGINT), as a shell reports it: 128 + 2.
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    from models.engine import add_engine_flags
    from models.loading import DEVICE_MAPS, DEVICES, DTYPES
    from models.registry import DEFAULT_MODEL, MODELS
    from models.sweep import MEASURES, SCORE_FORMATS, STIMULUS_FORMATS, TEXT_COLUMN_GUESSES

    parser = argparse.ArgumentParser(prog="python -m models",
                                     description="Language-model scoring from the command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    measures = "\n".join(f"  {name:<13} {what}" for name, what in MEASURES.items())
    p = commands.add_parser(
        "score", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="score a stimulus file with one or more models into a long score table",
        description="Score every stimulus in a file with one or more models. The output has "
                    "one row per item x model (x variant for --measure choice) with the columns "
                    "item, logprob (natural log, summed over the scored span), surprisal_bits, "
                    "n_tokens, scoring, model, revision, bos, ready to join with human data on "
                    "item. Scores are cached ($GBSTATS_CACHE or --cache-dir): a re-run scores "
                    "nothing twice and a killed run resumes where it stopped.",
        epilog=f"measures:\n{measures}\n\n"
               "input columns (rename with the --*-column options):\n"
               f"  causal, pll_*   text (default: a column named {' or '.join(TEXT_COLUMN_GUESSES)})\n"
               "  continuation    prefix, continuation (joined by one space: a prefix's trailing\n"
               "                  space is removed, a continuation starting with a letter gets\n"
               "                  ' they' its leading space; --verbatim-continuations: as written)\n"
               "  choice          frame (with the slot [BLANK]) and variant (one row per item x\n"
               "                  variant), or frame only plus --variants he,she,they\n"
               "  every measure   item (optional; row numbers otherwise)\n\n"
               "examples:\n"
               "  python -m models score --stimuli data/singular_they/stimuli.tsv \\\n"
               "      --model smollm2-135m --out scores.csv\n"
               "  python -m models score --stimuli frames.csv --measure choice \\\n"
               "      --variants he,she,they --model smollm2-135m --out choice.parquet\n"
               "  python -m models score --stimuli big.parquet --model smollm2-135m --model gpt2 \\\n"
               "      --out scores.parquet --engine ray --ray-address 10.0.0.5:6379")
    io = p.add_argument_group("input and output")
    io.add_argument("--stimuli", required=True, metavar="FILE",
                    help=f"stimulus table: {', '.join(STIMULUS_FORMATS)}")
    io.add_argument("--out", required=True, metavar="FILE",
                    help=f"score table to write: {', '.join(SCORE_FORMATS)} (by extension)")
    io.add_argument("--measure", default="causal", choices=list(MEASURES),
                    help="what to score (default: %(default)s; see below)")
    io.add_argument("--item-column", default="item", metavar="NAME")
    io.add_argument("--text-column", default=None, metavar="NAME")
    io.add_argument("--prefix-column", default="prefix", metavar="NAME")
    io.add_argument("--continuation-column", default="continuation", metavar="NAME")
    io.add_argument("--frame-column", default="frame", metavar="NAME")
    io.add_argument("--variant-column", default="variant", metavar="NAME")
    io.add_argument("--verbatim-continuations", action="store_true",
                    help="continuation: score each continuation exactly as written; by default "
                         "one that starts with a letter or digit right after the prefix gets a "
                         "leading space (' they'), and a prefix's trailing whitespace is removed "
                         "(both counted in a note)")
    io.add_argument("--verbatim-texts", action="store_true",
                    help="causal and PLL: score each text exactly as written; by default "
                         "whitespace at either end is removed and no-break or other Unicode "
                         "spaces and runs of spaces become one space (counted in a note): a "
                         "stray space moved a score by 3.6 nats, a no-break space by 12.5")
    io.add_argument("--variants", default=None, metavar="A,B,...",
                    type=lambda text: [v.strip() for v in text.split(",")],
                    help="choice: one variant list for every frame, instead of a variant column")
    m = p.add_argument_group("models and scoring")
    m.add_argument("--model", action="append", metavar="NAME",
                   help=f"a registry name ({', '.join(MODELS)}), a Hugging Face id or a local "
                        f"folder; repeat for several models (default: {DEFAULT_MODEL})")
    m.add_argument("--revision", default=None, help="model revision (hub models)")
    m.add_argument("--device", default="cpu", help=f"{', '.join(DEVICES)} (default: %(default)s)")
    m.add_argument("--dtype", default="float32", choices=list(DTYPES),
                   help="float32 (default; exact, and what the reference tests check) or, on a "
                        "GPU, bfloat16 / float16 for speed (scores then shift by up to a few "
                        "hundredths of a nat per token and depend slightly on the batch)")
    m.add_argument("--device-map", default=None, choices=list(DEVICE_MAPS),
                   help="auto: spread a model that does not fit one GPU over the GPUs (and CPU) "
                        "found (needs accelerate; hub and local models)")
    m.add_argument("--bos", default="prepend", choices=["prepend", "none"],
                   help="causal LMs: score the first word given a BOS token (default), or not")
    m.add_argument("--slot", default="[BLANK]", help="choice: the slot marker in frames")
    m.add_argument("--span", default="word", choices=["word", "sentence"],
                   help="choice: score the variant only, or the whole filled sentence")
    m.add_argument("--pll-variant", default=None, choices=["pll_original", "pll_word_l2r"],
                   help="choice with a masked LM and --span sentence: the PLL variant (default: "
                        "forced_choice's own, recorded in the scoring column)")
    m.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                   help="texts per cache commit (default: 32 on a CPU, 16 sentences for PLL; "
                        "4096 on a GPU)")
    m.add_argument("--token-budget", type=positive_int, default=None, metavar="N",
                   help="padded tokens per forward pass, texts sorted by length (default: 12288 "
                        "on a GPU; on a CPU one pass per commit batch)")
    c = p.add_argument_group("cache and output")
    c.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="score cache folder (default: $GBSTATS_CACHE, else the user cache)")
    c.add_argument("--no-cache", action="store_true", help="score everything afresh, store nothing")
    c.add_argument("--quiet", action="store_true", help="no progress bars or summary lines")
    add_engine_flags(p)
    r = commands.add_parser(
        "repair-cache", help="salvage the readable, checksum-verified scores of a damaged cache",
        description="Copy every score of a damaged cache that sqlite can still read and whose "
                    "checksum verifies into a fresh cache file; the damaged file is kept beside it "
                    "as scores.sqlite.corrupt-<time>. Scores that are lost are recomputed by the "
                    "next run. Run it while no other process uses the cache.")
    r.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="score cache folder (default: $GBSTATS_CACHE, else the user cache)")
    return parser


def say(args, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr, flush=True)


def score_command(args) -> int:
    from models.engine import engine_from_args
    from models.registry import DEFAULT_MODEL
    from gbstats.report.files import check_output_file
    from models.sweep import read_stimuli, require_score_format, sweep, write_scores

    # Before any model or data is loaded: --out must be a known format, writable, and not
    # the input.
    check_output_file(args.out, inputs=[args.stimuli])
    require_score_format(args.out)
    stimuli = read_stimuli(args.stimuli, measure=args.measure, item_column=args.item_column,
                           text_column=args.text_column, prefix_column=args.prefix_column,
                           continuation_column=args.continuation_column,
                           frame_column=args.frame_column, variant_column=args.variant_column,
                           variants=args.variants,
                           verbatim_continuations=args.verbatim_continuations,
                           verbatim_texts=args.verbatim_texts)
    for note in stimuli.notes:
        # always shown, --quiet or not: what was changed in the input is not progress
        print(f"note: {note}", file=sys.stderr, flush=True)
    models = args.model or [DEFAULT_MODEL]
    if any(str(m).lower() == "none" for m in models):
        # a study's "--model none" skips scoring; here scoring is the whole command, and
        # "none" would otherwise be looked up as a hub id (issue 44)
        from gbstats.errors import DataValidationError

        raise DataValidationError(
            "'none' names no model", source="--model", expected="a registry name (smollm2-135m, "
            "gpt2, ...), a hub id or a local folder: `models score` scores with every --model",
            found="none (a study's --model none skips scoring; to skip it here, do not run "
                  "`models score`)")
    say(args, f"{len(stimuli.table)} stimuli from {args.stimuli} ({args.measure}) x "
              f"{len(models)} model(s), engine {args.engine}")
    started = time.perf_counter()

    def report(name: str, run: dict) -> None:
        say(args, f"{name}: {run.get('n_unique', 0)} distinct units, {run.get('cache_hits', 0)} "
                  f"from the cache, {run.get('computed', 0)} scored "
                  f"({time.perf_counter() - started:.1f} s so far)")
        rejected = run.get("cache_mismatched", 0) + run.get("cache_unverified", 0)
        if rejected:
            # always shown, --quiet or not: a cache that returns changed numbers is news
            print(f"warning: {name}: {run.get('cache_mismatched', 0)} cached score(s) failed "
                  f"their checksum and {run.get('cache_unverified', 0)} had none; all were "
                  f"recomputed, not used", file=sys.stderr, flush=True)
        if run.get("cache_nonfinite", 0):
            print(f"warning: {name}: {run['cache_nonfinite']} cached score(s) held NaN or inf "
                  f"(stored by an older gbstats); they were recomputed, not used",
                  file=sys.stderr, flush=True)

    with engine_from_args(args):
        scores = sweep(stimuli, models, device=args.device, dtype=args.dtype,
                       revision=args.revision, report=report, bos=args.bos, slot=args.slot,
                       span=args.span, pll_variant=args.pll_variant, batch_size=args.batch_size,
                       token_budget=args.token_budget, device_map=args.device_map,
                       cache_dir=args.cache_dir, use_cache=not args.no_cache,
                       progress=False if args.quiet else None)
    path = write_scores(scores, args.out)
    say(args, f"wrote {len(scores)} rows to {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        if args.command == "score":
            return score_command(args)
        if args.command == "repair-cache":
            from models.cache import repair_cache

            print(repair_cache(args.cache_dir).summary(), file=sys.stderr)
            return 0
    except GbstatsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        # Ctrl-C or SIGTERM: one line on what was kept, not a traceback through torch
        from gbstats.cli import EXIT_TERMINATED, Terminated, print_interrupted
        from models.cache import stored_summary

        kept = stored_summary()
        out = getattr(args, "out", None)
        terminated = isinstance(stop, Terminated)
        print_interrupted(
            f"\n{'terminated (SIGTERM)' if terminated else 'interrupted'}: "
            f"{kept + ' kept in the cache' if kept else 'no score was kept yet'}"
            + (f"; {out} was not written" if out else "")
            + "; rerun the same command to resume (cached scores are not computed again)")
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    return 1


if __name__ == "__main__":
    from gbstats.cli import EXIT_TERMINATED, handle_sigterm_as_interrupt, hidden_unraisable_interrupts

    handle_sigterm_as_interrupt()
    with hidden_unraisable_interrupts():
        code = main()
    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):  # a second signal during the exit: no traceback
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)
