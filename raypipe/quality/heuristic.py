"""The classic three: too few words, shouting, or mostly symbols.

Script-aware where a whitespace view of text would call good prose garbage: combining marks
(the vowel signs of Devanagari, Bengali, Tamil, ...) are part of words, not symbols, and
text in scripts written without spaces has its words counted by ICU (raypipe.quality.scripts).
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from raypipe.config import HeuristicConfig
from raypipe.quality.scripts import icu_word_count, unspaced

_WORD = re.compile(r"\S+")
SPACE, WORD_CHAR, UPPER, NOT_UPPER = 1, 2, 4, 8  # character classes, as bits


def heuristic_reason(text: str, cfg: HeuristicConfig) -> str | None:
    """The rules' definition, one text at a time; `heuristic_reasons` computes the same."""
    words = _WORD.findall(text)
    if (icu_word_count(text) if unspaced(text) else len(words)) < cfg.min_words:
        return "heuristic:min_words"
    caps = sum(1 for word in words if word.isupper())
    if words and caps / len(words) > cfg.max_caps_word_ratio:
        return "heuristic:caps_words"
    over = len(text) - sum(ch.isspace() for ch in text) * (cfg.symbol_ratio_of == "visible")
    symbols = sum(1 for ch in text if not _classes(ch) & (SPACE | WORD_CHAR) or ch == "_")
    if over and symbols / over > cfg.max_symbol_ratio:
        return "heuristic:symbols"
    return None


def _classes(ch: str) -> int:
    """Python's own view of a character: `str.isspace`, a word character (regex `\\w` or
    a combining mark), and the two facts `str.isupper` looks at (an uppercase letter; a
    lowercase or titlecase one)."""
    word_char = re.fullmatch(r"\w", ch) is not None or unicodedata.category(ch)[0] == "M"
    return (
        SPACE * ch.isspace()
        | WORD_CHAR * word_char
        | UPPER * ch.isupper()
        | NOT_UPPER * (ch.islower() or unicodedata.category(ch) == "Lt")
    )


_ASCII = np.array([_classes(chr(c)) for c in range(128)], np.uint8)
_SEEN: dict[int, int] = {}  # classes of the non-ASCII characters met so far


def _classes_of(points: np.ndarray) -> np.ndarray:
    out = _ASCII[np.minimum(points, 127)]
    wide = points > 127
    if wide.any():
        unique, inverse = np.unique(points[wide], return_inverse=True)
        for point in unique.tolist():
            if point not in _SEEN:
                _SEEN[point] = _classes(chr(point))
        out[wide] = np.array([_SEEN[p] for p in unique.tolist()], np.uint8)[inverse]
    return out


def heuristic_reasons(texts: list[str], cfg: HeuristicConfig) -> list[str | None]:
    """`heuristic_reason` of every text, counted over the whole batch in numpy (several
    times faster than the definition's per-character Python)."""
    try:
        points = np.frombuffer("".join(texts).encode("utf-32-le"), np.uint32)
    except UnicodeEncodeError:  # a lone surrogate: only the definition can read it
        return [heuristic_reason(text, cfg) for text in texts]
    n = len(texts)
    lengths = np.fromiter(map(len, texts), np.int64, n)
    doc = np.repeat(np.arange(n), lengths)
    classes = _classes_of(points)
    visible = (classes & SPACE) == 0
    starts_doc = np.zeros(len(points), bool)
    starts_doc[(np.cumsum(lengths) - lengths)[lengths > 0]] = True
    after_space = np.ones(len(points), bool)
    after_space[1:] = ~visible[:-1]
    word_start = visible & (after_space | starts_doc)
    word = np.cumsum(word_start) - 1  # the word each character belongs to (if visible)
    n_words = int(word_start.sum())
    upper = np.bincount(word[visible & (classes & UPPER > 0)], minlength=n_words) > 0
    not_upper = np.bincount(word[visible & (classes & NOT_UPPER > 0)], minlength=n_words) > 0
    word_doc = doc[word_start]
    spaced_words = np.bincount(word_doc, minlength=n)
    caps = np.bincount(word_doc[upper & ~not_upper], minlength=n)
    words = spaced_words.copy()
    for i in np.unique(doc[points >= 0x0E00]).tolist():  # only these can hold such scripts
        if unspaced(texts[i]):
            words[i] = icu_word_count(texts[i])
    shown = np.bincount(doc[visible], minlength=n)
    symbols = (
        shown
        - np.bincount(doc[classes & WORD_CHAR > 0], minlength=n)
        + np.bincount(doc[points == ord("_")], minlength=n)
    )
    # Integer ratios as float64, as Python's int / int: the same decisions at the edges.
    shouting = caps / np.maximum(spaced_words, 1) > cfg.max_caps_word_ratio
    over = lengths if cfg.symbol_ratio_of == "all" else shown
    symbolic = symbols / np.maximum(over, 1) > cfg.max_symbol_ratio
    reasons: list[str | None] = [None] * n
    for i in range(n):
        if words[i] < cfg.min_words:
            reasons[i] = "heuristic:min_words"
        elif spaced_words[i] and shouting[i]:
            reasons[i] = "heuristic:caps_words"
        elif over[i] and symbolic[i]:
            reasons[i] = "heuristic:symbols"
    return reasons
