"""The phases of a run as Ray Data plans; `pipeline.py` strings them together.

Each phase reads the previous phase's committed checkpoint, publishes its own output
from inside its tasks (under names derived from the data, so retries rewrite rather
than duplicate) and returns only counts to the driver.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray.data

from raypipe import checkpoint, mix, progress
from raypipe.accounting import LEDGER, ledger_rows, merge_tallies, tally_block
from raypipe.batch import DOCUMENT_KEYS, alive, repeat_rows
from raypipe.boundary import boundary_table
from raypipe.config import ConfigError, PipelineConfig, RayConfig, Resources
from raypipe.cut import BINS, Cut, histogram, keyed, kth_worst, score_of, stage_of
from raypipe.dedup.exact import exact_duplicates, hash_words
from raypipe.io import storage
from raypipe.pack import Packing
from raypipe.runtime import actor_pool, cluster_cpus, sort_shuffle, workers
from raypipe.scatter import chunks_per_shard, write_cells
from raypipe.shards import committed_entries
from raypipe.shuffle import order_key, shard_of
from raypipe.stages.plan import Planned, pools
from raypipe.tokenizer import LoadedTokenizer
from raypipe.workers import (
    DocumentSource,
    InputFile,
    StageChain,
    clean_files,
    publish_shard,
    tokenize_block,
)

PART_DOCS = 4096  # documents per checkpoint file
# Up to this many duplicates (32 MB of uids) every task gets the whole sorted list; more
# go through a hash-shuffle anti-join, which moves the documents' text between nodes.
BROADCAST_DROPS = 4_000_000
TALLY_FANIN = 256  # tallies merged per task on the way to the driver
MERGE_CPUS = 0.25  # what merging a few hundred small JSON tallies takes
# What a packing task holds at most (a chunk, the packer's state, the boundaries of its
# shard), declared to Ray so that no more of them run on a node than its memory holds.
PACK_MEMORY = 1 << 30
INTERNAL_COLUMNS = ["uid", "stage", "reason", "text_hash", "rank", "chars", "minhash"]


def _collect(tallies: ray.data.Dataset) -> dict:
    """Merge per-part tallies in two streaming rounds, so the driver receives a handful.

    The rounds declare the fraction of a CPU they use, which also keeps Ray Data from fusing
    them into the tasks that write the parts: fused, those tasks would be bundled until they
    hold TALLY_FANIN rows, and a phase over few files would run in one task.
    """
    for _ in range(2):
        tallies = tallies.map_batches(
            _merge_rows, batch_size=TALLY_FANIN, batch_format="pyarrow", num_cpus=MERGE_CPUS
        )
    return merge_tallies([row["tally"] for row in tallies.take_all()])


def _merge_rows(batch: pa.Table) -> pa.Table:
    return pa.table({"tally": [json.dumps(merge_tallies(batch["tally"].to_pylist()))]})


def _checkpointed(
    docs: ray.data.Dataset, folder: str, tally: Callable, part_docs: int | None = PART_DOCS
) -> dict:
    """`docs` published as checkpoint parts of `part_docs` documents (None: one part per
    block, written in the task that made it); their merged tally."""
    written = docs.map_batches(
        checkpoint.write_part,
        fn_kwargs={"folder": folder, "tally": tally},
        batch_size=part_docs,
        batch_format="pyarrow",
    )
    return _collect(written)


# -- phase 1: read and clean -----------------------------------------------------------
def clean(
    files: list[InputFile],
    mixture: list[mix.Source],
    cfg: PipelineConfig,
    plan: Callable[[PipelineConfig], list[Planned]],
    folder: str,
) -> dict:
    plans = [plan(source.stages) for source in mixture]
    chain = pools(plans)
    counters = sorted({c for planned in sum(plans, []) for c in planned.counters})
    tally = partial(tally_block, counters=counters)
    if chain == [(0, None)]:  # every stage runs on plain CPUs: one task per file does it all
        todo = ray.data.from_items(
            [{"file": index} for index in range(len(files))], override_num_blocks=len(files)
        )
        written = todo.map_batches(
            clean_files,
            fn_kwargs={
                "files": files,
                "chain": partial(StageChain, mixture, plan, 0),
                "folder": folder,
                "tally": tally,
                "batch_docs": cfg.ray.batch_docs,
                "part_docs": PART_DOCS,
            },
            batch_size=1,
            batch_format="pyarrow",
        )
        return _collect(written)
    # Stages that declare resources run in actor pools of their own, between the read
    # tasks and the checkpoint.
    _fits(chain)
    docs = ray.data.read_datasource(DocumentSource(files, cfg.ray.batch_docs))
    for pool, resources in chain:
        reserve = {} if resources is None else resources.model_dump(exclude_none=True)
        docs = docs.map_batches(
            StageChain,
            fn_constructor_args=(mixture, plan, pool),
            compute=actor_pool(cfg.ray, share=len(chain)),
            batch_size=cfg.ray.batch_docs,
            batch_format="pyarrow",
            **reserve,
        )
    return _checkpointed(docs, folder, tally)


def _fits(chain: list[tuple[int, Resources | None]]) -> None:
    """Every pool holds an actor for the whole phase, and the read task needs its CPU beside
    them: Ray would otherwise wait forever for a CPU that never frees."""
    needed = 1 + sum(1 if resources is None else resources.num_cpus for _, resources in chain)
    if needed > cluster_cpus():
        raise ConfigError(
            f"stages: the document stages need {len(chain)} actor pools and a reader holding "
            f"{needed:g} CPUs at once, but the cluster has {cluster_cpus()}; place your stages "
            "next to each other (the same `after`), lower their resources.num_cpus, or add CPUs"
        )
    # A pool asking for GPUs a CPU-only cluster lacks would wait for them forever.
    gpus = max((r.num_gpus for _, r in chain if r is not None), default=0)
    if gpus > (have := ray.cluster_resources().get("GPU", 0)):
        raise ConfigError(
            f"stages: a stage declares resources.num_gpus={gpus:g}, but the cluster has "
            f"{have:g} GPUs; run it on a cluster with GPU nodes, or set num_gpus to 0"
        )


# -- phase 2: exact duplicates ---------------------------------------------------------
def deduplicate(clean_dir: str, folder: str, cfg: RayConfig) -> dict:
    """Exact duplicates among the checkpoint's live documents, listed in `folder`."""
    partitions = 4 * workers(cfg)
    with sort_shuffle():  # a dataset runs with the context it was built in
        keys = checkpoint.read(
            clean_dir, columns=["uid", *DOCUMENT_KEYS, "text_hash", "rank", "reason"]
        )
    keys = keys.map_batches(
        _partition_by_hash, fn_kwargs={"partitions": partitions}, batch_format="pyarrow"
    )
    drops = keys.groupby("partition", num_partitions=partitions).map_groups(
        exact_duplicates, batch_format="pyarrow"
    )
    return {"removed": _checkpointed(drops, folder, _count).get("rows", 0)}


