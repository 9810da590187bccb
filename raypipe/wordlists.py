"""Word lists per language and the share of a text's words they cover.

Words are runs of letters, marks and digits in any script (so Devanagari vowel signs and
Arabic diacritics stay inside their word); scripts written without spaces (Chinese,
Japanese kana, Thai, Lao, Khmer, Myanmar) count one character as one word, so a listed
entry of k characters matches wherever those k characters appear in a row. Entries of
several words match as a sequence. Matching is case-insensitive (casefold).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import regex

from raypipe.listfile import entries, malformed

BUILTIN = "builtin"
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_WORD = regex.compile(rf"[{_UNSPACED}]|[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]+", regex.V1)


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def builtin_languages() -> list[str]:
    folder = resources.files("raypipe") / "data"
    return sorted(
        item.name.removeprefix("bad_words_").removesuffix(".txt")
        for item in folder.iterdir()
        if item.name.startswith("bad_words_") and item.name.endswith(".txt")
    )


@dataclass(frozen=True)
class WordList:
    entries: frozenset[str]  # each entry's words joined by one space
    lengths: tuple[int, ...]  # distinct entry lengths in words, ascending

    def __len__(self) -> int:
        return len(self.entries)

    def share(self, text: str) -> float:
        """Share of the text's words that belong to a listed entry."""
        tokens = words(text)
        if not tokens:
            return 0.0
        listed = self.entries
        if self.lengths == (1,):
            return sum(1 for token in tokens if token in listed) / len(tokens)
        covered = bytearray(len(tokens))
        for n in self.lengths:
            for start in range(len(tokens) - n + 1):
                if " ".join(tokens[start : start + n]) in listed:
                    covered[start : start + n] = b"\x01" * n
        return covered.count(1) / len(tokens)


def make_word_list(items: list[str]) -> WordList:
    keys = {" ".join(parts) for parts in map(words, items) if parts}
    return WordList(frozenset(keys), tuple(sorted({key.count(" ") + 1 for key in keys})))


def _location(language: str, uri: str) -> str:
    if uri == BUILTIN:
        return str(resources.files("raypipe") / "data" / f"bad_words_{language}.txt")
    return uri


@functools.cache
def load_word_list(language: str, uri: str) -> WordList:
    """A language's list from a file, or the builtin one; cached per worker."""
    location = _location(language, uri)
    found = entries(location)
    for number, line in found:
        if not words(line):
            raise malformed(location, number, line, "a word or phrase")
    return make_word_list([line for _, line in found])
