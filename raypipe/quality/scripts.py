"""Scripts that write words without spaces between them (Chinese, Japanese, Thai, Lao,
Khmer, Myanmar): a whitespace count sees a whole sentence as one word there, so word
counts of such text come from ICU's dictionary-based word breaker instead."""

from __future__ import annotations

import re

# Han, kana, Thai, Lao, Myanmar, Khmer (and their extension blocks).
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0003134f]"
)


def unspaced(text: str) -> bool:
    return UNSPACED.search(text) is not None


def icu_word_count(text: str) -> int:
    """Words as ICU segments them: segments holding a letter or a digit (not spaces or
    punctuation)."""
    from icu4py.breakers import WordBreaker  # loaded on first use, on the worker

    return sum(1 for segment in WordBreaker(text, "und") if any(c.isalnum() for c in segment))
