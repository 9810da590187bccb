"""Boundary tokens from the real GPT-2 vocabulary, and concat cutting documents at them."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from raypipe.boundary import boundary_table, is_boundary
from raypipe.pack import pack
from raypipe.stages.tokenize import Tokenize
from raypipe.tokenizer import load_tokenizer

SENTENCES = [
    "The river rose all night.",
    'She said, "We leave at dawn."',
    "Did anyone hear the bell?",
    "Nobody answered!\n\nMorning came grey and cold, and the road was mud to the knee.",
    "They walked on.",
]


@pytest.fixture(scope="module")
def gpt2():
    return load_tokenizer("gpt2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (".", True),
        ("?", True),
        ('."', True),
        ("!'", True),
        ("\n\n", True),
        (". ", True),
        (",", False),
        (" the", False),
        (" Mr", False),
        (".com", False),
    ],
)
def test_boundary_text(text, expected):
    assert is_boundary(text) is expected


def test_table_marks_eos_and_sentence_ends_of_the_vocabulary(gpt2):
    table = boundary_table(gpt2)
    assert table.dtype == bool and len(table) == gpt2.vocab_size
    vocab = gpt2.tokenizer.get_vocab()
    assert table[gpt2.eos_id]
    for token in (".", "?", "!", '."', "Ċ", "ĊĊ"):  # Ċ: GPT-2's byte-level newline
        assert table[vocab[token]], token
    for token in (",", "Ġthe", "Ġ.", "com"):
        assert table[vocab[token]] == (token == "Ġ."), token
    assert 50 < table.sum() < 1000  # punctuation and newlines, not words


def test_concat_cuts_real_text_after_sentence_ends(gpt2):
    texts = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))] * 3
    docs = Tokenize("gpt2", None)(pa.table({"uid": range(len(texts)), "text": texts}))
    flat = pc.list_flatten(docs["tokens"]).to_numpy()
    lengths = docs["n_tokens"].to_numpy()
    table = boundary_table(gpt2)
    plain = pack(flat, lengths, 48, gpt2.eos_id, "concat", 1)
    clean = pack(flat, lengths, 48, gpt2.eos_id, "concat", 1, 16, table)
    assert plain.n_valid == clean.n_valid == len(flat)
    ends = (clean.segments[:, 0] + clean.segments[:, 1]).tolist()
    last_token = clean.tokens.reshape(-1)[np.array(ends) - 1]
    # Every piece but the last ends a sentence, a paragraph or a document.
    assert table[last_token[:-1]].all()
    assert not table[plain.tokens.reshape(-1)[np.array(ends[:-1]) - 1]].all()
    for start in clean.segments[1:, 0].tolist():  # each piece opens a sentence
        opening = gpt2.tokenizer.decode(clean.tokens.reshape(-1)[start : start + 3].tolist())
        assert opening.lstrip()[0].isupper() or opening.startswith("\n"), opening
    # The clean cuts cost padding inside sequences; plain concat pads only the last one.
    for packed, padded_inside in ((plain, False), (clean, True)):
        filled = np.bincount(packed.segments[:, 0] // 48, packed.segments[:, 1])
        assert (filled[:-1] < 48).any() == padded_inside
