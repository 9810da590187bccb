"""Seeded, order-independent assignment of documents to shards and positions in them.

A document's shard and its place inside the shard depend only on (uid, seed), so the
output is the same whatever order tasks ran in, and shards do not mirror source order.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(values: np.ndarray, seed: int) -> np.ndarray:
    """SplitMix64 finalizer over a whole array: a fast, well-spread 64-bit hash."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(seed + 1) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def shard_of(uids: np.ndarray, shards: int, seed: int) -> np.ndarray:
    return (mix64(uids, seed) % np.uint64(shards)).astype(np.int32)


def order_key(uids: np.ndarray, seed: int) -> np.ndarray:
    """Sort key that shuffles documents inside a shard (independent of `shard_of`)."""
    return mix64(uids, seed + 0x5EED)