def _count(batch: pa.Table) -> dict:
    return {"rows": batch.num_rows}


def _partition_by_hash(batch: pa.Table, partitions: int) -> pa.Table:
    batch = _alive_rows(batch).drop_columns(["reason"])
    progress.done(documents=batch.num_rows)
    words = hash_words(batch["text_hash"])
    return batch.append_column("partition", pa.array(words[:, 0] % np.uint64(partitions)))


def kept_documents(
    clean_dir: str,
    drop_dirs: list[str],
    dropped: int,
    cfg: RayConfig,
    columns: list[str] | None = None,
) -> ray.data.Dataset:
    """Alive documents of the checkpoint (their `columns`, else all), minus the `dropped`
    documents phase 2 listed."""
    docs = checkpoint.read(clean_dir, columns=columns)
    docs = docs.map_batches(_alive_rows, batch_format="pyarrow")
    if not drop_dirs:
        return docs
    drops = checkpoint.read(drop_dirs, columns=["uid"])
    if dropped > BROADCAST_DROPS:
        return docs.join(drops, join_type="left_anti", num_partitions=4 * workers(cfg), on=("uid",))
    # Few enough to send every task the sorted uids (8 bytes each): no shuffle of the text.
    uids = np.sort(np.concatenate([b["uid"] for b in drops.iter_batches(batch_format="numpy")]))
    if not len(uids):
        return docs
    return docs.map_batches(_not_dropped, fn_kwargs={"dropped": uids}, batch_format="pyarrow")


