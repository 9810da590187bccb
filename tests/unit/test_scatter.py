"""Scatter to cells and gather by shard: a shard read back chunk by chunk is the shard
sorted by order key, whatever task wrote which document, and no chunk holds it all."""

import numpy as np
import pyarrow as pa

from raypipe.batch import repeat_rows
from raypipe.scatter import Gather, chunk_of, write_cells
from raypipe.shuffle import order_key, shard_of
from tests.batches import document_keys


def copies(uids: np.ndarray, shards: int, seed: int = 3) -> pa.Table:
    return pa.table(
        {
            "tokens": [[int(u), int(u) + 1] for u in uids],
            "n_tokens": np.full(len(uids), 2, np.int64),
            "chars": np.full(len(uids), 8, np.int64),
            "words": np.full(len(uids), 2, np.int64),
            "group": shard_of(uids, shards, seed),
            "order": order_key(uids, seed),
            **document_keys(len(uids)),
        }
    )


def test_chunks_are_equal_ranges_of_the_order_key_in_key_order():
    keys = np.sort(order_key(np.arange(10_000), 1))
    chunk = chunk_of(keys, 7)
    assert chunk.min() == 0 and chunk.max() == 6
    assert np.all(np.diff(chunk) >= 0)  # sorted keys: chunks in turn
    assert np.bincount(chunk).min() > 10_000 / 7 * 0.9


def test_a_shard_gathered_chunk_by_chunk_is_the_shard_sorted_by_order(tmp_path):
    uids, shards, chunks = np.arange(3_000), 3, 5
    everything = copies(uids, shards)
    for first in range(0, len(uids), 700):  # five scatter tasks, the last one smaller
        part = everything.slice(first, 700)
        write_cells(part, str(tmp_path), f"cells-{first:05d}.parquet", chunks)
    for group in range(shards):
        gathered = list(Gather(str(tmp_path), group, chunks))
        assert 1 < len(gathered) <= chunks
        assert max(c.num_rows for c in gathered) < len(uids) / shards / 2
        order = np.concatenate([c["order"].to_numpy() for c in gathered])
        mine = everything.filter(pa.compute.equal(everything["group"], group))
        assert order.tolist() == np.sort(mine["order"].to_numpy()).tolist()
        tokens = [t for c in gathered for t in c["tokens"].to_pylist()]
        assert sorted(tokens) == sorted(mine["tokens"].to_pylist())


def test_a_shard_with_no_document_gathers_nothing(tmp_path):
    write_cells(copies(np.arange(5), 1), str(tmp_path), "cells-0.parquet", 2)
    assert list(Gather(str(tmp_path), 4, 2)) == []


def test_repeat_rows_copies_each_row_its_count_in_order_across_chunks():
    chunked = pa.concat_tables(
        [
            pa.table({"uid": [0, 1], "tokens": [[1], [2, 3]]}),
            pa.table({"uid": [2], "tokens": [[4]]}),
        ]
    )
    counts = np.array([2, 0, 3])
    repeated = repeat_rows(chunked, counts)
    assert repeated.equals(chunked.take(pa.array([0, 0, 2, 2, 2])))
    assert repeat_rows(chunked, np.ones(3, np.int64)) is chunked  # once each: no copy
    assert repeat_rows(chunked, np.zeros(3, np.int64)).num_rows == 0
