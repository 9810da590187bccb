"""Which parts of a text spaCy's NER must read to find person names.

NER is the costliest part of the stage by far (a CNN over every token). An English name is
written capitalized; a sentence whose only capitalized word is its first, and that word a
common one ("The", "It", "When"), holds none. Runs of the other sentences go to NER, so
about a third of prose and of mail is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import spacy

NER_CHUNK = 100_000  # characters per spaCy call (its max_length is 1,000,000)
# A sentence: up to its closing punctuation or line break (at most NER_CHUNK characters).
_SENTENCE = re.compile(rf"[^\n.!?]{{1,{NER_CHUNK}}}[.!?]*\n?|[\n.!?]+")
_CAPITALIZED = re.compile(r"\b[A-Z][a-z]*")
_FIRST_WORD = re.compile(r"\W*(\w+)")
_COMMON = spacy.blank("en").Defaults.stop_words


def may_name(sentence: str) -> bool:
    """Whether a sentence has a capitalized word other than a common first one."""
    first = _FIRST_WORD.match(sentence)
    for word in _CAPITALIZED.finditer(sentence):
        if first and word.start() == first.start(1) and word.group().lower() in _COMMON:
            continue
        return True
    return False


def ner_spans(text: str) -> Iterator[tuple[int, int]]:
    """Spans of `text` for NER: runs of sentences that may hold a name, each at most
    NER_CHUNK characters. A text in lower case (chat, forms) gives no such hint: all of it."""
    everything = text.islower()
    start = end = None
    for match in _SENTENCE.finditer(text):
        if everything or may_name(match.group()):
            if start is None:
                start = match.start()
            elif match.end() - start > NER_CHUNK:
                yield start, end
                start = match.start()
            end = match.end()
        elif start is not None:
            yield start, end
            start = None
    if start is not None:
        yield start, end
