"""FineWeb's own rules (Penedo et al. 2024, section 3.3), for what Gopher and C4 miss:
pages of fragments, repeated boilerplate lines and lists."""

from __future__ import annotations

from raypipe.config import FineWebConfig
from raypipe.quality.gopher import duplicates
from raypipe.quality.words import sentence_marks


def fineweb_reason(text: str, words: list[str], cfg: FineWebConfig) -> str | None:
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return "fineweb:empty"
    marks = sentence_marks()
    if sum(line[-1] in marks for line in lines) / len(lines) < cfg.min_line_punct_ratio:
        return "fineweb:line_punct_ratio"
    short = sum(len(line) <= cfg.short_line_length for line in lines)
    if short / len(lines) > cfg.max_short_line_ratio:
        return "fineweb:short_line_ratio"
    if duplicates(lines)[1] / (len(text) - text.count("\n")) > cfg.max_dup_line_char_ratio:
        return "fineweb:char_dup_ratio"
    if words and text.count("\n") / len(words) > cfg.max_newline_word_ratio:
        return "fineweb:list_ratio"
    return None
