"""Killing Ray workers mid-run does not change the output."""

import threading
import time

import pytest

from raypipe.config import build_config
from raypipe.pipeline import Pipeline
from tests.faults import kill_working, repeated_corpus, worker_pids

pytestmark = pytest.mark.ray


def config(corpus, out):
    return build_config(
        {"input": {"paths": [str(corpus)], "id_field": "id"}, "output": {"path": str(out)}},
        {
            "output.shard_tokens": 20_000,
            "pack.seq_len": 512,
            "ray.batch_docs": 32,
            "tokenize.batch_size": 32,
        },
    )


@pytest.fixture(scope="module")
def corpus_and_reference(local_ray, tmp_path_factory, mini_corpus_path):
    base = tmp_path_factory.mktemp("faults")
    corpus = repeated_corpus(mini_corpus_path, base / "corpus.jsonl", copies=12)
    reference = Pipeline(config(corpus, base / "reference"), log=lambda _: None).run()
    return corpus, reference


@pytest.mark.parametrize("victim", ["clean_files", "tokenize_block"])
def test_killing_a_worker_mid_run_changes_nothing(corpus_and_reference, tmp_path, victim):
    corpus, reference = corpus_and_reference
    result = {}
    runner = threading.Thread(
        target=lambda: result.update(Pipeline(config(corpus, tmp_path), log=lambda _: None).run())
    )
    runner.start()
    killed: list[int] = []
    deadline = time.time() + 120
    while not killed and runner.is_alive() and time.time() < deadline:
        if working := worker_pids(f"({victim})"):
            time.sleep(0.05)  # into its work, not yet past it (a task here lasts ~0.3 s)
            killed = kill_working(working, f"({victim})")
        time.sleep(0.05)
    runner.join(timeout=600)
    # Killed while running its task: the task's work was lost, so the same output below
    # means Ray ran it again and nothing was lost or written twice.
    assert killed, f"no worker was ever killed while running {victim}"
    assert [s["sha256"] for s in result["shards"]] == [s["sha256"] for s in reference["shards"]]
    assert result["rejected"] == reference["rejected"]
    assert result["documents_out"] == reference["documents_out"]
