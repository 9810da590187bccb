"""How answers split on style conventions, so a dataset's style guide can be written down
and enforced: the split per convention, and which examples go against the majority."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

HEADER = re.compile(r"^#{1,6} \S", re.M)
BULLET = re.compile(r"^\s{0,3}([-*+]) \S", re.M)
NUMBERED = re.compile(r"^\s{0,3}\d{1,3}[.)] \S", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_ENDINGS = {".": "period", "!": "exclamation", "?": "question", ":": "colon", "`": "code"}


def trailing_punctuation(answer: str) -> str:
    tail = answer.rstrip()
    if not tail:
        return "empty"
    last = tail[-1]
    if last in _ENDINGS:
        return _ENDINGS[last]
    return "none" if last.isalnum() else "other"


def headers(answer: str) -> str:
    return "markdown headers" if HEADER.search(answer) else "no headers"


def list_style(answer: str) -> str:
    kinds = {f"'{m}' bullets" for m in BULLET.findall(answer)}
    if NUMBERED.search(answer):
        kinds.add("numbered")
    if not kinds:
        return "no list"
    return kinds.pop() if len(kinds) == 1 else "mixed lists"


def bold(answer: str) -> str:
    return "bold" if _BOLD.search(answer) else "no bold"


def opening(answer: str) -> str:
    first = answer.lstrip()[:1]
    if first.isupper():
        return "capital letter"
    return "lowercase letter" if first.islower() else "other"


CONVENTIONS = {
    "trailing punctuation": trailing_punctuation,
    "headers": headers,
    "list style": list_style,
    "bold": bold,
    "opening": opening,
}


def style_split(answers: Iterable[str]) -> dict[str, Counter]:
    """Convention -> how many answers follow each of its variants."""
    split = {name: Counter() for name in CONVENTIONS}
    for answer in answers:
        for name, classify in CONVENTIONS.items():
            split[name][classify(answer)] += 1
    return split
