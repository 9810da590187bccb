"""`raypipe sft clean --ray`: the same verdicts as `judge`, for sets too large for one core.

The driver cuts the file into byte ranges at line ends (reading it once, a range at a
time). Workers read their ranges, parse, validate and apply the rules, and compute each
kept example's exact key and MinHash signature (and, with semantic dedup, its embedding,
in a pool of actors that load the model once). The driver then clusters only those
fixed-size values (16 bytes and `num_perm` x 4 bytes per example), and writes the
verdicts out in line order a batch at a time: it never holds the examples' text. Workers
read SOURCE by its path: on a cluster of several nodes it must be on storage every node
sees.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from raypipe.sft import dedup
from raypipe.sft.clean import Verdict, examine, mark, reject_row
from raypipe.sft.config import SftConfig
from raypipe.sft.rules import Rules
from raypipe.sft.schema import numbered

RANGE_BYTES = 8 << 20  # what one task reads and judges


def judge_batch(batch: pa.Table, cfg: SftConfig) -> pa.Table:
    """Lines (`line`, `text`) -> their schema and rule verdicts, dedup keys and signatures."""
    rules = Rules(cfg.rules)
    verdicts = [
        examine(line, text, cfg, rules)
        for line, text in zip(batch["line"].to_pylist(), batch["text"].to_pylist(), strict=True)
    ]
    texts = [v.example.text if v.example and not v.problems else "" for v in verdicts]
    near = cfg.dedup.near
    sigs = dedup.signatures(texts, near.num_perm, near.shingle_words)
    columns = {
        "reason": pa.array([v.reason for v in verdicts], pa.string()),
        "problems": pa.array([json.dumps(v.problems) for v in verdicts], pa.string()),
        "example": pa.array(texts, pa.string()),
        "key": pa.array(dedup.exact_keys(texts), pa.binary(16)),
        "signature": pa.FixedSizeListArray.from_arrays(sigs.ravel(), near.num_perm),
    }
    for name, values in columns.items():
        batch = batch.append_column(name, values)
    return batch


class EmbedBatch:
    """Adds `vector` (the example's embedding); loads the model once per actor."""

    def __init__(self, cfg: SftConfig):
        from raypipe.sft.semantic import Embedder

        self.embed = Embedder(cfg.dedup.semantic.model, cfg.dedup.semantic.batch_size)

    def __call__(self, batch: pa.Table) -> pa.Table:
        vectors = self.embed(batch["example"].to_pylist())
        flat = pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1])
        return batch.select(["line"]).append_column("vector", flat)


def ranges(source: Path, size: int = RANGE_BYTES) -> list[dict[str, int]]:
    """Byte ranges of `source` of about `size`, each ending at a line end, with the number
    of its first line."""
    cuts, start, line = [], 0, 1
    with open(source, "rb") as handle:
        while block := handle.read(size):
            block += handle.readline()
            cuts.append({"start": start, "end": start + len(block), "first": line})
            start, line = start + len(block), line + block.count(b"\n")
    return cuts


def judge_ranges(batch: pa.Table, source: str, cfg: SftConfig) -> pa.Table:
    """The non-blank lines of each byte range of `batch`, read here, judged (judge_batch)."""
    lines, texts = [], []
    for cut in batch.to_pylist():
        with open(source, "rb") as handle:
            handle.seek(cut["start"])
            raw = io.BytesIO(handle.read(cut["end"] - cut["start"]))
        for line, text in numbered(raw, cut["first"]):
            lines.append(line)
            texts.append(text)
    return judge_batch(pa.table({"line": pa.array(lines, pa.int64()), "text": texts}), cfg)


