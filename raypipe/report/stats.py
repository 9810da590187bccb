"""Dataset statistics: per shard while packing, merged into report.json at the end."""

from __future__ import annotations

import numpy as np


class ShardStats:
    """A shard's statistics, gathered chunk by chunk as its documents are written."""

    def __init__(self, vocab_size: int) -> None:
        self.counts = np.zeros(vocab_size, np.int64)
        self.documents = self.chars = self.words = 0
        self.doc_tokens: list[int] = []  # [min, max] over the documents seen
        self.doc_chars: list[int] = []
        self.doc_words: list[int] = []

    def add(
        self,
        valid_tokens: np.ndarray,
        doc_tokens: np.ndarray,
        doc_chars: np.ndarray,
        doc_words: np.ndarray,
    ) -> None:
        self.counts += np.bincount(valid_tokens, minlength=len(self.counts))
        if not len(doc_tokens):
            return
        self.documents += len(doc_tokens)
        self.chars += int(doc_chars.sum())
        self.words += int(doc_words.sum())
        self.doc_tokens = _span(self.doc_tokens, doc_tokens)
        self.doc_chars = _span(self.doc_chars, doc_chars)
        self.doc_words = _span(self.doc_words, doc_words)

    def as_dict(self) -> dict:
        used = np.flatnonzero(self.counts)
        return {
            "token_ids": used.tolist(),
            "token_counts": self.counts[used].tolist(),
            "documents": self.documents,
            "doc_tokens": self.doc_tokens or [0, 0],
            "doc_chars": self.doc_chars or [0, 0],
            "doc_words": self.doc_words or [0, 0],
            "chars": self.chars,
            "words": self.words,
        }


def _span(span: list[int], values: np.ndarray) -> list[int]:
    low, high = int(values.min()), int(values.max())
    return [min(low, span[0]), max(high, span[1])] if span else [low, high]


# Where a token dataset's figures say something is wrong: English prose with a GPT-2-style
# vocabulary gives 3-5 characters per token (fewer: a tokenizer that does not fit the
# text's language or script, or text that is mostly digits or markup); packing that fills
# under 90% of each sequence wastes that share of every training step.
CHARS_PER_TOKEN = (3.0, 5.0)
MIN_UTILIZATION = 0.9


def warnings(report: dict) -> list[str]:
    """The report's figures outside the usual ranges, each with what it may mean."""
    found = []
    low, high = CHARS_PER_TOKEN
    if report["tokens"] and not low <= report["chars_per_token"] <= high:
        found.append(
            f"{report['chars_per_token']:.2f} characters per token, outside {low:g}-{high:g}: "
            "does the tokenizer fit the text's languages and scripts?"
        )
    utilization = report.get("sequence_utilization")
    if report["sequences"] and utilization is not None and utilization < MIN_UTILIZATION:
        found.append(
            f"sequences {utilization:.1%} full, under {MIN_UTILIZATION:.0%}: padding wastes "
            "that share of each step (pack.strategy, pack.seq_len)"
        )
    return found


def dataset_report(shards: list[dict], vocab_size: int, seq_len: int) -> dict:
    """The statistics users expect of a token dataset, from the shards' own statistics."""
    counts = np.zeros(vocab_size, np.int64)
    for shard in shards:
        np.add.at(counts, shard["stats"]["token_ids"], shard["stats"]["token_counts"])
    tokens = int(counts.sum())
    docs = sum(s["stats"]["documents"] for s in shards)
    sequences = sum(s["sequences"] for s in shards)
    chars = sum(s["stats"]["chars"] for s in shards)
    words = sum(s["stats"]["words"] for s in shards)
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
        "doc_words": {
            "min": span("doc_words", 0, min),
            "mean": words / docs if docs else 0.0,
            "max": span("doc_words", 1, max),
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
