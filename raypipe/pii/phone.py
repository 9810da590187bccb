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
# Where a run falls apart into numbers: phonenumbers splits a candidate it finds invalid at
# a slash, an opening bracket, a spaced hyphen or dot, and at single spaces (which only
# finds a number written without spaces). It never splits at two spaces, so it reads
# "(212) 555-0147  4111 1111" as one invalid candidate and loses the phone number.
_SPLIT = re.compile(r"[ \t]{2,}|\s*/\s*|\s+(?=[(\[])|\s-\s*|-\s+|\.\s+|\s\.\s*")
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
    # the shapes of Brazil's CPF and CNPJ, valid or not (their own recognizers judge them)
    r"|^\d{3}\.\d{3}\.\d{3}-\d{2}$|^\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}$"
    # a number and its year: laws, decrees, case files (Lei nº 8.078/1990, 1720/2007)
    r"|^[\d.]+/(?:19|20)\d\d$"
)
# A run without spaces glued to an identifier (message ids, host names, hex colours, URL
# parameters, ticket numbers) is not a phone number, nor is a run before a time's minutes.
_ID_BEFORE = re.compile(r"[<@#=&_-]")
_ID_AFTER = re.compile(r"[-.@_]?[^\W\d]")
_MINUTES_AFTER = re.compile(r":\d")
_DECIMAL_COMMA_AFTER = re.compile(r",\d")  # 1.234.567,89: an amount, written the European way
_GAP = re.compile(r"[ \t]{2,}")
# What phonenumbers rejects around a number: a price or a percentage.
_MONEY_BEFORE = re.compile(r"[$\u00a2-\u00a5\u20a0-\u20cf]")
_PERCENT_AFTER = "%"
_SPACE = re.compile(r"\s")


def candidates(text: str, lo: int = 0, hi: int | None = None) -> Iterator[tuple[int, int]]:
    """Windows of `text` (within lo..hi) worth phonenumbers' time: a plausible run, or
    plausible parts of a run, plus the character on each side, which phonenumbers
    inspects."""
    hi = len(text) if hi is None else hi
    for match in RUN.finditer(text, lo, hi):
        for a, b in _pieces(text, *match.span()):
            if plausible(text, a, b):
                yield max(0, a - 1), min(len(text), b + 1)


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The run; its parts too if it has more digits than a number or two spaces inside."""
    digits = len(_DIGIT.findall(text, start, end))
    if digits <= MAX_DIGITS:
        yield start, end
    if digits > MAX_DIGITS or _GAP.search(text, start, end):
        last = start
        for split in _SPLIT.finditer(text, start, end):
            if split.start() > last:
                yield last, split.start()
            last = split.end()
        if last > start:
            yield last, end


def plausible(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] may hold a phone number: digit count, no date, address,
    version or national-id shape, not part of an identifier, not a price, amount or
    percentage."""
    piece = text[start:end]
    digits = len(_DIGIT.findall(piece))
    if not MIN_DIGITS <= digits <= MAX_DIGITS or _NOT_A_NUMBER.search(piece):
        return False
    if start and _MONEY_BEFORE.match(text, start - 1):
        return False
    if text.startswith(_PERCENT_AFTER, end) or _MINUTES_AFTER.match(text, end):
        return False
    if _DECIMAL_COMMA_AFTER.match(text, end):
        return False
    if _SPACE.search(piece):
        return True
    glued_before = start > 0 and _ID_BEFORE.match(text, start - 1)
    return not (glued_before or _ID_AFTER.match(text, end))
