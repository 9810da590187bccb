"""Replacing detected personal data: which spans win, what replaces them, what is allowed.

Only the chosen spans change; every character outside them is copied as it was.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import hmac
import ipaddress
from collections import Counter
from collections.abc import Callable, Iterable

from raypipe.pii.detect import Span

# Realistic stand-ins (as FineWeb does): reserved example domains, documentation IP
# ranges (RFC 5737, RFC 3849), numbers that no validator accepts.
PLACEHOLDERS = {
    "EMAIL_ADDRESS": "email@example.com",
    "PHONE_NUMBER": "555-0100",
    "IP_ADDRESS": "192.0.2.1",
    "CREDIT_CARD": "0000 0000 0000 0000",
    "US_SSN": "000-00-0000",
    "IBAN_CODE": "XX00 0000 0000 0000 0000",
    "ES_NIF": "00000000T",
    "ES_NIE": "X0000000T",
    "BR_CPF": "000.000.000-00",
    "BR_CNPJ": "00.000.000/0000-00",
    "PERSON": "Jane Doe",
}
IPV6_PLACEHOLDER = "2001:db8::1"
CACHE_VALUES = 1 << 16  # allow-list answers kept per worker
HASH_CHARS = 12  # hex digits of a pseudonym: 48 bits, collisions negligible per corpus


def resolve(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans in text order: of overlapping ones the highest score wins,
    then the longest, then the first."""
    ranked = sorted(spans, key=lambda s: (-s.score, s.start - s.end, s.start))
    # the chosen spans by start; they never overlap, so their ends are in order too and
    # only the last one starting before a span's end can overlap it (a mail header
    # holds hundreds of addresses: no pairwise checks)
    starts: list[int] = []
    chosen: list[Span] = []
    for span in ranked:
        i = bisect.bisect_left(starts, span.end)
        if i and chosen[i - 1].end > span.start:
            continue
        at = bisect.bisect_right(starts, span.start)
        starts.insert(at, span.start)
        chosen.insert(at, span)
    return chosen


def apply(text: str, spans: list[Span], replace: Callable[[Span, str], str]) -> str:
    """`text` with each span (non-overlapping, in order) replaced by `replace(span, value)`."""
    parts, last = [], 0
    for span in spans:
        parts += [text[last : span.start], replace(span, text[span.start : span.end])]
        last = span.end
    parts.append(text[last:])
    return "".join(parts)


class AllowList:
    """Values never masked: exact values, e-mail domains, IP networks."""

    def __init__(self, entries: Iterable[str]):
        self.values, self.domains, self.networks = set(), [], []
        for entry in entries:
            entry = entry.strip().lower()
            self.values.add(entry)
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.domains.append(entry)

        # the same addresses recur in every header of a mail archive
        self.allows = functools.lru_cache(maxsize=CACHE_VALUES)(self._allows)

    def __contains__(self, item: tuple[str, str]) -> bool:
        return self.allows(*item)

    def _allows(self, entity: str, value: str) -> bool:
        value = value.lower()
        if value in self.values:
            return True
        if entity == "EMAIL_ADDRESS":
            domain = value.rpartition("@")[2]
            return any(domain == d or domain.endswith("." + d) for d in self.domains)
        if entity == "IP_ADDRESS":
            try:
                address = ipaddress.ip_interface(value).ip
            except ValueError:
                return False
            return any(address in network for network in self.networks)
        return False


def tag(span: Span, value: str) -> str:
    return f"<{span.entity}>"


def placeholder(span: Span, value: str) -> str:
    if span.entity == "IP_ADDRESS" and ":" in value:
        return IPV6_PLACEHOLDER
    return PLACEHOLDERS[span.entity]


def pseudonym(salt: bytes) -> Callable[[Span, str], str]:
    """Salted hash: the same value (ignoring case) always gets the same pseudonym, and
    without the salt the value cannot be found by hashing guesses."""

    def replace(span: Span, value: str) -> str:
        digest = hmac.new(salt, value.lower().encode(), hashlib.sha256).hexdigest()
        return f"<{span.entity}:{digest[:HASH_CHARS]}>"

    return replace


class Masker:
    """Masks one document's detected spans; returns the text and per-entity counts."""

    def __init__(self, replace: Callable[[Span, str], str], allow: AllowList):
        self.replace, self.allow = replace, allow

    def __call__(self, text: str, spans: list[Span]) -> tuple[str, Counter]:
        kept = resolve(s for s in spans if (s.entity, text[s.start : s.end]) not in self.allow)
        return apply(text, kept, self.replace), Counter(s.entity for s in kept)
