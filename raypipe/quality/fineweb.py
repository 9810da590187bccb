"""FineWeb's own rules (Penedo et al. 2024, section 3.3), for what Gopher and C4 miss:
pages of fragments, repeated boilerplate lines and lists.

Two editions of the same code: `fineweb` is what built FineWeb v1 (datatrove 05194d3: blank
lines counted, a page dropped *at* a limit, only `. ' " ! ?` end a sentence line), `fineweb-2`
is datatrove since 8427759 (blank lines dropped, strict limits, the terminal punctuation of
every script).
"""

from __future__ import annotations

import operator

from raypipe.config import FineWebConfig
from raypipe.quality.gopher import duplicates
from raypipe.quality.words import sentence_marks
from raypipe.quality.wrapping import hard_wrapped, paragraphs

_V1_MARKS = frozenset(".'\"!?")


def fineweb_reason(text: str, words: list[str], cfg: FineWebConfig) -> str | None:
    v1 = cfg.edition == "fineweb"
    lines = text.split("\n")
    if cfg.unwrap and hard_wrapped(lines):
        lines = paragraphs(lines)  # the line rules' view of wrapped prose (wrapping.py)
    elif not v1:
        lines = [line for line in lines if line.strip()]
    if not lines:  # a blank page (FineWeb v1 counts its one empty line and drops it below)
        return "fineweb:empty"
    at_or_below, at_or_above = (operator.le, operator.ge) if v1 else (operator.lt, operator.gt)
    marks = _V1_MARKS if v1 else sentence_marks()
    ending = sum(bool(line) and line[-1] in marks for line in lines)
    if at_or_below(ending / len(lines), cfg.min_line_punct_ratio):
        return "fineweb:line_punct_ratio"
    short = sum(len(line) <= cfg.short_line_length for line in lines)
    if at_or_above(short / len(lines), cfg.max_short_line_ratio):
        return "fineweb:short_line_ratio"
    repeated = duplicates([line for line in lines if line.strip()])[1]
    if at_or_above(repeated / (len(text) - text.count("\n")), cfg.max_dup_line_char_ratio):
        return "fineweb:char_dup_ratio"
    if words and text.count("\n") / len(words) > cfg.max_newline_word_ratio:
        return "fineweb:list_ratio"
    return None
