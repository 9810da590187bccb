"""Dataset statistics: per shard while packing, merged into report.json at the end."""

from __future__ import annotations

import numpy as np


class ShardStats:
    """A shard's statistics, gathered chunk by chunk as its documents are written."""

    def __init__(self, vocab_size: int) -> None:
        self.counts = np.zeros(vocab_size, np.int64)
        self.documents = self.chars = 0
        self.doc_tokens: list[int] = []  # [min, max] over the documents seen
        self.doc_chars: list[int] = []

    def add(self, valid_tokens: np.ndarray, doc_tokens: np.ndarray, doc_chars: np.ndarray) -> None:
        self.counts += np.bincount(valid_tokens, minlength=len(self.counts))
        if not len(doc_tokens):
            return
        self.documents += len(doc_tokens)
        self.chars += int(doc_chars.sum())
        self.doc_tokens = _span(self.doc_tokens, doc_tokens)
        self.doc_chars = _span(self.doc_chars, doc_chars)

    def as_dict(self) -> dict:
        used = np.flatnonzero(self.counts)
        return {
            "token_ids": used.tolist(),
            "token_counts": self.counts[used].tolist(),
            "documents": self.documents,
            "doc_tokens": self.doc_tokens or [0, 0],
            "doc_chars": self.doc_chars or [0, 0],
            "chars": self.chars,
        }


def _span(span: list[int], values: np.ndarray) -> list[int]:
    low, high = int(values.min()), int(values.max())
    return [min(low, span[0]), max(high, span[1])] if span else [low, high]


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
