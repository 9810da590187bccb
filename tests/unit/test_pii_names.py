"""Which sentences reach spaCy's NER when PERSON is enabled."""

from __future__ import annotations

import pytest

from raypipe.config import PiiConfig
from raypipe.pii.names import may_name, ner_spans
from raypipe.stages.pii import Pii
from tests.batches import document_batch


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("The cat sat on the mat.", False),
        ("it was raining\n", False),
        ("Yesterday it rained.", True),  # not a common word: may be a name
        ("It was John who called.", True),
        ('"When did you leave?"', False),
    ],
)
def test_a_sentence_may_name_someone_when_capitalized_past_a_common_start(sentence, expected):
    assert may_name(sentence) is expected


def test_runs_of_such_sentences_are_read_and_the_rest_skipped():
    text = "The sky was grey. It rained all day. Then Anna called Bob. They talked.\nIt ended."
    assert [text[a:b] for a, b in ner_spans(text)] == [" Then Anna called Bob."]


def test_lower_case_text_is_read_whole():
    text = "my name is lena andersson. please call me."
    assert [text[a:b] for a, b in ner_spans(text)] == [text]


def test_names_are_masked_only_where_read():
    stage = Pii(PiiConfig(enabled=True, person={"enabled": True}))
    text = "The weather was fine. Yesterday Barack Obama met Angela Merkel in Berlin."
    out = stage(document_batch([text]))["text"][0].as_py()
    assert out == "The weather was fine. Yesterday <PERSON> met <PERSON> in Berlin."