def _not_dropped(batch: pa.Table, dropped: np.ndarray) -> pa.Table:
    uids = batch["uid"].to_numpy()
    at = np.minimum(np.searchsorted(dropped, uids), len(dropped) - 1)
    return batch.filter(pa.array(dropped[at] != uids))


def _alive_rows(batch: pa.Table) -> pa.Table:
    return batch.filter(pa.array(alive(batch)))


# -- phase 2: percentile cuts ----------------------------------------------------------
def percentile_cut(
    clean_dir: str, drop_dirs: list[str], dropped: int, cut: Cut, folder: str, cfg: RayConfig
) -> dict:
    """The worst `cut.share` of the documents dedup left, by `cut.column`, listed in
    `folder` (raypipe.cut says how the k-th worst is found in two counting passes)."""
    columns = ["uid", *DOCUMENT_KEYS, cut.column, "reason"]
    scored_docs = kept_documents(clean_dir, drop_dirs, dropped, cfg, columns).map_batches(
        _keyed, fn_kwargs={"cut": cut}, batch_format="pyarrow"
    )
    counts = _histogram(scored_docs, None)
    scored = int(counts.sum())
    worst = math.floor(cut.share * scored)
    if not worst:
        return {"removed": 0, "scored": scored, "cut": None}
    high, rank = kth_worst(counts, worst)
    low, _ = kth_worst(_histogram(scored_docs, high), rank)
    at = high << 16 | low
    drops = scored_docs.map_batches(_at_or_worse, fn_kwargs={"key": at}, batch_format="pyarrow")
    removed = _checkpointed(drops, folder, _count).get("rows", 0)
    return {"removed": removed, "scored": scored, "cut": score_of(at, cut.higher_is_worse)}


def _keyed(batch: pa.Table, cut: Cut) -> pa.Table:
    return keyed(batch.drop_columns(["reason"]), cut)


def _histogram(scored_docs: ray.data.Dataset, high: int | None) -> np.ndarray:
    """Per-block key histograms (raypipe.cut.histogram) summed on the driver: a block
    sends its non-empty bins only."""
    total = np.zeros(BINS, np.int64)
    parts = scored_docs.map_batches(_bins, fn_kwargs={"high": high}, batch_format="pyarrow")
    for part in parts.iter_batches(batch_format="numpy"):
        np.add.at(total, part["bin"], part["count"])
    return total


def _bins(batch: pa.Table, high: int | None) -> pa.Table:
    counts = histogram(batch["key"].to_numpy(), high)
    bins = np.flatnonzero(counts)
    return pa.table({"bin": bins, "count": counts[bins]})


def _at_or_worse(batch: pa.Table, key: int) -> pa.Table:
    progress.done(documents=batch.num_rows)
    worse = batch.filter(pc.greater_equal(batch["key"], pa.scalar(key, pa.uint32())))
    nulls = pa.nulls(worse.num_rows, pa.string())
    return worse.drop_columns(["key"]).append_column("duplicate_of", nulls)


