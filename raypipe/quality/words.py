"""Words as the published quality rules count them.

Gopher, C4 and FineWeb thresholds were tuned on a particular word split; datatrove (the
reference implementation) uses spaCy's English tokenizer rules: split on whitespace, then
peel punctuation, clitics ("do", "n't") and special cases off each chunk. The rules are
spaCy's own (so the counts match), but a document is never handed to spaCy whole: each
distinct whitespace chunk is split once per worker and cached, and the chunks that no rule
can touch (letters only, digits only) skip spaCy altogether. Text is Zipfian, so almost every
chunk is a cache hit.
"""

from __future__ import annotations

import string
import unicodedata
from functools import cache, lru_cache

_CACHE_LIMIT = 500_000  # distinct chunks kept per worker (a few tens of MB)


class WordSplitter:
    """Splits text into words exactly as spaCy's blank English pipeline does."""

    def __init__(self) -> None:
        import spacy  # heavy: imported only when a rule that counts words is enabled

        self._tokenizer = spacy.blank("en").tokenizer
        self._special = frozenset(self._tokenizer.rules)
        self._chunks: dict[str, tuple[str, ...]] = {}

    def chunk(self, chunk: str) -> tuple[str, ...]:
        """The words of one whitespace-free chunk."""
        words = self._chunks.get(chunk)
        if words is None:
            if (chunk.isalpha() or chunk.isdigit()) and chunk not in self._special:
                words = (chunk,)
            else:
                words = tuple(token.text for token in self._tokenizer(chunk))
            if len(self._chunks) >= _CACHE_LIMIT:
                self._chunks.clear()
            self._chunks[chunk] = words
        return words

    def __call__(self, text: str) -> list[str]:
        words: list[str] = []
        for chunk in text.split():
            words.extend(self.chunk(chunk))
        return words


@cache
def splitter() -> WordSplitter:
    """The worker's one splitter (its cache is shared by every rule and batch)."""
    return WordSplitter()


@lru_cache(maxsize=1 << 16)
def is_punct(word: str) -> bool:
    """Every character is Unicode punctuation (spaCy's `is_punct`)."""
    return all(unicodedata.category(ch).startswith("P") for ch in word)


@cache
def sentence_marks() -> frozenset[str]:
    """Sentence-final punctuation of every script (. ! ? । 。 ...), as spaCy's sentencizer
    knows it."""
    from spacy.pipeline import Sentencizer

    return frozenset(Sentencizer.default_punct_chars)


@cache
def symbols() -> frozenset[str]:
    """Characters a word made only of is a symbol, not a word (Gopher's word count)."""
    controls = {chr(c) for c in [*range(9), *range(11, 32), *range(127, 160)]}
    wide = "—–“”„’«»…►´∶、━【】「」，；（）。？！：～《》〈〉．％１"  # noqa: RUF001
    return frozenset(string.punctuation + wide) | controls | sentence_marks()


def count_sentences(words: list[str]) -> int:
    """Sentences as spaCy's rule-based sentencizer cuts them: a new one starts at the first
    word that is not punctuation after a sentence mark (". ! ?" and their kin)."""
    if not words:
        return 0
    marks, sentences, seen_mark = sentence_marks(), 1, False
    for word in words:
        if word in marks:
            seen_mark = True
        elif seen_mark and not is_punct(word):
            sentences += 1
            seen_mark = False
    return sentences
