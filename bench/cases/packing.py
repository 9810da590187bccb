"""Packing utilization of concat (plain and with a split window) / best_fit / pad, and the
training loader's speed.

Input: the Gutenberg documents (2–20 KB each) tokenized with GPT-2, each followed by EOS,
in the seeded order the pipeline packs them in. Utilization = non-padding tokens /
positions. Packing and the loader (reading the concat shard back: one rank, batches of 8)
are timed in CPU seconds of this process, so a busy machine does not understate one core.
"""

from __future__ import annotations

import json
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.common import Measurement, iter_jsonl_zst, ratio_table, shared
from raypipe.boundary import boundary_table
from raypipe.io import storage
from raypipe.loader import Loader
from raypipe.pack import STRATEGIES, pack
from raypipe.shards import write_shard
from raypipe.shuffle import order_key
from raypipe.stages.tokenize import Tokenize

INPUT = "bench/gutenberg_en_docs.jsonl.zst"
SEQ_LEN = 2048
BUFFER = 4096
WINDOW = 64  # concat's split window: documents cut after a sentence end in the last 64 tokens
BATCH = 8
QUICK_BYTES = 8_000_000
# What 8 GPUs training a 125M-parameter GPT (12 layers, d_model 768, seq 2048) consume:
# 6N + 12 * layers * d_model * seq FLOPs per token (PaLM appendix B), on H100 SXM at
# 989 TFLOP/s dense bf16 and 50% model FLOPs utilization (generous for a model this small,
# so the demand is an upper bound).
PARAMS, LAYERS, D_MODEL = 125e6, 12, 768
FLOPS_PER_TOKEN = 6 * PARAMS + 12 * LAYERS * D_MODEL * SEQ_LEN
GPU_FLOPS, MFU, GPUS = 989e12, 0.5, 8


def _tokens(quick: bool) -> tuple[np.ndarray, np.ndarray, Tokenize, int]:
    rows = list(iter_jsonl_zst(shared(INPUT), QUICK_BYTES if quick else None))
    docs = pa.table(
        {"uid": np.arange(len(rows), dtype=np.int64), "text": [r["text"] for r in rows]}
    )
    tokenize = Tokenize("gpt2", None)
    table = pa.concat_tables(tokenize(docs.slice(i, 512)) for i in range(0, len(docs), 512))
    table = table.take(pa.array(np.argsort(order_key(table["uid"].to_numpy(), 0))))
    flat = pc.list_flatten(table["tokens"]).to_numpy().astype(np.uint16)
    return flat, table["n_tokens"].to_numpy(), tokenize, len(rows)


def _loader_runs(packed, repeats: int = 3) -> Measurement:
    with tempfile.TemporaryDirectory() as out:
        entry = write_shard(out, "shard-00000", packed, 0)
        manifest = {
            "seq_len": SEQ_LEN,
            "shards": [entry],
            "config": {"output": {"format": "native"}},
        }
        storage.write_atomic(storage.join(out, "manifest.json"), json.dumps(manifest).encode())
        loader = Loader(out, batch_size=BATCH)
        result = Measurement(f"raypipe.loader (1 rank, batch {BATCH}, 1 core)", packed.tokens.size)
        for run in range(repeats + 1):
            cpu = time.process_time()
            for _ in loader:
                pass
            if run:  # the first epoch warms the page cache
                result.seconds.append(time.process_time() - cpu)
    return result


def run(quick: bool) -> str:
    flat, lengths, tokenize, documents = _tokens(quick)
    eos, boundary = tokenize.loaded.eos_id, boundary_table(tokenize.loaded)
    lines = [
        "| strategy | sequences | utilization | split documents | packing M tokens per CPU s |",
        "|---|---:|---:|---:|---:|",
    ]
    packed_by = {}
    variants = [(strategy, 0) for strategy in STRATEGIES]
    variants.insert(1, ("concat", WINDOW))
    for strategy, window in variants:
        name = f"{strategy}, split_window {window}" if window else strategy
        started = time.process_time()
        packed = pack(flat, lengths, SEQ_LEN, eos, strategy, BUFFER, window, boundary)
        seconds = time.process_time() - started
        packed_by[name] = packed
        lines.append(
            f"| {name} | {packed.tokens.shape[0]:,} | "
            f"{packed.n_valid / packed.tokens.size:.4%} | {packed.split_documents:,} | "
            f"{len(flat) / seconds / 1e6:,.1f} |"
        )
    demand = GPUS * GPU_FLOPS * MFU / FLOPS_PER_TOKEN
    rows = [
        _loader_runs(packed_by["concat"]),
        Measurement(f"demand of {GPUS} H100 training a 125M model (computed)", demand, [1.0]),
    ]
    loader_table = ratio_table("positions/s", rows, rows[1].system)
    scope = f"first {QUICK_BYTES / 1e6:.0f} MB of text" if quick else "all of it"
    return "\n".join(
        [
            "## Packing and the training loader",
            "",
            f"Input: `{INPUT}` ({scope}: {documents:,} documents, {len(flat):,} GPT-2 tokens "
            f"with EOS, median document {int(np.median(lengths)):,} tokens), seq_len "
            f"{SEQ_LEN}, best_fit buffer {BUFFER} documents, one shard.",
            "",
            *lines,
            "",
            f"With split_window {WINDOW}, a document crossing a sequence end is cut after the "
            f"last paragraph or sentence end (or EOS) in the sequence's final {WINDOW} tokens "
            "and the rest of the sequence padded: the utilization given up for splits that "
            "fall on sentence boundaries. Its packing time includes finding every boundary "
            "token in the stream; the boundary table, built once from the vocabulary, is not "
            "timed.",
            "",
            "Loader: every sequence of the concat shard once per epoch, shuffled, with "
            "labels, position_ids and cu_seqlens; rate per CPU second of its process "
            "(median of 3 epochs after one warm-up).",
            "",
            loader_table,
            "",
            f"Demand: {FLOPS_PER_TOKEN / 1e9:.2f} GFLOP per token (6N + 12·layers·d·seq) at "
            f"{GPU_FLOPS / 1e12:.0f} TFLOP/s x {MFU:.0%} MFU per GPU = "
            f"{demand / GPUS:,.0f} tokens/s per GPU.",
        ]
    )
