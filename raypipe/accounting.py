"""Every input document accounted for: tallies of kept and rejected documents, by reason.

The tallies are computed per block, next to the data, and merged on the driver: only
counts ever travel, never documents.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from raypipe.batch import DOCUMENT_KEYS, alive, counter_column

# The rejects ledger: one row per rejected document (the documents themselves are not kept).
LEDGER = pa.schema(
    [(name, pa.string()) for name in (*DOCUMENT_KEYS, "stage", "reason", "duplicate_of")]
)
LENGTH_BINS = 32  # kept documents by characters, bin k = [2^k, 2^(k+1))


def ledger_rows(rows: pa.Table, stage: str, reason: str) -> pa.Table:
    """Ledger rows of `rows` (with the document keys), all rejected by `stage` for `reason`."""
    n = rows.num_rows
    duplicate_of = (
        rows["duplicate_of"] if "duplicate_of" in rows.column_names else pa.nulls(n, pa.string())
    )
    return pa.table(
        {
            **{key: rows[key] for key in DOCUMENT_KEYS},
            "stage": pa.array([stage] * n, pa.string()),
            "reason": pa.array([reason] * n, pa.string()),
            "duplicate_of": duplicate_of,
        }
    )


def _by_source(batch: pa.Table, live: np.ndarray) -> dict:
    sources: dict[str, dict] = {}
    chars = batch["chars"].to_numpy()
    for source, kept, length in zip(batch["source"].to_pylist(), live, chars, strict=True):
        entry = sources.setdefault(source, {"documents": 0, "kept": 0, "kept_chars": 0})
        entry["documents"] += 1
        entry["kept"] += int(kept)
        entry["kept_chars"] += int(length) if kept else 0
    return sources


def _rejected_by_language(batch: pa.Table, live: np.ndarray) -> dict[str, dict[str, int]]:
    """Rejected documents per language and reason, for those language ID saw (documents
    rejected before it, by the reader or extraction, have no language)."""
    if "language" not in batch.column_names:
        return {}
    out: dict[str, dict[str, int]] = {}
    pairs = zip(batch["language"].to_pylist(), batch["reason"].to_pylist(), strict=True)
    for language, reason in pairs:
        if language is not None and reason is not None:
            by_reason = out.setdefault(language, {})
            by_reason[reason] = by_reason.get(reason, 0) + 1
    return out


def length_bins(chars: np.ndarray) -> list[int]:
    """Power-of-two histogram of document lengths in characters."""
    bins = np.floor(np.log2(np.maximum(chars, 1))).astype(np.int64)
    return np.bincount(np.minimum(bins, LENGTH_BINS - 1), minlength=LENGTH_BINS).tolist()


def tally_block(batch: pa.Table, counters: Sequence[tuple[str, str]] = ()) -> dict:
    """Counts of one block of cleaned documents; `counters` are the (stage, counter)
    pairs the run's stages declare, summed from their columns."""
    live = alive(batch)
    languages = (
        dict(Counter(pc.filter(batch["language"], pa.array(live)).to_pylist()))
        if "language" in batch.column_names
        else {}
    )
    counts: dict[str, dict[str, int]] = {}
    for stage, counter in counters:
        if (column := counter_column(stage, counter)) in batch.column_names:
            counts.setdefault(stage, {})[counter] = int(pc.sum(batch[column]).as_py() or 0)
    return {
        "documents": batch.num_rows,
        "kept": int(live.sum()),
        "kept_chars": int(pc.sum(pc.filter(batch["chars"], pa.array(live))).as_py() or 0),
        "rejected": dict(Counter(r for r in batch["reason"].to_pylist() if r is not None)),
        "rejected_by_stage": dict(Counter(s for s in batch["stage"].to_pylist() if s)),
        "counters": counts,
        "languages": languages,
        "rejected_by_language": _rejected_by_language(batch, live),
        "length_bins": length_bins(batch["chars"].to_numpy()[live]),
        "sources": _by_source(batch, live),
    }


def merge(total: Any, part: Any) -> Any:
    """Sum two tallies: nested dicts of counts, lists of counts summed element-wise."""
    if isinstance(total, dict):
        return {
            k: merge(total[k], part[k]) if k in total and k in part else total.get(k, part.get(k))
            for k in total.keys() | part.keys()
        }
    if isinstance(total, list):
        return [a + b for a, b in zip(total, part, strict=True)]
    return total + part


def merge_tallies(tallies: list[str]) -> dict:
    """One tally from the JSON tallies of many blocks."""
    return functools.reduce(merge, map(json.loads, tallies), {})


@dataclass(frozen=True)
class SourceTally:
    documents: int = 0
    kept: int = 0
    kept_chars: int = 0


@dataclass(frozen=True)
class CleanTally:
    """Phase 1 of a run, counted: every document read, kept or rejected and why. Block
    tallies travel as JSON (`tally_block`) and are merged on the driver; the merged one
    is read once, here, into fields (a run of no documents has the defaults)."""

    documents: int = 0
    kept: int = 0
    kept_chars: int = 0
    rejected: dict[str, int] = field(default_factory=dict)  # by reason
    rejected_by_stage: dict[str, int] = field(default_factory=dict)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # stage -> counter -> n
    languages: dict[str, int] = field(default_factory=dict)  # kept documents per language
    rejected_by_language: dict[str, dict[str, int]] = field(default_factory=dict)
    length_bins: list[int] = field(default_factory=lambda: [0] * LENGTH_BINS)
    sources: dict[str, SourceTally] = field(default_factory=dict)

    @classmethod
    def from_json(cls, merged: dict) -> CleanTally:
        sources = {name: SourceTally(**s) for name, s in merged.get("sources", {}).items()}
        return cls(**{**merged, "sources": sources})


@dataclass(frozen=True)
class NearTally:
    """Phase 2b, counted: near-duplicate clusters and what finding them cost."""

    documents: int  # documents with a signature sent to the shards
    removed: int  # documents removed as near duplicates of a kept one
    clusters: int
    cluster_sizes: dict[str, int]  # documents per cluster, binned ("2", "3-4", ...)
    candidate_edges: int  # document pairs that share a band
    edges: int  # pairs kept (verified against the threshold when `verify` is on)
    rounds: int  # label-propagation rounds until no label changed
    candidate_documents: int  # documents re-read to verify candidates
    shingle_bytes: int
    shard_bytes: int  # bucket tables held by the shard actors
    share_removed: float = 0.0  # of the documents left after exact dedup


@dataclass(frozen=True)
class SourceTokens:
    """One source's tokenized documents; bins are counts by seeded draw (raypipe.mix)."""

    documents: int
    tokens: int
    chars: int
    token_bins: list[int]
    doc_bins: list[int]


def tokens_by_source(merged: dict) -> dict[str, SourceTokens]:
    """Phase 3's tokenize tally, read once into fields."""
    return {name: SourceTokens(**s) for name, s in merged.get("sources", {}).items()}
