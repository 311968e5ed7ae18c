# Two commands a new user needs: `make demo` and `make test`. Both set up first;
# setup is idempotent and fast when nothing changed.
PY := .venv/bin/python
PY_TF5 := .venv-tf5/bin/python
# The public datasets: $GBSTATS_DATA if set, else ../shared/data beside the checkout.
GBSTATS_DATA ?= $(abspath ../shared/data)
export GBSTATS_DATA

.PHONY: setup demo test test-fast check clean

setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m studies.singular_they

# Every test on the pinned stack, then the model tests again on the newest
# transformers 5.x (.venv-tf5, built by scripts/setup.sh). The Ray engine's tests run in
# .venv only: Ray is an optional extra that .venv-tf5 does not install.
# The first pass runs on two pytest-xdist workers, a test file per worker at a time
# (--dist loadfile keeps each file's module fixtures, such as a study run shared by its
# tests, in one process): many tests wait on R, on a child process or on the disk, and
# benchmarks/results/test_times.json records the gain. PYTEST_MAIN_ARGS and
# PYTEST_TF5_ARGS add options to each pass (benchmarks/test_times.py reads --junitxml).
XDIST := -n 2 --dist loadfile
PYTEST_MAIN_ARGS ?=
PYTEST_TF5_ARGS ?=
test: setup
	$(PY) -m pytest -q $(XDIST) $(PYTEST_MAIN_ARGS)
	$(PY_TF5) -m pytest -q tests/models --ignore=tests/models/test_ray_engine.py $(PYTEST_TF5_ARGS)

test-fast: setup
	$(PY) -m pytest -q $(XDIST) -m "not slow"

check: setup
	$(PY) -m gbstats check

clean:
	rm -rf .venv .venv-tf5 reports/*/ .pytest_cache
