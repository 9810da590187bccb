"""URL block and opt-out lists as lookup structures whose cost does not grow with the list.

A domain list is a frozenset walked by suffix: `a.b.example.com` is looked up as itself,
`b.example.com`, `example.com` and `com`, so one listed domain covers all its subdomains
and a lookup costs one set probe per label. URL prefixes are grouped by host (one dict
probe, then `str.startswith` over that host's few prefixes); URL substrings go into an
Aho-Corasick automaton (one pass over the URL, whatever the number of substrings).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import ahocorasick

from raypipe.listfile import entries, malformed, numbered, read_text

# Hosts-file lines ("0.0.0.0 ads.example.com") are how many maintained lists are published.
_HOSTS_ADDRESSES = {"0.0.0.0", "127.0.0.1", "::", "::1"}
# Characters that need a line parsed one by one; a list without them (most maintained
# domain lists) is split in C, which for a million lines saves seconds of Python loop.
_NEEDS_PARSING = ("#", " ", "\t", "\r", "*", "/", ":", "@", "\n.", ".\n")


def canonical_host(host: str) -> str:
    """Lowercase, no trailing dot, internationalized names in their ASCII (punycode) form."""
    host = host.strip().rstrip(".").lower()
    if not host.isascii():
        # Not a valid IDN: compared as written.
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
    return host


# scheme:// (optional), user@ (optional), host (or [IPv6]), :port, then path and query.
_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//|/*")
_AUTHORITY = re.compile(r"(?:[^@/?#]*@)?(\[[^\]/?#]*\]|[^:/?#]*)[^/?#]*")


def split_url(url: str) -> tuple[str, str]:
    """(canonical host, path with query) of a URL; the scheme is optional."""
    start = _URL.match(url).end()
    authority = _AUTHORITY.match(url, start)
    return canonical_host(authority.group(1)), url[authority.end() :] or "/"


class DomainSet:
    """Domains; a host matches when it or any parent domain is listed."""

    def __init__(self, domains: Iterable[str]):
        self.domains = frozenset(domains)

    def __len__(self) -> int:
        return len(self.domains)

    def match(self, host: str) -> bool:
        domains = self.domains
        while host:
            if host in domains:
                return True
            host = host.partition(".")[2]
        return False


class PrefixSet:
    """URL prefixes per host: robots.txt-style, the path must start with a listed prefix."""

    def __init__(self, prefixes: Iterable[tuple[str, str]]):
        by_host: dict[str, list[str]] = {}
        for host, path in prefixes:
            by_host.setdefault(host, []).append(path)
        self.by_host = {host: tuple(paths) for host, paths in by_host.items()}

    def __len__(self) -> int:
        return sum(len(paths) for paths in self.by_host.values())

    def match(self, host: str, path: str) -> bool:
        paths = self.by_host.get(host)
        return paths is not None and path.startswith(paths)


class SubstringSet:
    """Case-insensitive substrings of a URL, found in one pass."""

    def __init__(self, substrings: Iterable[str]):
        self.automaton = ahocorasick.Automaton()
        for text in substrings:
            self.automaton.add_word(text.casefold(), None)
        if len(self.automaton):
            self.automaton.make_automaton()

    def __len__(self) -> int:
        return len(self.automaton)

    def match(self, url: str) -> bool:
        return (
            len(self.automaton) > 0 and next(self.automaton.iter(url.casefold()), None) is not None
        )


def _domain(uri: str, number: int, line: str) -> str:
    fields = line.split()
    if len(fields) == 2 and fields[0] in _HOSTS_ADDRESSES:
        line = fields[1]
    elif len(fields) != 1:
        raise malformed(uri, number, line, "one domain")
    if "/" in line:  # a URL pasted into a domain list: its host
        return split_url(line)[0]
    return canonical_host(line.removeprefix("*.").lstrip("."))


def parse_domains(uri: str) -> list[str]:
    text = read_text(uri).lower()
    plain = text.isascii() and "." not in (text[:1], text[-1:])
    if plain and not any(mark in text for mark in _NEEDS_PARSING):
        return text.split()
    return [_domain(uri, number, line) for number, line in numbered(text)]


@functools.cache
def load_domains(uris: tuple[str, ...]) -> DomainSet:
    """The union of domain lists; cached so a worker loads each set of lists once."""
    return DomainSet(domain for uri in uris for domain in parse_domains(uri))


@functools.cache
def load_substrings(uris: tuple[str, ...]) -> SubstringSet:
    return SubstringSet(entry for uri in uris for _, entry in entries(uri))


@dataclass(frozen=True)
class OptOut:
    """Opted-out sites: whole domains (and their subdomains) and URL prefixes."""

    domains: DomainSet
    prefixes: PrefixSet

    def __len__(self) -> int:
        return len(self.domains) + len(self.prefixes)

    def match(self, host: str, path: str) -> bool:
        return self.domains.match(host) or self.prefixes.match(host, path)


@functools.cache
def load_opt_out(uris: tuple[str, ...]) -> OptOut:
    """Entries with a path below `/` are URL prefixes; the others are domains."""
    domains, prefixes = [], []
    for uri in uris:
        for number, line in entries(uri):
            if " " in line or "\t" in line:
                raise malformed(uri, number, line, "a domain or a URL prefix")
            host, path = split_url(line)
            if path == "/":
                domains.append(host.removeprefix("*.").lstrip("."))
            else:
                prefixes.append((host, path))
    return OptOut(DomainSet(domains), PrefixSet(prefixes))
