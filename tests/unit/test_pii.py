"""PII masking with the real Presidio recognizers (and spaCy NER for names)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raypipe.accounting import tally_block
from raypipe.batch import reject
from raypipe.config import ConfigError, PiiConfig
from raypipe.pii.detect import Detector, Span
from raypipe.pii.mask import AllowList, Masker, placeholder, resolve
from raypipe.stages.pii import Pii
from tests.batches import document_batch

# One value per entity that Presidio's default engine detects on its own (no context).
SAMPLES = {
    "EMAIL_ADDRESS": "jane.roe@mailhost.org",
    "PHONE_NUMBER": "(212) 555-0147",
    "IP_ADDRESS": "10.1.2.3",
    "CREDIT_CARD": "4111 1111 1111 1111",
    "US_SSN": "123-45-6781",
    "IBAN_CODE": "DE89 3704 0044 0532 0130 00",
}


@pytest.fixture(scope="module")
def tagger() -> Pii:
    return Pii(PiiConfig(enabled=True))


def test_each_entity_is_found_and_tagged(tagger):
    text = "Contact: " + ", ".join(SAMPLES.values()) + "."
    out = tagger(document_batch([text]))
    expected = "Contact: " + ", ".join(f"<{e}>" for e in SAMPLES) + "."
    assert out["text"][0].as_py() == expected
    for entity in SAMPLES:
        assert out[f"pii_{entity.lower()}"][0].as_py() == 1


def test_validation_rejects_lookalikes(tagger):
    # Luhn fails, SSN area 000, IBAN checksum wrong, not an IPv4 address
    text = "card 4111 1111 1111 1112, ssn 000-45-6781, DE00 3704 0044 0532 0130 00, 300.1.2.3"
    assert tagger(document_batch([text]))["text"][0].as_py() == text


def test_addresses_of_real_mail_are_masked(tagger):
    """Old country domains and `/` in the local part, from the SpamAssassin corpus."""
    text = "From aleksandar.gilgoric@fiaz.co.yu and mb/vipul@dcs.qmul.ac.uk, not icon@2x.png"
    out = tagger(document_batch([text]))["text"][0].as_py()
    assert out == "From <EMAIL_ADDRESS> and <EMAIL_ADDRESS>, not icon@2x.png"


@pytest.mark.parametrize(
    "text, masked",
    [
        # Luhn-valid digits inside mail ids and version strings are not cards
        ("Message-ID: <Pine.LNX.4.44.4111111111111111.25233-100000@mail.example.net>", False),
        ("build v4111111111111111 of the tool", False),
        ("ref 4111111111111111_b", False),
        ("my card is 4111 1111 1111 1111.", True),
        ("card:4111111111111111, thanks", True),
        ("(4111-1111-1111-1111)", True),
        ("pay?card=4111111111111111&cvv=1", True),
    ],
)
def test_a_card_number_stands_apart_from_identifiers(tagger, text, masked):
    out = tagger(document_batch([text]))
    assert ("<CREDIT_CARD>" in out["text"][0].as_py()) is masked


def test_context_words_raise_weak_matches():
    detector = Detector({"US_SSN": 0.4})
    assert detector(["the id is 123456781 today"]) == [[]]
    [[span]] = detector(["his social security number is 123456781 today"])
    assert (span.entity, span.score) == ("US_SSN", pytest.approx(0.4))


def test_placeholders_are_documentation_values_and_allowed():
    stage = Pii(PiiConfig(enabled=True, style="placeholder"))
    text = "write to jane.roe@mailhost.org from 10.1.2.3 or fe80::1ff:fe23:4567:890a"
    once = stage(document_batch([text]))["text"][0].as_py()
    assert once == "write to email@example.com from 192.0.2.1 or 2001:db8::1"
    # the placeholders fall in the default allow-list: masking again changes nothing
    again = stage(document_batch([once]))
    assert again["text"][0].as_py() == once
    assert again["pii_email_address"][0].as_py() == 0


def test_hash_pseudonyms_are_consistent_and_salted(monkeypatch):
    monkeypatch.setenv("RAYPIPE_PII_SALT", "first-salt")
    first = Pii(PiiConfig(enabled=True, style="hash"))
    texts = ["a jane.roe@mailhost.org b", "c JANE.ROE@mailhost.org d", "e x@mailhost.org f"]
    one, two, three = (t.split()[1] for t in first(document_batch(texts))["text"].to_pylist())
    assert one.startswith("<EMAIL_ADDRESS:") and one == two != three
    monkeypatch.setenv("RAYPIPE_PII_SALT", "second-salt")
    second = Pii(PiiConfig(enabled=True, style="hash"))
    assert second(document_batch(texts[:1]))["text"][0].as_py().split()[1] != one


def test_hash_without_salt_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MY_SALT", raising=False)
    with pytest.raises(ConfigError, match="MY_SALT"):
        Pii(PiiConfig(enabled=True, style="hash", salt_env="MY_SALT"))


def test_allow_list_values_domains_networks():
    allow = AllowList(["example.com", "10.0.0.0/8", "(212) 555-0147"])
    assert ("EMAIL_ADDRESS", "a@mail.example.com") in allow
    assert ("EMAIL_ADDRESS", "a@example.community") not in allow
    assert ("IP_ADDRESS", "10.200.1.1") in allow
    assert ("IP_ADDRESS", "11.0.0.1") not in allow
    assert ("PHONE_NUMBER", "(212) 555-0147") in allow
    stage = Pii(PiiConfig(enabled=True, allow=["mailhost.org"]))
    text = "jane.roe@mailhost.org and bob@other.net"
    assert (
        stage(document_batch([text]))["text"][0].as_py()
        == "jane.roe@mailhost.org and <EMAIL_ADDRESS>"
    )


def test_overlaps_keep_the_strongest_span():
    spans = [Span(0, 11, "PHONE_NUMBER", 0.4), Span(0, 11, "US_SSN", 0.85), Span(12, 14, "X", 0.1)]
    assert resolve(spans) == spans[1:]
    masker = Masker(placeholder, AllowList([]))
    text, counts = masker("123-45-6781 ok", spans[:2])
    assert (text, dict(counts)) == ("000-00-0000 ok", {"US_SSN": 1})


def test_disabled_entities_and_rejected_rows_are_left_alone():
    stage = Pii(PiiConfig(enabled=True, email_address={"enabled": False}))
    batch = document_batch(["jane.roe@mailhost.org 10.1.2.3", "10.1.2.3"])
    batch = reject(batch, pa.array([False, True]).to_numpy(zero_copy_only=False), "quality", "x")
    out = stage(batch)
    assert out["text"].to_pylist() == ["jane.roe@mailhost.org <IP_ADDRESS>", ""]
    assert "pii_email_address" not in out.column_names
    assert out["pii_ip_address"].to_pylist() == [1, 0]


def test_counts_reach_the_tally(tagger):
    out = tagger(document_batch(["a@mailhost.org b@mailhost.org", "10.1.2.3"])).append_column(
        "chars", pa.array([0, 0])
    )
    masked = tally_block(out, PiiConfig(enabled=True).counters())["counters"]["pii"]
    assert masked["email_address"] == 2 and masked["ip_address"] == 1
    assert masked["credit_card"] == 0


def test_names_by_ner():
    stage = Pii(PiiConfig(enabled=True, person={"enabled": True}))
    text = "Yesterday Barack Obama met Angela Merkel in Berlin."
    out = stage(document_batch([text]))
    assert out["text"][0].as_py() == "Yesterday <PERSON> met <PERSON> in Berlin."
    assert out["pii_person"][0].as_py() == 2


# Filler that can hold no PII (no digits, no @), cut into words by single spaces.
FILLER = st.text(alphabet="abcdefghij KLMNOP.,;!?\n", max_size=40)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(FILLER, st.sampled_from(sorted(SAMPLES))), max_size=6), FILLER)
def test_masking_changes_nothing_outside_the_spans(tagger, pieces, tail):
    text = "".join(f"{filler} {SAMPLES[entity]} " for filler, entity in pieces) + tail
    # with an empty filler a phone number stands two spaces before the next digits
    expected = "".join(f"{filler} <{entity}> " for filler, entity in pieces) + tail
    assert tagger(document_batch([text]))["text"][0].as_py() == expected


def test_stage_runs_after_quality_when_enabled():
    from raypipe.config import build_config
    from raypipe.pipeline import document_stages

    cfg = build_config({"input": {"paths": ["x.jsonl"]}}, {"pii.enabled": True})
    names = [stage.name for stage in document_stages(cfg)]
    assert names.index("pii") == names.index("quality") + 1
    off = build_config({"input": {"paths": ["x.jsonl"]}, "recipe": None})
    assert "pii" not in [stage.name for stage in document_stages(off)]
