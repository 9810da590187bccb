"""Exact duplicates: identical cleaned text, one deterministic keeper per group.

Phase 1 gives each document a content hash and a keeper rank; phase 2 routes hashes to
partitions and, inside each, keeps the copy with the smallest (rank, uid) — the same
answer whatever the task order, retries or partitioning.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from raypipe.batch import DOCUMENT_KEYS, alive, set_column
from raypipe.config import DedupConfig

HASH_BYTES = 16  # first 128 bits of SHA-256: no collision at any corpus size


def content_hash(texts: list[str]) -> pa.FixedSizeBinaryArray:
    return pa.array(
        [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()[:HASH_BYTES] for t in texts],
        pa.binary(HASH_BYTES),
    )


def hash_words(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 128-bit hashes as an [n, 2] uint64 array (big-endian words, so order matches bytes)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    raw = np.frombuffer(column.buffers()[1], dtype=">u8")
    start = column.offset * 2
    return raw[start : start + 2 * len(column)].reshape(-1, 2).astype(np.uint64)


class DedupKeys:
    """Adds `text_hash` and `rank` (lower survives) to every document."""

    name = "dedup_keys"

    def __init__(self, cfg: DedupConfig):
        self.cfg = cfg

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = batch["text"].to_pylist()
        batch = set_column(batch, "text_hash", content_hash(texts))
        if self.cfg.keeper == "longest":
            rank = -np.fromiter(map(len, texts), np.int64, len(texts))
        else:
            rank = np.zeros(len(texts), np.int64)
        # Source priority outranks the keeper policy: (priority << 40) - length stays ordered.
        priority = {name: i for i, name in enumerate(self.cfg.source_priority)}
        unlisted = len(priority)
        tiers = [priority.get(source, unlisted) for source in batch["source"].to_pylist()]
        rank = rank + (np.asarray(tiers, np.int64) << 40)
        return set_column(batch, "rank", pa.array(np.where(alive(batch), rank, 0)))


def exact_duplicates(group: pa.Table) -> pa.Table:
    """Rows (uid, id, source, url, duplicate_of) of every non-keeper among identical hashes."""
    words = hash_words(group["text_hash"])
    uid = group["uid"].to_numpy()
    order = np.lexsort((uid, group["rank"].to_numpy(), words[:, 1], words[:, 0]))
    sorted_words = words[order]
    new_run = np.ones(len(order), bool)
    new_run[1:] = (sorted_words[1:] != sorted_words[:-1]).any(axis=1)
    keeper_pos = np.maximum.accumulate(np.where(new_run, np.arange(len(order)), 0))
    dropped = order[~new_run]
    keepers = order[keeper_pos[~new_run]]
    ids = group["id"]
    return pa.table(
        {
            "uid": pa.array(uid[dropped], pa.int64()),
            **{key: group[key].take(pa.array(dropped, pa.int64())) for key in DOCUMENT_KEYS},
            "duplicate_of": ids.take(pa.array(keepers, pa.int64())),
        }
    )
