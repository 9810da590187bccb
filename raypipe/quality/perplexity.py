"""Perplexity: how surprising a document is to a language model of reference text.

The model is a byte n-gram model with interpolated absolute discounting (Ney et al. 1994):
it needs no tokenizer, so its score, in bits per byte of UTF-8, compares across languages
and tokenizers. Tables are dense (256^order entries), so scoring a document is one numpy
lookup and a sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

DISCOUNT = 0.75  # the usual absolute discount for counts >= 1
_FLUSH_BYTES = 32 << 20  # bytes of n-gram ids gathered before they are counted


def _grams(data: bytes, order: int) -> np.ndarray:
    """Id of the n-gram ending at each byte (the text starts after order-1 NUL bytes)."""
    padded = np.frombuffer(bytes(order - 1) + data, np.uint8).astype(np.int64)
    ids = np.zeros(len(data), np.int64)
    for k in range(order):
        ids = ids * 256 + padded[k : k + len(data)]
    return ids


def _smooth(counts: np.ndarray, order: int) -> np.ndarray:
    """log2 P(byte | previous order-1 bytes) for every n-gram, lower orders interpolated."""
    prob = np.full((1, 256), 1 / 256)
    for k in range(1, order + 1):
        table = counts.reshape(256 ** (order - k), 256**k).sum(0).reshape(-1, 256)
        total = table.sum(1, keepdims=True).astype(np.float64)
        types = (table > 0).sum(1, keepdims=True)
        lower = np.tile(prob, (256, 1)) if k > 1 else prob  # context minus its oldest byte
        seen = total > 0
        safe = np.where(seen, total, 1)
        prob = np.where(
            seen,
            np.maximum(table - DISCOUNT, 0) / safe + DISCOUNT * types / safe * lower,
            lower,
        )
    return np.log2(prob).astype(np.float32).reshape(-1)


class ByteLM:
    def __init__(self, order: int, log2p: np.ndarray):
        self.order, self.log2p = order, log2p

    @classmethod
    def train(cls, texts: Iterable[str], order: int = 3) -> ByteLM:
        counts = np.zeros(256**order, np.int64)
        pending: list[np.ndarray] = []
        size = 0
        for text in texts:
            pending.append(_grams(text.encode(), order))
            size += len(pending[-1])
            if size > _FLUSH_BYTES:
                counts += np.bincount(np.concatenate(pending), minlength=256**order)
                pending, size = [], 0
        if pending:
            counts += np.bincount(np.concatenate(pending), minlength=256**order)
        if not counts.any():
            raise ValueError("the reference corpus holds no text")
        return cls(order, _smooth(counts, order))

    def bits_per_byte(self, text: str) -> float | None:
        data = text.encode()
        if not data:
            return None
        return float(-self.log2p[_grams(data, self.order)].sum(dtype=np.float64) / len(data))

    def save(self, path: str | Path) -> None:
        with open(path, "wb") as out:  # a file object: numpy must not append ".npz"
            np.savez(out, order=self.order, log2p=self.log2p)

    @classmethod
    def load(cls, path: str | Path) -> ByteLM:
        try:
            with np.load(path) as data:
                return cls(int(data["order"]), data["log2p"])
        except (OSError, KeyError, ValueError) as error:
            raise ValueError(
                f"{path} is not a model written by `raypipe train-lm`: {error}"
            ) from None
