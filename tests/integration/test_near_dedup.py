"""Near-duplicate removal on a real local Ray: ledger, manifest, and a killed shard actor."""

import threading
import time

import pyarrow.parquet as pq
import pytest

from raypipe.config import build_config
from raypipe.pipeline import Pipeline
from tests.faults import actor_pids, kill, repeated_corpus

pytestmark = pytest.mark.ray
COPIES = 3


def config(corpus, out):
    return build_config(
        {"input": {"paths": [str(corpus)], "id_field": "id"}, "output": {"path": str(out)}},
        {"tokenizer": None, "dedup.near.enabled": True, "ray.batch_docs": 32},
    )


def near_rows(out) -> list[tuple[str, str]]:
    ledger = pq.read_table(out / "rejects").to_pylist()
    return sorted((r["id"], r["duplicate_of"]) for r in ledger if r["reason"] == "near_duplicate")


@pytest.fixture(scope="module")
def reference(local_ray, tmp_path_factory, mini_corpus_path):
    base = tmp_path_factory.mktemp("near")
    corpus = repeated_corpus(mini_corpus_path, base / "corpus.jsonl", copies=COPIES)
    manifest = Pipeline(config(corpus, base / "out"), log=lambda _: None).run()
    return corpus, base / "out", manifest


def test_copies_of_a_page_keep_the_first_and_are_in_the_ledger(reference):
    _, out, manifest = reference
    rows = near_rows(out)
    removed = manifest["rejected"]["near_duplicate"]
    assert removed == len(rows) > 0
    # Every copy points at copy 0 of the same page (the first in input order).
    assert all(keeper == doc.rsplit("~", 1)[0] + "~0" for doc, keeper in rows)
    assert all(not doc.endswith("~0") for doc, _ in rows)
    near = manifest["near_duplicates"]
    assert sum(near["cluster_sizes"].values()) == near["clusters"]
    assert near["cluster_sizes"].get(str(COPIES), 0) > 0
    kept_after_exact = manifest["documents_out"] + removed
    assert near["share_removed"] == pytest.approx(removed / kept_after_exact)
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )


def test_killing_a_shard_actor_mid_phase_changes_nothing(reference, tmp_path):
    corpus, out, _ = reference
    runner = threading.Thread(
        target=lambda: Pipeline(config(corpus, tmp_path), log=lambda _: None).run()
    )
    runner.start()
    killed = []
    deadline = time.time() + 300
    while not killed and runner.is_alive() and time.time() < deadline:
        killed = actor_pids("ShardActor")[:1]
        time.sleep(0.05)
    kill(killed)
    runner.join(timeout=600)
    assert killed, "no shard actor was ever seen"
    assert near_rows(tmp_path) == near_rows(out)
