# Two commands a new user needs: `make demo` and `make test`. Both set up first;
# setup is idempotent and fast when nothing changed.
PY := .venv/bin/python
PY_TF5 := .venv-tf5/bin/python
# The public datasets: $GBSTATS_DATA if set, else ../shared/data beside the checkout.
GBSTATS_DATA ?= $(abspath ../shared/data)
export GBSTATS_DATA

.PHONY: setup demo lint test test-fast check clean

setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m studies.singular_they

# Lint first, in about a second: ruff's pyflakes rules (F) over all the code. They find
# what no test may reach: an undefined name on a path the fast tests skip (a text
# replacement once left `--prior-sensitivity` raising NameError, found only by a full
# make test), an unused import, a test defined twice (pytest runs only the second).
LINT_PATHS := gbstats models studies benchmarks tests scripts
lint: setup
	$(PY) -m ruff check --select F --no-cache $(LINT_PATHS)

# Every test on the pinned stack, then the model tests again on the newest
# transformers 5.x (.venv-tf5, built by scripts/setup.sh beside .venv).
# The first pass runs on two pytest-xdist workers, a test file per worker at a time
# (--dist loadfile keeps each file's module fixtures, such as a study run shared by its
# tests, in one process), the longest files first (tests/conftest.py orders them by
# benchmarks/results/test_times.json; --no-loadscope-reorder keeps that order, where
# xdist would queue files by their number of tests): many tests wait on R, on a child
# process or on the disk, and test_times.json records the gain.
# The tf5 pass reruns tests/models for what the transformers version can change: the
# tokenizers and their offsets, model loading and the GGUF conversion, hub revisions
# (huggingface_hub differs too), the scorers' numbers and their agreement across stacks.
# Left out there: the Ray engine's tests (Ray is an optional extra that .venv-tf5 does not
# install), and the tests marked stack_independent, which exercise only gbstats' own code
# around the model (the score cache's files, keys and locks, fingerprints of a folder's
# bytes, what a cached run loads, progress lines): mark a test so only when nothing in it
# goes through transformers, tokenizers or huggingface_hub beyond what other tf5 tests
# already run. They all still run in the first pass. Measured on the 2-core machine at a
# load of 3-6 (2026-11-27): the tf5 pass took 203 s with them, 132 s without, 121 s
# without on two xdist workers (at a load of 12-15, 402 s in one process and 405 s on two:
# the gain of a second worker grows as the machine gets quieter, as CI's is).
# PYTEST_MAIN_ARGS and PYTEST_TF5_ARGS add options to each pass (benchmarks/test_times.py
# reads --junitxml).
XDIST := -n 2 --dist loadfile --no-loadscope-reorder
PYTEST_MAIN_ARGS ?=
PYTEST_TF5_ARGS ?=
TF5_TESTS := tests/models --ignore=tests/models/test_ray_engine.py -m "not stack_independent"
test: setup lint
	$(PY) -m pytest -q $(XDIST) $(PYTEST_MAIN_ARGS)
	$(PY_TF5) -m pytest -q $(XDIST) $(TF5_TESTS) $(PYTEST_TF5_ARGS)

# The edit loop: the tests not marked slow (each under about 30 s), on the pinned stack
# only; `make test` is what CI runs.
test-fast: setup lint
	$(PY) -m pytest -q $(XDIST) -m "not slow"

check: setup
	$(PY) -m gbstats check

clean:
	rm -rf .venv .venv-tf5 reports/*/ .pytest_cache
