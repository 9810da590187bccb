"""National identifiers Presidio has no recognizer for: Brazil's CPF (people) and CNPJ
(companies), as Presidio pattern recognizers whose validation is the number's own check
digits, so that a random run of eleven or fourteen digits is rarely taken for one.

Spain's DNI/NIF and NIE come from Presidio itself (EsNifRecognizer, EsNieRecognizer:
the mod-23 control letter).

Phone numbers: Presidio's regions, plus Spain's and Portugal's national format, which
counts only beside a phone word (IberianPhoneRecognizer says why).
"""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

_NOT_DIGIT = re.compile(r"\D")


def _check_digit(digits: list[int], weights: range | list[int]) -> int:
    """The mod-11 check digit both numbers use: 0 when the remainder is below 2."""
    remainder = sum(d * w for d, w in zip(digits, weights, strict=True)) % 11
    return 0 if remainder < 2 else 11 - remainder


def valid_cpf(text: str) -> bool:
    digits = [int(c) for c in _NOT_DIGIT.sub("", text)]
    if len(digits) != 11 or len(set(digits)) == 1:  # 000.000.000-00 and the like are not issued
        return False
    first = _check_digit(digits[:9], range(10, 1, -1))
    second = _check_digit([*digits[:9], first], range(11, 1, -1))
    return digits[9:] == [first, second]


CNPJ_WEIGHTS = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]


def valid_cnpj(text: str) -> bool:
    digits = [int(c) for c in _NOT_DIGIT.sub("", text)]
    if len(digits) != 14 or len(set(digits)) == 1:
        return False
    first = _check_digit(digits[:12], CNPJ_WEIGHTS)
    second = _check_digit([*digits[:12], first], [6, *CNPJ_WEIGHTS])
    return digits[12:] == [first, second]


class BrCpfRecognizer(PatternRecognizer):
    """CPF: 000.000.000-00, or eleven digits written together (weaker: context helps)."""

    PATTERNS = [
        Pattern("CPF (formatted)", r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", 0.5),
        Pattern("CPF (digits)", r"\b\d{11}\b", 0.3),
    ]
    CONTEXT = ["cpf", "contribuinte", "cadastro", "pessoa física", "inscrito"]

    def __init__(self) -> None:
        super().__init__(
            supported_entity="BR_CPF",
            patterns=self.PATTERNS,
            context=self.CONTEXT,
            supported_language="en",
        )

    def validate_result(self, pattern_text: str) -> bool:
        return valid_cpf(pattern_text)


class BrCnpjRecognizer(PatternRecognizer):
    """CNPJ: 00.000.000/0000-00, or fourteen digits written together."""

    PATTERNS = [
        Pattern("CNPJ (formatted)", r"\b\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}\b", 0.5),
        Pattern("CNPJ (digits)", r"\b\d{14}\b", 0.3),
    ]
    CONTEXT = ["cnpj", "empresa", "pessoa jurídica", "inscrita", "razão social"]

    def __init__(self) -> None:
        super().__init__(
            supported_entity="BR_CNPJ",
            patterns=self.PATTERNS,
            context=self.CONTEXT,
            supported_language="en",
        )

    def validate_result(self, pattern_text: str) -> bool:
        return valid_cnpj(pattern_text)


class IberianPhoneRecognizer(PhoneRecognizer):
    """Spain's and Portugal's numbers written the national way (612 345 678, 912 345 678).

    Both plans make almost any nine digits that start with 2, 6, 7, 8 or 9 a valid number,
    so in text of any other language such a run is a tax number, a count or an id far more
    often than a phone (`64-6221541`, the EIN in every Project Gutenberg licence). Its score
    is under every threshold but one a Spanish or Portuguese phone word nearby lifts past
    the default (Presidio's context boost, +0.35). With a country code (+34, +351) the
    number is Presidio's recognizer's, at its full score.
    """

    SCORE = 0.1
    CONTEXT = [
        *("teléf", "telef", "tfno", "tlf", "móvil", "movil", "llam", "llám"),  # Spanish
        *("telem", "celular", "ligue", "ligar", "contato"),  # Portuguese
        *("contact", "fax", "whatsapp", "phone"),  # both, and English around them
    ]

    def __init__(self) -> None:
        super().__init__(context=self.CONTEXT, supported_regions=("ES", "PT"))


class PhoneRecognizers(PhoneRecognizer):
    """Presidio's phone recognizer (its eight regions) and the Iberian one, as one: a match
    both find is the first's."""

    def __init__(self) -> None:
        super().__init__()
        self.iberian = IberianPhoneRecognizer()
        self.parts = (self, self.iberian)  # who the context enhancer may find a result's

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found = super().analyze(text, entities, nlp_artifacts)
        found += self.iberian.analyze(text, entities, nlp_artifacts)
        return EntityRecognizer.remove_duplicates(found)
