"""Word lists per language and the share of a text's words they cover.

Words are runs of letters, marks and digits in any script (so Devanagari vowel signs and
Arabic diacritics stay inside their word); scripts written without spaces (Chinese,
Japanese kana, Thai, Lao, Khmer, Myanmar) count one character as one word, so a listed
entry of k characters matches wherever those k characters appear in a row. Entries of
several words match as a sequence. Matching is case-insensitive (casefold).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources

import ahocorasick
import regex

from raypipe.listfile import entries, malformed

BUILTIN = "builtin"
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_SPACED_CHAR = rf"[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]"
_WORD = regex.compile(rf"[{_UNSPACED}]|{_SPACED_CHAR}+", regex.V1)
_IN_WORD = regex.compile(_SPACED_CHAR, regex.V1)
_UNSPACED_CHAR = regex.compile(rf"[{_UNSPACED}]")


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _inside_word(text: str, index: int) -> bool:
    return 0 <= index < len(text) and _IN_WORD.match(text, index) is not None


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
    firsts: frozenset[str]  # first words of the entries of several words
    # The entries' first words as substrings: most documents contain none as a whole
    # word, and one pass of the automaton over the text proves it without splitting it.
    automaton: ahocorasick.Automaton = field(compare=False)

    def __len__(self) -> int:
        return len(self.entries)

    def _may_match(self, folded: str) -> bool:
        for end, (length, unspaced) in self.automaton.iter(folded):
            start = end - length + 1
            if unspaced or not (_inside_word(folded, start - 1) or _inside_word(folded, end + 1)):
                return True
        return False

    def share(self, text: str) -> float:
        """Share of the text's words that belong to a listed entry."""
        folded = text.casefold()
        if not self.entries or not self._may_match(folded):
            return 0.0
        tokens = _WORD.findall(folded)
        listed = self.entries
        covered = bytearray(len(tokens))
        for index, token in enumerate(tokens):
            if token in listed:
                covered[index] = 1
        for n in self.lengths[1:] if self.lengths[0] == 1 else self.lengths:
            for start, token in enumerate(tokens[: len(tokens) - n + 1]):
                if token in self.firsts and " ".join(tokens[start : start + n]) in listed:
                    covered[start : start + n] = b"\x01" * n
        return covered.count(1) / len(tokens)


def make_word_list(items: list[str]) -> WordList:
    keys = {" ".join(parts) for parts in map(words, items) if parts}
    firsts = {key.split(" ", 1)[0] for key in keys}
    automaton = ahocorasick.Automaton()
    for first in firsts:
        automaton.add_word(first, (len(first), _UNSPACED_CHAR.match(first) is not None))
    if firsts:
        automaton.make_automaton()
    return WordList(
        frozenset(keys),
        tuple(sorted({key.count(" ") + 1 for key in keys})),
        frozenset(key.split(" ", 1)[0] for key in keys if " " in key),
        automaton,
    )


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