def _column(ds: Any, names: list[str]) -> pa.Table:
    """The columns `names` of a dataset, on the driver, in line order."""
    ds = ds.select_columns(names)
    parts = list(ds.iter_batches(batch_format="pyarrow", batch_size=None))
    if not parts:  # every example rejected: an empty table of the columns' types
        return ds.schema().base_schema.empty_table()
    return pa.concat_tables(parts).sort_by("line")


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A column of equal-length lists as an [n, length] array, without a Python loop (Ray
    may hand fixed-size lists back as plain lists)."""
    rows = column.combine_chunks()
    if not len(rows):
        return np.empty((0, 0), np.float32)
    return rows.flatten().to_numpy().reshape(len(rows), -1)


def _duplicates(judged: Any, cfg: SftConfig) -> dict[int, tuple[str, int]]:
    """line -> (reason, keeper line) of every duplicate among the examples that passed."""
    from ray.data import ActorPoolStrategy
    from ray.data.expressions import col

    alive = judged.filter(expr=col("reason").is_null())
    keys = _column(alive, ["line", "key", "signature"])
    lines = keys["line"].to_numpy()
    verdicts = [Verdict(int(line), "") for line in lines]
    if cfg.dedup.exact.enabled:
        mark(
            verdicts,
            "duplicate:exact",
            lambda rows: dedup.exact_pairs([keys["key"][i].as_py() for i in rows]),
        )
    if cfg.dedup.near.enabled:
        sigs = _matrix(keys["signature"])
        mark(
            verdicts,
            "duplicate:near",
            lambda rows: dedup.near_pairs(sigs[rows], cfg.dedup.near.threshold),
        )
    if cfg.dedup.semantic.enabled:
        survivors = {v.line for v in verdicts if not v.problems}
        embedded = _column(
            alive.filter(lambda row: row["line"] in survivors).map_batches(
                EmbedBatch,
                fn_constructor_args=(cfg,),
                batch_format="pyarrow",
                compute=ActorPoolStrategy(size=1),
            ),
            ["line", "vector"],
        )
        vectors = _matrix(embedded["vector"])
        position = {line: i for i, line in enumerate(embedded["line"].to_pylist())}
        semantic = cfg.dedup.semantic
        mark(
            verdicts,
            "duplicate:semantic",
            lambda rows: dedup.semantic_pairs(
                vectors[[position[verdicts[r].line] for r in rows]],
                semantic.threshold,
                semantic.nprobe,
            ),
        )
    return {v.line: (v.reason, v.duplicate_of) for v in verdicts if v.problems}


def run(source: Path, out: Path, cfg: SftConfig) -> dict[str, Any]:
    """Judge `source` on the connected Ray cluster; write kept lines, rejects and counts."""
    import ray.data

    cuts = ranges(source)
    judged = (
        ray.data.from_items(cuts, override_num_blocks=max(1, len(cuts)))
        .map_batches(
            judge_ranges,
            fn_kwargs={"source": str(source.resolve()), "cfg": cfg},
            batch_format="pyarrow",
            batch_size=1,
        )
        .materialize()
    )
    duplicates = _duplicates(judged, cfg)
    rejects = out.with_name(f"{out.stem}.rejects.jsonl")
    counts: Counter[str] = Counter()
    examples = 0
    ordered = judged.select_columns(["line", "text", "problems"]).sort("line")
    with open(out, "w", encoding="utf-8") as kept, open(rejects, "w", encoding="utf-8") as bad:
        for batch in ordered.iter_batches(batch_format="pyarrow"):
            for row in batch.to_pylist():
                examples += 1
                verdict = Verdict(row["line"], row["text"], problems=json.loads(row["problems"]))
                if row["line"] in duplicates:
                    reason, verdict.duplicate_of = duplicates[row["line"]]
                    verdict.problems.append((reason, f"duplicate of line {verdict.duplicate_of}"))
                if not verdict.problems:
                    kept.write(row["text"] + "\n")
                    continue
                counts[verdict.reason] += 1
                bad.write(json.dumps(reject_row(verdict), ensure_ascii=False) + "\n")
    return {
        "examples": examples,
        "kept": examples - sum(counts.values()),
        "rejected": dict(counts.most_common()),
    }
