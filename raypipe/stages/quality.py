"""Quality filters: documents that are not prose a model should learn from."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from raypipe.batch import alive_texts, reject
from raypipe.config import HeuristicConfig, QualityConfig

_WORD = re.compile(r"\S+")
_SYMBOL = re.compile(r"[^\w\s]|_")


def heuristic_reason(text: str, cfg: HeuristicConfig) -> str | None:
    """The classic three: too few words, shouting, or mostly symbols."""
    words = _WORD.findall(text)
    if len(words) < cfg.min_words:
        return "heuristic:min_words"
    caps = sum(1 for word in words if word.isupper())
    if words and caps / len(words) > cfg.max_caps_word_ratio:
        return "heuristic:caps_words"
    visible = len(text) - sum(1 for ch in text if ch.isspace())
    if visible and len(_SYMBOL.findall(text)) / visible > cfg.max_symbol_ratio:
        return "heuristic:symbols"
    return None


class Quality:
    name = "quality"

    def __init__(self, cfg: QualityConfig):
        self.cfg = cfg

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows, texts = alive_texts(batch)
        if not self.cfg.heuristic.enabled or not len(rows):
            return batch
        reasons = np.full(batch.num_rows, None, dtype=object)
        reasons[rows] = [heuristic_reason(text, self.cfg.heuristic) for text in texts]
        return reject(batch, np.ones(batch.num_rows, bool), self.name, reasons)
