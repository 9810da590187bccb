"""`raypipe dedup` on a real local Ray: ledger, manifest, and a killed shard actor."""

import json
import threading
import time

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from raypipe.cli import app
from tests.faults import actor_pids, kill_working, repeated_corpus

pytestmark = [pytest.mark.ray, pytest.mark.slow]
COPIES = 3


def dedup(corpus, out) -> None:
    """`raypipe dedup CORPUS --out OUT` in this process (it joins the session's Ray)."""
    args = ["dedup", str(corpus), "--out", str(out), "--set", "input.id_field=id"]
    result = CliRunner().invoke(app, [*args, "--set", "ray.batch_docs=32"])
    assert result.exit_code == 0, result.output


def near_rows(out) -> list[tuple[str, str]]:
    ledger = pq.read_table(out / "rejects").to_pylist()
    return sorted((r["id"], r["duplicate_of"]) for r in ledger if r["reason"] == "near_duplicate")


@pytest.fixture(scope="module")
def reference(local_ray, tmp_path_factory, mini_corpus_path):
    base = tmp_path_factory.mktemp("near")
    corpus = repeated_corpus(mini_corpus_path, base / "corpus.jsonl", copies=COPIES)
    dedup(corpus, base / "out")
    return corpus, base / "out", json.loads((base / "out" / "manifest.json").read_text())


def test_copies_of_a_page_keep_the_first_and_are_in_the_ledger(reference):
    _, out, manifest = reference
    rows = near_rows(out)
    removed = manifest["rejected"]["near_duplicate"]
    assert removed == len(rows) > 0
    # Every copy of a page is in the cluster of that page's copy 0, and a cluster keeps a
    # copy 0 (the first in input order). Distinct pages may share a cluster: the fixture's
    # GPL-2.0+ and GPL-2.0-only texts are near-identical.
    keeper_of = dict(rows)
    for doc, keeper in rows:
        first = doc.rsplit("~", 1)[0] + "~0"
        assert keeper.endswith("~0") and keeper_of.get(first, first) == keeper, (doc, keeper)
    assert sum(not doc.endswith("~0") for doc, _ in rows) >= len(rows) - 1
    near = manifest["near_duplicates"]
    assert sum(near["cluster_sizes"].values()) == near["clusters"]
    assert near["cluster_sizes"].get("3-4", 0) > 0  # the COPIES copies of a page
    kept_after_exact = manifest["documents_out"] + removed
    assert near["share_removed"] == pytest.approx(removed / kept_after_exact)
    kept = pq.read_table(out / "documents")
    assert kept.num_rows == manifest["documents_out"] and "minhash" not in kept.column_names
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )


def test_killing_a_shard_actor_mid_phase_changes_nothing(reference, tmp_path):
    corpus, out, _ = reference
    runner = threading.Thread(target=dedup, args=(corpus, tmp_path))
    runner.start()
    killed: list[int] = []
    deadline = time.time() + 300
    while not killed and runner.is_alive() and time.time() < deadline:
        # An actor is titled ray::ShardActor.METHOD() while a call runs.
        killed = kill_working(actor_pids("ShardActor")[:1], "ShardActor.")
        time.sleep(0.05)
    runner.join(timeout=600)
    # Killed inside a call: its tables were lost, so the same clusters below mean the
    # actor was restarted and its documents sent again.
    assert killed, "no shard actor was ever killed inside a call"
    assert near_rows(tmp_path) == near_rows(out)
