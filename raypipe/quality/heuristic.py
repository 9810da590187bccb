"""The classic three: too few words, shouting, or mostly symbols."""

from __future__ import annotations

import re

from raypipe.config import HeuristicConfig

_WORD = re.compile(r"\S+")
_SYMBOL = re.compile(r"[^\w\s]|_")


def heuristic_reason(text: str, cfg: HeuristicConfig) -> str | None:
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
