"""The ablation's tokenizer: a small byte-level BPE trained on the input, for every variant.

A model of a few million parameters spends most of its compute and parameters on a
50k-token vocabulary's embedding and output layer; a few thousand tokens leave them to the
transformer. Bits per byte does not depend on the tokenizer, and every variant shares the
one trained here, from the input before any stage rejects anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from raypipe.batch import alive_texts
from raypipe.io.readers import read_file
from raypipe.stages.extract import Extract
from raypipe.workers import InputFile

EOS = "<|endoftext|>"
SAMPLE_BYTES = 32 << 20  # text the vocabulary is learnt from: enough for a few thousand merges


def input_texts(files: list[InputFile], extract, limit: int = SAMPLE_BYTES) -> Iterator[str]:
    """Texts of the input files as the pipeline sees them after extraction, up to `limit`."""
    stage, size = Extract(extract), 0
    for index, file in enumerate(files):
        for batch in read_file(file.uri, index, file.input, 1024):
            for text in alive_texts(stage(batch))[1]:
                yield text
                size += len(text)
                if size >= limit:
                    return


def train_bpe(texts: Iterator[str], vocab_size: int, path: str | Path) -> Path:
    """A byte-level BPE of `vocab_size` tokens (the last is the end-of-document token)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path
