"""Dataset statistics: per shard while packing, merged into report.json at the end."""

from __future__ import annotations

import numpy as np


def shard_stats(
    valid_tokens: np.ndarray, doc_tokens: np.ndarray, doc_chars: np.ndarray, vocab_size: int
) -> dict:
    counts = np.bincount(valid_tokens, minlength=vocab_size)
    used = np.flatnonzero(counts)
    return {
        "token_ids": used.tolist(),
        "token_counts": counts[used].tolist(),
        "documents": len(doc_tokens),
        "doc_tokens": [int(doc_tokens.min(initial=0)), int(doc_tokens.max(initial=0))],
        "doc_chars": [int(doc_chars.min(initial=0)), int(doc_chars.max(initial=0))],
        "chars": int(doc_chars.sum()),
    }


def dataset_report(shards: list[dict], vocab_size: int, seq_len: int) -> dict:
    """The statistics users expect of a token dataset, from the shards' own statistics."""
    counts = np.zeros(vocab_size, np.int64)
    for shard in shards:
        np.add.at(counts, shard["stats"]["token_ids"], shard["stats"]["token_counts"])
    tokens = int(counts.sum())
    docs = sum(s["stats"]["documents"] for s in shards)
    sequences = sum(s["sequences"] for s in shards)
    chars = sum(s["stats"]["chars"] for s in shards)
    with_docs = [s["stats"] for s in shards if s["stats"]["documents"]]
    top = np.argsort(-counts, kind="stable")[:10]

    def span(key: str, index: int, pick) -> int:
        return int(pick(s[key][index] for s in with_docs)) if with_docs else 0

    return {
        "documents": docs,
        "characters": chars,
        "tokens": tokens,
        "unique_tokens": int(np.count_nonzero(counts)),
        "vocab_size": vocab_size,
        "vocab_utilization": float(np.count_nonzero(counts) / vocab_size),
        "chars_per_token": chars / tokens if tokens else 0.0,
        "doc_chars": {
            "min": span("doc_chars", 0, min),
            "mean": chars / docs if docs else 0.0,
            "max": span("doc_chars", 1, max),
        },
        "doc_tokens": {
            "min": span("doc_tokens", 0, min),
            "mean": tokens / docs if docs else 0.0,
            "max": span("doc_tokens", 1, max),
        },
        "sequences": sequences,
        "seq_len": seq_len,
        "sequence_utilization": tokens / (sequences * seq_len) if sequences else 0.0,
        "split_documents": sum(s["stats"].get("split_documents", 0) for s in shards),
        "top_tokens": [{"id": int(i), "count": int(counts[i])} for i in top if counts[i]],
    }
