"""Phone number candidates: what reaches Presidio's phone recognizer, and what it still finds."""

from __future__ import annotations

import pytest
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

from raypipe.pii.detect import Detector
from raypipe.pii.phone import candidates

# Formats Presidio's phone recognizer takes (extensions, country codes, trunk prefixes).
PHONES = [
    "(212) 555-0147",
    "212.555.0147",
    "1-800-861-1481",
    "345-899-3560x4587",
    "+1-604-696-5272x565",
    "+41 (0)71 526 99 04",
    "+44 20 7946 0018",
    "0688 843 79 56",
]
# What mail headers and logs are full of: none can be a phone number.
NOT_PHONES = [
    "ESMTP id (8.11.6/8.11.6) with 5.5.2653.19",
    "Date: (2000-01-01) and 20020901",
    "Copyright 1997-2002 by",
    "relay [194.125.145.45] said",
    "Message-ID: <1029882468.3116.JavaMail.evans@thyme>",
    "bgcolor=#006600 size",
    "costs $1234567.00 or 1234567% more",
    "at 29 2002 09:15 we",
    "ticket #85541025 closed",
]


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector({"PHONE_NUMBER": 0.4})


@pytest.mark.parametrize("phone", PHONES)
def test_presidio_phone_numbers_are_still_found(detector, phone):
    text = f"call me at {phone} tonight"
    presidio = {(r.start, r.end) for r in PhoneRecognizer().analyze(text, ["PHONE_NUMBER"])}
    assert presidio, "the sample must be one Presidio finds"
    found = {(s.start, s.end) for s in detector([text])[0]}
    assert found == presidio


@pytest.mark.parametrize("text", NOT_PHONES)
def test_dates_versions_ids_never_reach_phonenumbers(text):
    assert list(candidates(text)) == []


@pytest.mark.parametrize("between", ["  ", " . ", " \n ", "   ", " , "])
@pytest.mark.parametrize("after", ["4111 1111 1111 1111", "123-45-6781", "10.1.2.3", "5550147"])
def test_a_phone_number_before_other_digits_is_found(detector, between, after):
    text = f"x (212) 555-0147{between}{after} y"
    spans = detector([text])[0]
    assert any(text[s.start : s.end] == "(212) 555-0147" for s in spans), spans


def test_a_window_holds_the_run_and_one_character_each_side():
    text = "Tel: +44 20 7946 0018, fax"
    [(lo, hi)] = candidates(text)
    assert text[lo:hi] == " +44 20 7946 0018,"


def test_a_table_of_numbers_is_no_phone_number_but_a_list_of_them_is():
    table = " ".join(str(n) for n in range(1000, 3000))
    assert list(candidates(table)) == []
    numbers = " / ".join(f"(212) 555-01{n:02d}" for n in range(20))
    windows = list(candidates(numbers))
    assert len(windows) == 20 and all(hi - lo <= 16 for lo, hi in windows)
