"""Gopher's quality and repetition rules (Rae et al. 2021, "Scaling Language Models",
appendix A.1.1 and table A1), counted the way datatrove counts them."""

from __future__ import annotations

import re

import numpy as np

from raypipe.config import GopherQualityConfig, GopherRepetitionConfig
from raypipe.quality.words import symbols

_PARAGRAPH_BREAK = re.compile(r"\n{2,}")
_LINE_BREAK = re.compile(r"\n+")


def quality_reason(text: str, words: list[str], cfg: GopherQualityConfig) -> str | None:
    """Too short or long, odd word lengths, symbol-heavy, list-like or without English
    function words."""
    marks = symbols()
    real = [w for w in words if not marks.issuperset(w)]  # words that are not pure symbols
    if len(real) < cfg.min_words:
        return "gopher_quality:min_words"
    if len(real) > cfg.max_words:
        return "gopher_quality:max_words"
    if real:
        mean_length = sum(map(len, real)) / len(real)
        if not cfg.min_mean_word_length <= mean_length <= cfg.max_mean_word_length:
            return "gopher_quality:mean_word_length"
    if not words:
        return None
    if text.count("#") / len(words) > cfg.max_hash_ratio:
        return "gopher_quality:hash_ratio"
    if (text.count("...") + text.count("…")) / len(words) > cfg.max_ellipsis_ratio:
        return "gopher_quality:ellipsis_ratio"
    lines = text.splitlines()
    bullets = sum(line.lstrip().startswith(("•", "-")) for line in lines)
    if bullets / len(lines) > cfg.max_bullet_lines:
        return "gopher_quality:bullet_lines"
    trailing = sum(line.rstrip().endswith(("...", "…")) for line in lines)
    if trailing / len(lines) > cfg.max_ellipsis_lines:
        return "gopher_quality:ellipsis_lines"
    # As written, punctuation tokens count as words: a page of dialogue (“ ’ , — each a
    # token) can fall below 0.8 although every real word has letters.
    counted = words if cfg.alpha_words_of == "tokens" else real
    alpha = sum(any(ch.isalpha() for ch in word) for word in counted)
    if counted and alpha / len(counted) < cfg.min_alpha_words:
        return "gopher_quality:alpha_words"
    if len(set(cfg.stop_words).intersection(words)) < cfg.min_stop_words:
        return "gopher_quality:stop_words"
    return None


def duplicates(parts: list[str]) -> tuple[int, int]:
    """How many parts repeat an earlier one, and their characters."""
    seen: set[str] = set()
    count = chars = 0
    for part in parts:
        if part in seen:
            count += 1
            chars += len(part)
        else:
            seen.add(part)
    return count, chars


def repetition_reason(text: str, words: list[str], cfg: GopherRepetitionConfig) -> str | None:
    """Repeated paragraphs, lines or word n-grams take too much of the text."""
    if not text:
        return "gopher_repetition:empty"
    paragraphs = _PARAGRAPH_BREAK.split(text.strip())
    count, chars = duplicates(paragraphs)
    if count / len(paragraphs) > cfg.dup_para_frac:
        return "gopher_repetition:dup_para_frac"
    if chars / len(text) > cfg.dup_para_char_frac:
        return "gopher_repetition:dup_para_char_frac"
    lines = _LINE_BREAK.split(text)
    count, chars = duplicates(lines)
    if count / len(lines) > cfg.dup_line_frac:
        return "gopher_repetition:dup_line_frac"
    if chars / len(text) > cfg.dup_line_char_frac:
        return "gopher_repetition:dup_line_char_frac"
    return _ngram_reason(words, len(text), cfg)


def _ngram_reason(words: list[str], text_chars: int, cfg: GopherRepetitionConfig) -> str | None:
    if len(words) < 2:
        return None
    vocabulary: dict[str, int] = {}
    ids = np.array([vocabulary.setdefault(w, len(vocabulary)) for w in words], np.int64)
    # ends[i] = characters of words[:i]; an n-gram's characters come from two lookups
    ends = np.concatenate([[0], np.cumsum([len(w) for w in words])])
    grams = ids  # grams[i] = id of the n-gram starting at word i (exact, no hashing)
    for n in range(2, max([*cfg.top_ngram_char_frac, *cfg.dup_ngram_char_frac], default=1) + 1):
        if len(words) < n:
            break
        pairs = grams[:-1] * (len(words) + 1) + ids[n - 1 :]
        _, grams = np.unique(pairs, return_inverse=True)
        spans = ends[n:] - ends[: len(grams)]  # characters of each n-gram, without spaces
        if n in cfg.top_ngram_char_frac:
            top = _top_chars(grams, spans + (n - 1))  # joined by spaces
            if top / text_chars > cfg.top_ngram_char_frac[n]:
                return f"gopher_repetition:top_{n}_gram"
        limit = cfg.dup_ngram_char_frac.get(n)
        if limit is not None and _repeated_chars(grams, spans, n) / text_chars > limit:
            return f"gopher_repetition:dup_{n}_gram"
    return None


def _top_chars(grams: np.ndarray, spans: np.ndarray) -> int:
    """Characters covered by the most frequent n-gram (ties: the one seen first)."""
    counts = np.bincount(grams)
    best = counts.max()
    first = int(np.flatnonzero(counts[grams] == best)[0])
    return int(spans[first]) * int(best)


def _repeated_chars(grams: np.ndarray, spans: np.ndarray, n: int) -> int:
    """Characters of n-grams that repeat an earlier one, scanning left to right and jumping
    past each repeat (so overlapping repeats are not counted twice). Only n-grams occurring
    more than once can repeat, so the scan visits just those."""
    counts = np.bincount(grams)
    seen: set[int] = set()
    chars, resume = 0, 0
    for i in np.flatnonzero(counts[grams] > 1).tolist():
        if i < resume:
            continue
        gram = int(grams[i])
        if gram in seen:
            chars += int(spans[i])
            resume = i + n
        else:
            seen.add(gram)
    return chars
