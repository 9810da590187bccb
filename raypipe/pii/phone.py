"""Phone number candidates cheap enough to screen a mail archive.

Presidio's phone recognizer runs phonenumbers' matcher once per supported region (eight),
and each run parses every digit group it meets: it is most of the stage's time on text full
of dates, versions and message ids. Here a compiled pattern finds runs of digits and phone
separators, rules that need no parsing drop the runs that cannot be a phone number, and
only the rest reach the recognizer, each in a window just wide enough for its own checks
(the character before and the one after).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Digits joined by separators phonenumbers accepts between groups (at most three; "x" for
# an extension), led by up to two opening brackets or plus signs. Not after a letter, digit
# or dot: phonenumbers rejects a number glued to a letter, and one after a dot is a decimal
# or a version part.
RUN = re.compile(r"(?<![\w.])[(\[+]{0,2}\d(?:[ \t\-./~()\[\]x]{0,3}\d)*")
MIN_DIGITS, MAX_DIGITS = 7, 15  # shortest valid national number; E.164's longest number
_DIGIT = re.compile(r"\d")
# Two numbers side by side: phonenumbers reads "(212) 555-0147  4111 1111" as one
# candidate, finds it invalid and splits it only at single spaces, losing the first.
_GAP = re.compile(r"[ \t]{2,}")
_NOT_A_NUMBER = re.compile(
    # starting with an ISO date; holding a slash-separated date (phonenumbers' own
    # rejection); a span of years
    r"^[(\[]*(?:19|20)\d\d([-/.]?)[01]\d\1[0-3]\d(?!\d)"
    r"|(?:[0-3]?\d/[01]?\d|[01]?\d/[0-3]?\d)/"
    r"|^(?:19|20)\d\d ?- ?(?:19|20)\d\d$"
    # an IPv4 address (Presidio's phone recognizer takes some; its IP recognizer should)
    r"|^[(\[]*\d{1,3}(?:\.\d{1,3}){3}$"
    # a version or a decimal: dotted groups where a later group has one digit or five and
    # more (phone groups after the first are two to four digits)
    r"|^[(\[]*\d+(?:\.\d+)*\.(?:\d|\d{5,})(?:[./)\]]|$)"
)
# Where phonenumbers splits a candidate it finds invalid, so a run too long to be one
# number may still hold one: a slash, a bracket, a spaced hyphen or dot.
_INNER_SPLIT = re.compile(r"/|.\(|\s-|-\s|\.\s|\s\.")
# A run without spaces glued to an identifier (message ids, host names, hex colours, URL
# parameters, ticket numbers) is not a phone number, nor is a run before a time's minutes.
_ID_BEFORE = re.compile(r"[<@#=&_-]")
_ID_AFTER = re.compile(r"[-.@_]?[^\W\d]")
_MINUTES_AFTER = re.compile(r":\d")
# What phonenumbers rejects around a number: a price or a percentage.
_MONEY_BEFORE = re.compile(r"[$\u00a2-\u00a5\u20a0-\u20cf]")
_PERCENT_AFTER = "%"
_SPACE = re.compile(r"\s")


def candidates(text: str, lo: int = 0, hi: int | None = None) -> Iterator[tuple[int, int]]:
    """Windows of `text` (within lo..hi) worth phonenumbers' time: a plausible run plus the
    character on each side, which phonenumbers inspects."""
    hi = len(text) if hi is None else hi
    for match in RUN.finditer(text, lo, hi):
        start, end = match.span()
        pieces = [(start, end)]
        if _GAP.search(text, start, end):
            pieces += _split(match.group(), start)
        for a, b in pieces:
            if plausible(text, a, b):
                yield max(0, a - 1), min(len(text), b + 1)


def _split(run: str, offset: int) -> Iterator[tuple[int, int]]:
    last = 0
    for gap in _GAP.finditer(run):
        yield offset + last, offset + gap.start()
        last = gap.end()
    yield offset + last, offset + len(run)


def plausible(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] may hold a phone number: digit count, no date, address or
    version shape, not part of an identifier, not a price or percentage."""
    piece = text[start:end]
    digits = len(_DIGIT.findall(piece))
    if digits < MIN_DIGITS or (digits > MAX_DIGITS and not _INNER_SPLIT.search(piece)):
        return False
    if _NOT_A_NUMBER.search(piece):
        return False
    if start and _MONEY_BEFORE.match(text, start - 1):
        return False
    if text.startswith(_PERCENT_AFTER, end) or _MINUTES_AFTER.match(text, end):
        return False
    if _SPACE.search(piece):
        return True
    glued_before = start > 0 and _ID_BEFORE.match(text, start - 1)
    return not (glued_before or _ID_AFTER.match(text, end))
