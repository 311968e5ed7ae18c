"""Score cache: cached == fresh, keyed by settings, and a SIGKILLed run resumes losing nothing."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from models.cache import CACHE_FILE
from models.causal import score_sentences
from models.masked import pll_sentences
from killed_writer import kill_mid_write
from tiny_models import SENTENCES

# The score cache's keys, files and locking are gbstats' own, the same on every
# transformers version: pinned stack only (the tf5 pass leaves them out; see the Makefile).
pytestmark = pytest.mark.stack_independent


def test_cached_equals_fresh_and_second_run_is_all_hits(tiny_gpt2, cache_dir):
    fresh = score_sentences(SENTENCES, lm=tiny_gpt2, use_cache=False)
    first = score_sentences(SENTENCES, lm=tiny_gpt2, cache_dir=cache_dir)
    second = score_sentences(SENTENCES, lm=tiny_gpt2, cache_dir=cache_dir)
    assert first.attrs["run"]["computed"] == len(SENTENCES)
    assert second.attrs["run"]["cache_hits"] == len(SENTENCES) and second.attrs["run"]["computed"] == 0
    np.testing.assert_array_equal(second["logprob"], first["logprob"])
    np.testing.assert_allclose(second["logprob"], fresh["logprob"], atol=1e-4, rtol=0)
    assert (cache_dir / CACHE_FILE).exists()


def test_settings_are_part_of_the_key(tiny_gpt2, tiny_bert, cache_dir):
    score_sentences(SENTENCES, lm=tiny_gpt2, cache_dir=cache_dir, bos="prepend")
    other_bos = score_sentences(SENTENCES, lm=tiny_gpt2, cache_dir=cache_dir, bos="none")
    assert other_bos.attrs["run"]["cache_hits"] == 0
    pll_sentences(SENTENCES, lm=tiny_bert, cache_dir=cache_dir, variant="pll_original")
    l2r = pll_sentences(SENTENCES, lm=tiny_bert, cache_dir=cache_dir, variant="pll_word_l2r")
    assert l2r.attrs["run"]["cache_hits"] == 0
    again = pll_sentences(SENTENCES, lm=tiny_bert, cache_dir=cache_dir, variant="pll_word_l2r")
    assert again.attrs["run"]["computed"] == 0


def test_cache_location_comes_from_gbstats_config(tiny_gpt2, tmp_path, monkeypatch):
    monkeypatch.setenv("GBSTATS_CACHE", str(tmp_path / "from-env"))
    score_sentences(SENTENCES[:2], lm=tiny_gpt2)
    assert (tmp_path / "from-env" / CACHE_FILE).exists()


N_KILL = 6000
CHILD = textwrap.dedent("""
    import sys
    from models.causal import score_sentences
    from models.loading import load_scorer
    lm = load_scorer(sys.argv[1])
    texts = [f"the student number {i} said they would come" for i in range(int(sys.argv[3]))]
    score_sentences(texts, lm=lm, cache_dir=sys.argv[2], batch_size=4, progress=False)
""")


def test_killed_run_resumes_and_loses_nothing(tiny_gpt2_dir, tiny_gpt2, cache_dir, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    db = cache_dir / CACHE_FILE
    env = dict(os.environ, OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, str(script), str(tiny_gpt2_dir), str(cache_dir),
                              str(N_KILL)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # what survived the kill is a consistent database with only whole entries
    survived = kill_mid_write(child, db, after=40, total=N_KILL, timeout=240)
    for value in survived.values():
        entry = json.loads(value)
        assert len(entry["logprobs"]) == len(entry["offsets"]) > 0
        assert all(isinstance(v, float) for v in entry["logprobs"])

    texts = [f"the student number {i} said they would come" for i in range(N_KILL)]
    resumed = score_sentences(texts, lm=tiny_gpt2, cache_dir=cache_dir, batch_size=64)
    run = resumed.attrs["run"]
    assert run["cache_hits"] == len(survived)  # nothing already scored is lost
    assert run["computed"] == N_KILL - len(survived)  # and it is not scored again
    with sqlite3.connect(db) as conn:  # entries written before the kill are unchanged
        after = dict(conn.execute("SELECT key, value FROM scores"))
    assert all(after[k] == v for k, v in survived.items()) and len(after) == N_KILL
    fresh = score_sentences(texts[:300], lm=tiny_gpt2, use_cache=False, batch_size=64)
    np.testing.assert_allclose(resumed["logprob"][:300], fresh["logprob"], atol=1e-4, rtol=0)


@pytest.mark.slow
def test_two_processes_share_one_cache(tiny_gpt2_dir, cache_dir, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    children = [subprocess.Popen([sys.executable, str(script), str(tiny_gpt2_dir), str(cache_dir), "400"],
                                 env=env, stderr=subprocess.PIPE) for _ in range(2)]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err.decode()[-2000:]
    with sqlite3.connect(cache_dir / CACHE_FILE) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 400


def _open_fresh_caches_in_step(root, barrier, n, errors):
    from models.cache import ScoreCache

    for i in range(n):
        barrier.wait()  # every process opens the same new cache at the same moment
        try:
            ScoreCache(root / f"cache{i}")
        except Exception as exc:  # noqa: BLE001 - the test reports whatever escaped
            errors.put(f"cache{i}: {exc!r}")


def test_processes_opening_one_new_cache_at_once_all_succeed(tmp_path):
    # Issue 44: two `models score` processes started together died with "database is
    # locked" at `PRAGMA journal_mode=WAL`, which sqlite answers SQLITE_BUSY at once,
    # without the busy timeout, to one of two connections switching a new file to WAL.
    # Before the fix this setup (6 processes x 60 new caches) failed 9 of 360 opens.
    import multiprocessing

    context = multiprocessing.get_context("fork")
    processes, rounds = 6, 60
    barrier, errors = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_open_fresh_caches_in_step,
                               args=(tmp_path, barrier, rounds, errors))
               for _ in range(processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert [w.exitcode for w in workers] == [0] * processes
    assert failures == []
    for i in range(rounds):
        with sqlite3.connect(tmp_path / f"cache{i}" / CACHE_FILE) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
