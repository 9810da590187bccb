"""Percentile cuts: drop a share of a run's documents by a score, worst first
(`quality.perplexity.drop_worst`, `quality.classifier.drop_worst`), as CCNet and the
lesson's exercise cut by perplexity percentile rather than by a threshold picked from a
preview.

A cut runs after deduplication, over the documents left, so its share is of what would be
trained on. The k-th worst score is found exactly without gathering the scores in one
place: each score becomes an order-preserving 32-bit key (its float32 bits, turned so that
worse is larger), and two passes count keys in 65,536 bins, the first by their high 16
bits, the second, inside the one bin that holds the k-th, by their low 16 bits. With n
scored documents, the cut drops the floor(share x n) worst and any tied with the last of
them. Documents without a score (none reached the model) are never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from raypipe.config import QualityConfig

BINS = 1 << 16
SUFFIX = ":drop_worst"  # a cut's reason: `<filter>:drop_worst`


@dataclass(frozen=True)
class Cut:
    reason: str
    column: str  # the score column the filter wrote
    share: float
    higher_is_worse: bool


def cuts(cfg: QualityConfig) -> list[Cut]:
    """The cuts the quality options ask for, in the order of the filters."""
    found = []
    if cfg.enabled and cfg.perplexity.enabled and cfg.perplexity.drop_worst:
        found.append(Cut(f"perplexity{SUFFIX}", "bits_per_byte", cfg.perplexity.drop_worst, True))
    if cfg.enabled and cfg.classifier.enabled and cfg.classifier.drop_worst:
        found.append(Cut(f"classifier{SUFFIX}", "quality_score", cfg.classifier.drop_worst, False))
    return found


def stage_of(reason: str) -> str:
    """The stage a document listed after phase 1 is counted under: quality for a cut,
    dedup for a duplicate."""
    return "quality" if reason.endswith(SUFFIX) else "dedup"


def keys(scores: np.ndarray, higher_is_worse: bool) -> np.ndarray:
    """Order-preserving uint32 keys of float scores, larger = worse."""
    bits = scores.astype(np.float32).view(np.uint32)
    key = np.where(bits >> 31 == 1, ~bits, bits | np.uint32(1 << 31))
    return key if higher_is_worse else ~key


def score_of(key: int, higher_is_worse: bool) -> float:
    """The score a key stands for (the inverse of `keys`)."""
    key = np.uint32(key if higher_is_worse else ~np.uint32(key))
    bits = np.where(key >> 31 == 1, key & np.uint32((1 << 31) - 1), ~key)
    return float(np.asarray(bits, np.uint32).view(np.float32))


def keyed(batch: pa.Table, cut: Cut) -> pa.Table:
    """The scored rows of `batch` with their key (column `key`), the score column dropped."""
    scores = batch[cut.column].to_numpy(zero_copy_only=False).astype(np.float64)
    scored = ~np.isnan(scores)
    rows = batch.drop_columns([cut.column]).filter(pa.array(scored))
    return rows.append_column("key", pa.array(keys(scores[scored], cut.higher_is_worse)))


def histogram(key: np.ndarray, high: int | None) -> np.ndarray:
    """Counts of keys by their high 16 bits, or (given `high`) by the low 16 bits of the
    keys whose high bits are `high`."""
    if high is None:
        return np.bincount(key >> 16, minlength=BINS)
    return np.bincount(key[key >> 16 == high] & 0xFFFF, minlength=BINS)


def kth_worst(counts: np.ndarray, k: int) -> tuple[int, int]:
    """The bin holding the k-th largest key (k >= 1), and its rank inside that bin."""
    above = np.cumsum(counts[::-1])
    at = int(np.searchsorted(above, k))
    return BINS - 1 - at, k - (int(above[at - 1]) if at else 0)
