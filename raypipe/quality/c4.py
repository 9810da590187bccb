"""C4's page cleaning (Raffel et al. 2020, section 2.2), in the order of its reference code
(TensorFlow Datasets `c4_utils.clean_page`): lines that are not sentences are removed, and a
page left with too few sentences, or showing placeholder text or code, is dropped."""

from __future__ import annotations

import re

from raypipe.config import C4Config
from raypipe.quality.words import WordSplitter, count_sentences
from raypipe.quality.wrapping import hard_wrapped, paragraphs

_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_TERMINAL = (".", "?", "!", '"', "'")
_POLICY = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


def clean_page(text: str, split: WordSplitter, cfg: C4Config) -> tuple[str | None, str]:
    """(reason the page is dropped or None, the page with only its sentence lines).

    With `unwrap`, the lines of hard-wrapped text are its paragraphs: line by line, C4 would
    drop the short last line of every paragraph, which ends its sentence (wrapping.py).
    """
    kept: list[str] = []
    sentences = 0
    lines = text.splitlines()
    if cfg.unwrap and hard_wrapped(lines):
        lines = paragraphs(lines)
    for raw in lines:
        line = raw.strip()
        words = line.split()
        if any(len(word) > cfg.max_word_length for word in words):
            continue
        line = _CITATION.sub("", line)
        if cfg.filter_no_terminal_punct and (not line.endswith(_TERMINAL) or line.endswith("...")):
            continue
        if len(words) < cfg.min_words_per_line:
            continue
        lower = line.lower()
        if "lorem ipsum" in lower:
            return "c4:lorem_ipsum", text
        if "javascript" in lower:
            continue
        if "{" in line:
            return "c4:curly_bracket", text
        if any(phrase in lower for phrase in _POLICY):
            continue
        if sentences < cfg.min_sentences:  # past the threshold the exact count is moot
            sentences += count_sentences(split(line))
        kept.append(line)
    if sentences < cfg.min_sentences:
        return "c4:min_sentences", text
    return None, "\n".join(kept).strip()
