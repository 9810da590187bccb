"""A tiktoken twin of a GPT-2-style byte-level BPE tokenizer: the same ids, ~5x faster.

HF `tokenizers` applies BPE merges in merge-list order; tiktoken merges the pair whose
result has the lowest id. For byte-level BPE tables built the GPT-2 way (every merged
token's id follows its merge's position) the two give the same ids, and tiktoken's
encoder is several times faster per core. A tokenizer gets a twin only when its
definition has exactly the shape the twin reproduces, and only when both encode a probe
text identically; anything else keeps the HF encoder.
"""

from __future__ import annotations

import json

import tiktoken
from tokenizers import Tokenizer

# GPT-2's pre-tokenizer pattern, as HF's ByteLevel(use_regex=True) applies it.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Text that exercises every branch of the pattern and the byte-level alphabet.
PROBE = (
    "Hello, world! It's 2024 -- we'll see: 3.14159 and 1,000,000 items.\n\n\tIndented  "
    "  spaces   and trailing whitespace   \n"
    "Ünïcödé çafé naïve, 東京都 日本語のテキスト, Ελληνικά, русский, عربى, עברית 🙂🚀\n"
    "def f(x):\n    return x**2  # comment\r\n<|endoftext|> <html><b>bold</b></html> "
    "e-mail: a.b@example.com $12.50 100% don't I'M YOU'RE they've \u00a0\u200b end"
)


def _byte_decoder() -> dict[str, int]:
    """GPT-2's map from the printable characters its vocabulary uses back to bytes."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    pairs = [(b, b) for b in printable] + [(b, 256 + n) for n, b in enumerate(others)]
    return {chr(c): b for b, c in pairs}


def _has_twin_shape(spec: dict) -> bool:
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    plain_model = model.get("type") == "BPE" and not any(
        model.get(key)
        for key in (
            "dropout",
            "unk_token",
            "continuing_subword_prefix",
            "end_of_word_suffix",
            "byte_fallback",
            "ignore_merges",
        )
    )
    byte_level = (
        pre.get("type") == "ByteLevel"
        and pre.get("use_regex", True)
        and not pre.get("add_prefix_space", False)
    )
    # Added tokens are matched in the raw text by both, but only the plain kind alike.
    added_plain = all(
        not (t.get("lstrip") or t.get("rstrip") or t.get("single_word"))
        for t in spec.get("added_tokens") or []
    )
    return plain_model and byte_level and spec.get("normalizer") is None and added_plain


def tiktoken_twin(tokenizer: Tokenizer) -> tiktoken.Encoding | None:
    """An Encoding giving `tokenizer`'s ids, or None: its definition must have the shape
    the twin reproduces, and both must encode a probe text alike."""
    spec = json.loads(tokenizer.to_str())
    if not _has_twin_shape(spec):
        return None
    decoder = _byte_decoder()
    added = {t["content"]: t["id"] for t in spec.get("added_tokens") or []}
    try:
        ranks = {
            bytes(decoder[ch] for ch in token): rank
            for token, rank in spec["model"]["vocab"].items()
            if token not in added
        }
    except KeyError:  # a token outside the byte-level alphabet
        return None
    twin = tiktoken.Encoding(
        "raypipe-byte-level-bpe",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=added,
    )
    expected = tokenizer.encode(PROBE, add_special_tokens=False).ids
    return twin if encode(twin, PROBE) == expected else None


def encode(twin: tiktoken.Encoding, text: str) -> list[int]:
    # Added tokens in the text become their ids, as HF's tokenizer does.
    return twin.encode(text, allowed_special="all")
