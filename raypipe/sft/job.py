"""`raypipe sft clean --ray`: the same verdicts as `judge`, for sets too large for one core.

Workers parse, validate and apply the rules to batches of lines and compute each kept
example's exact key and MinHash signature (and, with semantic dedup, its embedding, in a
pool of actors that load the model once). The driver then clusters only those small
per-example values, so it never holds the examples' text, and streams the verdicts out.
"""

from __future__ import annotations

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
from raypipe.sft.schema import read_lines

BATCH_LINES = 4_096


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
        "problems": pa.array([json.dumps(v.problems) for v in verdicts]),
        "example": pa.array(texts),
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


def _chunks(source: Path) -> list[pa.Table]:
    lines, texts, chunks = [], [], []
    for line, text in read_lines(source):
        lines.append(line)
        texts.append(text)
        if len(lines) == BATCH_LINES:
            chunks.append(pa.table({"line": lines, "text": texts}))
            lines, texts = [], []
    if lines:
        chunks.append(pa.table({"line": lines, "text": texts}))
    return chunks


def _column(ds: Any, names: list[str]) -> pa.Table:
    """The columns `names` of a dataset, on the driver, in line order."""
    parts = list(ds.select_columns(names).iter_batches(batch_format="pyarrow", batch_size=None))
    table = pa.concat_tables(parts) if parts else pa.table({n: [] for n in names})
    return table.sort_by("line")


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A column of equal-length lists as an [n, length] array, without a Python loop (Ray
    may hand fixed-size lists back as plain lists)."""
    rows = column.combine_chunks()
    return rows.flatten().to_numpy().reshape(len(rows), -1)


def _duplicates(judged: Any, cfg: SftConfig) -> dict[int, tuple[str, int]]:
    """line -> (reason, keeper line) of every duplicate among the examples that passed."""
    from ray.data import ActorPoolStrategy

    alive = judged.filter(lambda row: row["reason"] is None)
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

    judged = (
        ray.data.from_arrow(_chunks(source))
        .map_batches(judge_batch, fn_kwargs={"cfg": cfg}, batch_format="pyarrow", batch_size=None)
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