# -- phase 3: tokenize, mix, pack ------------------------------------------------------
def tokenize(docs: ray.data.Dataset, cfg: PipelineConfig, folder: str) -> dict:
    # No batch sizes in this chain: Ray Data fuses it with the read into one task per
    # checkpoint part (batch sizes would bundle parts into fewer, larger tasks).
    tokens = docs.select_columns(["uid", *DOCUMENT_KEYS, "text"]).map_batches(
        tokenize_block,
        fn_kwargs={
            "key": folder,
            "spec": cfg.tokenizer,
            "eos_token": cfg.eos_token,
            "batch_size": cfg.tokenize.batch_size,
        },
        batch_format="pyarrow",
    )
    tally = partial(token_tally, seed=cfg.seed)
    # No part is written when every document was rejected: then there is no source to count.
    return {"sources": {}} | _checkpointed(tokens, folder, tally, part_docs=None)


def token_tally(batch: pa.Table, seed: int) -> dict:
    """Per source: documents, tokens, characters, and tokens/documents by seeded draw."""
    sources = {}
    names = batch["source"].to_numpy(zero_copy_only=False)
    for name in np.unique(names):
        part = batch.filter(pa.array(names == name))
        uids, n_tokens = part["uid"].to_numpy(), part["n_tokens"].to_numpy()
        sources[str(name)] = {
            "documents": part.num_rows,
            "tokens": int(n_tokens.sum()),
            "chars": int(pc.sum(part["chars"]).as_py() or 0),
            "token_bins": mix.histogram(uids, n_tokens, seed),
            "doc_bins": mix.histogram(uids, np.ones(len(uids), np.int64), seed),
        }
    return {"sources": sources}


def layout(cfg: PipelineConfig, out_tokens: int) -> tuple[int, int]:
    """How many shards the run writes, and in how many chunks each is gathered."""
    shards = max(1, math.ceil(out_tokens / cfg.output.shard_tokens))
    return shards, chunks_per_shard(out_tokens / shards)


def scatter(
    cfg: PipelineConfig, tokens_dir: str, plan: dict, shards: int, chunks: int, folder: str
) -> dict:
    """Copies of each document (per the mixture plan) into their shard's cells."""
    copies = checkpoint.read(
        tokens_dir, columns=["uid", *DOCUMENT_KEYS, "tokens", "n_tokens", "chars", "words"]
    )
    written = copies.map_batches(
        _scatter_batch,
        fn_kwargs={
            "folder": folder,
            "plan": plan,
            "shards": shards,
            "chunks": chunks,
            "seed": cfg.seed,
        },
        batch_size=PART_DOCS,
        batch_format="pyarrow",
    )
    return _collect(written)


def _scatter_batch(
    batch: pa.Table, folder: str, plan: dict, shards: int, chunks: int, seed: int
) -> pa.Table:
    copies = _expand_copies(batch, plan, shards, seed)
    progress.done(documents=batch.num_rows)
    cells = 0
    if copies.num_rows:
        # Named after the batch's first document: a retried task rewrites its own file.
        name = f"cells-{int(batch['uid'][0].as_py()):020d}-{batch.num_rows}.parquet"
        cells = write_cells(copies, folder, name, chunks)
    return pa.table({"tally": [json.dumps({"copies": copies.num_rows, "cells": cells})]})


def pack(
    cfg: PipelineConfig,
    cells_dir: str,
    shards: int,
    chunks: int,
    loaded: LoadedTokenizer,
    run_fp: str,
) -> list[dict]:
    """Each shard gathered from the cells chunk by chunk, packed and published as it streams;
    shards a previous attempt of this run published are kept."""
    done = committed_entries(cfg.output.path, run_fp)
    todo = [{"group": group} for group in range(shards) if group not in done]
    entries = []
    if todo:
        written = ray.data.from_items(todo, override_num_blocks=len(todo)).map_batches(
            publish_shard,
            fn_kwargs={
                "cells": cells_dir,
                "chunks": chunks,
                "output": cfg.output.path,
                "vocab_size": loaded.vocab_size,
                "fingerprint": run_fp,
                "form": cfg.output.format,
                "packing": Packing(
                    cfg.pack.seq_len,
                    loaded.eos_id,
                    cfg.pack.strategy,
                    cfg.pack.buffer_docs,
                    cfg.pack.split_window,
                    # Decided once from the vocabulary, shipped to every packing task.
                    boundary_table(loaded) if cfg.pack.split_window else None,
                ),
            },
            batch_size=1,
            batch_format="pyarrow",
            memory=PACK_MEMORY,
        )
        entries = [json.loads(row["entry"]) for row in written.take_all()]
    return sorted([*done.values(), *entries], key=lambda e: e["group"])


