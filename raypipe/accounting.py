"""Every input document accounted for: tallies of kept and rejected documents, by reason.

The tallies are computed per block, next to the data, and merged on the driver: only
counts ever travel, never documents.
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from raypipe.batch import alive

COUNT_PREFIX = "pii_"  # per-document count columns that stages add (summed here)


def tally_block(batch: pa.Table) -> pa.Table:
    """Counts of one block of cleaned documents, as a one-row table (JSON)."""
    live = alive(batch)
    rejected = Counter(r for r in batch["reason"].to_pylist() if r is not None)
    stages = Counter(s for s in batch["stage"].to_pylist() if s is not None)
    counts = {
        name[len(COUNT_PREFIX) :]: int(pc.sum(batch[name]).as_py() or 0)
        for name in batch.column_names
        if name.startswith(COUNT_PREFIX)
    }
    tally = {
        "documents": batch.num_rows,
        "kept": int(live.sum()),
        "kept_chars": int(pc.sum(pc.filter(batch["chars"], pa.array(live))).as_py() or 0),
        "rejected": dict(rejected),
        "rejected_by_stage": dict(stages),
        "masked": counts,
    }
    return pa.table({"tally": [json.dumps(tally)]})


def merge_tallies(tallies: list[str]) -> dict:
    total = {
        "documents": 0,
        "kept": 0,
        "kept_chars": 0,
        "rejected": Counter(),
        "rejected_by_stage": Counter(),
        "masked": Counter(),
    }
    for text in tallies:
        tally = json.loads(text)
        for key in ("documents", "kept", "kept_chars"):
            total[key] += tally[key]
        for key in ("rejected", "rejected_by_stage", "masked"):
            total[key].update(tally[key])
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in total.items()}
