"""Spanish and Portuguese personal data on the labelled set of tests/fixtures/pii_es_pt.jsonl
(scripts/make_pii_es_pt.py): identifiers and phone numbers masked, look-alikes kept.

`pytest tests/unit/test_pii_es_pt.py -s` prints the table of docs/pii.md.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from raypipe.config import PiiConfig
from raypipe.pii.detect import Detector
from raypipe.pii.mask import resolve
from raypipe.pii.national import valid_cnpj, valid_cpf

SET = Path(__file__).parents[1] / "fixtures" / "pii_es_pt.jsonl"


@pytest.fixture(scope="module")
def scored():
    rows = [json.loads(line) for line in SET.read_text().splitlines()]
    # Overlapping spans resolved as the masker does: the highest score wins.
    found = map(resolve, Detector(PiiConfig().thresholds())([row["text"] for row in rows]))
    hits, misses, wrong, lookalikes = Counter(), Counter(), Counter(), []
    for row, spans in zip(rows, found, strict=True):
        masked = {(row["text"][s.start : s.end], s.entity) for s in spans}
        for label in row["spans"]:
            key = (label["value"], label["entity"])
            (hits if key in masked else misses)[label["entity"]] += 1
        labelled = {(label["value"], label["entity"]) for label in row["spans"]}
        for _, entity in masked - labelled:
            wrong[entity] += 1
        for value in row["negatives"]:
            if any(value in text or text in value for text, _ in masked):
                lookalikes.append((value, masked))
    print("\n| entity | labelled | masked | recall | false positives |")
    print("|---|---:|---:|---:|---:|")
    for entity in sorted(hits.keys() | misses.keys()):
        total = hits[entity] + misses[entity]
        print(
            f"| {entity} | {total} | {hits[entity]} | {hits[entity] / total:.1%} | {wrong[entity]} |"
        )
    negatives = sum(len(row["negatives"]) for row in rows)
    print(f"look-alikes left unmasked: {negatives - len(lookalikes)} of {negatives}")
    return hits, misses, wrong, lookalikes


def test_every_identifier_and_phone_number_is_masked(scored):
    hits, misses, _, _ = scored
    assert set(hits) == {"ES_NIF", "ES_NIE", "BR_CPF", "BR_CNPJ", "PHONE_NUMBER"}
    assert not misses, misses


def test_nothing_else_is_masked(scored):
    _, _, wrong, lookalikes = scored
    assert not wrong, wrong
    assert not lookalikes, lookalikes


def test_check_digits():
    assert valid_cpf("123.456.789-09") and not valid_cpf("123.456.789-00")
    assert not valid_cpf("111.111.111-11")  # repeated digits pass the sums but are never issued
    assert valid_cnpj("11.222.333/0001-81") and not valid_cnpj("11.222.333/0001-80")
    assert valid_cnpj("11222333000181") and not valid_cnpj("1122233300018")


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Teléfono: 612 345 678.", "612 345 678"),
        ("Telemóvel 912 345 678.", "912 345 678"),
        ("Call me on +34 612 345 678 tomorrow.", "+34 612 345 678"),
        # the same digits with no phone word: a count, a file number, a tax number
        ("The archive holds 612 345 678 records.", None),
        ("Expediente 912 345 678 del juzgado.", None),
        ("EIN or federal tax identification number is 64-6221541.", None),
    ],
)
def test_a_spanish_or_portuguese_national_number_is_a_phone_only_beside_a_phone_word(text, masked):
    [spans] = Detector({"PHONE_NUMBER": PiiConfig().phone_number.threshold})([text])
    assert [text[s.start : s.end] for s in spans] == ([masked] if masked else [])