def copy_counts(batch: pa.Table, plan: dict[str, tuple[float, int]], seed: int) -> np.ndarray:
    """How many times each document of the batch is written."""
    uids = batch["uid"].to_numpy()
    bins = mix.draw_bins(uids, seed)
    counts = np.ones(len(uids), np.int64)
    names = batch["source"].to_numpy(zero_copy_only=False)
    for name, (epochs, cut) in plan.items():
        mask = names == name
        counts[mask] = mix.copies(bins[mask], epochs, cut)
    return counts


def _expand_copies(batch: pa.Table, plan: dict, shards: int, seed: int) -> pa.Table:
    counts = copy_counts(batch, plan, seed)
    rows = np.repeat(np.arange(batch.num_rows), counts)
    copy_index = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    keys = mix.copy_keys(batch["uid"].to_numpy()[rows], copy_index, seed)
    batch = repeat_rows(batch, counts)
    batch = batch.append_column("group", pa.array(shard_of(keys, shards, seed)))
    return batch.append_column("order", pa.array(order_key(keys, seed)))


# -- without a tokenizer: cleaned documents ----------------------------------------------
def write_documents(docs: ray.data.Dataset, cfg: PipelineConfig) -> None:
    target = storage.join(cfg.output.path, "documents")
    storage.remove(target)
    docs = docs.map_batches(_public_columns, batch_format="pyarrow")
    if cfg.output.format == "jsonl":
        docs.write_json(target)
    else:
        docs.write_parquet(target)


def _public_columns(batch: pa.Table) -> pa.Table:
    progress.done(documents=batch.num_rows)
    return batch.drop_columns([c for c in INTERNAL_COLUMNS if c in batch.column_names])


# -- the rejects ledger ----------------------------------------------------------------
def write_ledger(
    out: str,
    clean_dir: str,
    drop_dirs: dict[str, str],
    tokens_dir: str | None,
    plan: dict,
    seed: int,
) -> None:
    target = storage.join(out, "rejects")
    storage.remove(target)
    rejects = checkpoint.read(clean_dir, columns=[*DOCUMENT_KEYS, "stage", "reason"])
    rejects = rejects.map_batches(_rejected_rows, batch_format="pyarrow")
    for reason, drop_dir in drop_dirs.items():  # reason -> the folder of its drops (phase 2)
        drops = checkpoint.read(drop_dir, columns=[*DOCUMENT_KEYS, "duplicate_of"])
        rejects = rejects.union(
            drops.map_batches(
                ledger_rows,
                fn_kwargs={"stage": stage_of(reason), "reason": reason},
                batch_format="pyarrow",
            )
        )
    if tokens_dir is not None and plan:
        unsampled = checkpoint.read(tokens_dir, columns=["uid", *DOCUMENT_KEYS])
        rejects = rejects.union(
            unsampled.map_batches(
                _not_sampled, fn_kwargs={"plan": plan, "seed": seed}, batch_format="pyarrow"
            )
        )
    rejects.write_parquet(target)
    if not storage.exists(target):  # nothing rejected: the ledger exists, empty
        storage.write_table(storage.join(target, "empty.parquet"), LEDGER.empty_table())


def _rejected_rows(batch: pa.Table) -> pa.Table:
    rejected = batch.filter(pc.invert(pa.array(alive(batch))))
    return rejected.append_column("duplicate_of", pa.nulls(rejected.num_rows, pa.string()))


def _not_sampled(batch: pa.Table, plan: dict, seed: int) -> pa.Table:
    unsampled = batch.filter(pa.array(copy_counts(batch, plan, seed) == 0))
    return ledger_rows(unsampled, "mix", "not_sampled")
