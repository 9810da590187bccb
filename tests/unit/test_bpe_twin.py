"""The tiktoken twin gives exactly the HF tokenizer's ids, or is not used."""

import io
import json
from pathlib import Path

import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, normalizers

from raypipe.tokenizer import load_tokenizer

SAMPLE = Path(__file__).parents[2] / "examples" / "sample"
GPT2 = load_tokenizer("gpt2")


def hf_ids(loaded, texts):
    return [e.ids for e in loaded.tokenizer.encode_batch(texts, add_special_tokens=False)]


def sample_texts() -> list[str]:
    texts = []
    for path in sorted(SAMPLE.glob("*.jsonl.zst")):  # books, HTML, mail, 500 languages
        with zstandard.open(path, "rb") as raw:
            rows = map(json.loads, io.TextIOWrapper(raw, "utf-8"))
            texts += [row.get("text") or row["html"] for row in rows]
    return texts


def test_builtin_gpt2_runs_on_the_twin_with_identical_ids_on_the_sample_corpus():
    texts = sample_texts()
    assert GPT2.engine == "tiktoken" and len(texts) > 500
    assert GPT2.encode_batch(texts) == hf_ids(GPT2, texts)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_twin_matches_hf_on_any_text(text):
    assert GPT2.encode_batch([text]) == hf_ids(GPT2, [text])


def test_added_special_tokens_in_text_become_their_id_as_in_hf(tmp_path):
    tokenizer = GPT2.tokenizer
    tokenizer.save(str(tmp_path / "plain.json"))
    special = Tokenizer.from_file(str(tmp_path / "plain.json"))
    special.add_special_tokens(["<|endoftext|>"])
    special.save(str(tmp_path / "special.json"))
    loaded = load_tokenizer(str(tmp_path / "special.json"))
    text = ["one<|endoftext|>two <|endoftext|>"]
    assert loaded.engine == "tiktoken"
    assert loaded.encode_batch(text) == hf_ids(loaded, text)
    assert 50256 in loaded.encode_batch(text)[0]
    assert 50256 not in GPT2.encode_batch(text)[0]  # not an added token of the built-in


def test_a_tokenizer_of_another_shape_keeps_the_hf_encoder(tmp_path):
    tokenizer = Tokenizer.from_str(GPT2.tokenizer.to_str())
    tokenizer.normalizer = normalizers.Lowercase()  # the twin has no normalizer
    tokenizer.save(str(tmp_path / "lower.json"))
    loaded = load_tokenizer(str(tmp_path / "lower.json"))
    assert loaded.engine == "tokenizers"
    assert loaded.encode_batch(["Hello World"]) == hf_ids(loaded, ["Hello World"])
    assert loaded.encode_batch(["Hello World"]) != GPT2.encode_batch(["Hello World"])
