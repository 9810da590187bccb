"""Tokens a document may be cut after cleanly: the end of a paragraph, a sentence or the document.

Decided once from the tokenizer's vocabulary as a lookup table over token ids, so that
finding every clean cut in a shard is one vectorized `table[tokens]`.
"""

from __future__ import annotations

import re

import numpy as np

from raypipe.tokenizer import LoadedTokenizer

# A sentence ends in . ! or ?, possibly followed by closing quotes and spaces (`."`, `?' `).
SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019\u00bb\s]*$")


def is_boundary(text: str) -> bool:
    """Whether a token's decoded text ends a paragraph (holds a newline) or a sentence."""
    return "\n" in text or SENTENCE_END.search(text) is not None


def boundary_table(loaded: LoadedTokenizer) -> np.ndarray:
    """bool per token id: True for EOS and for tokens that end a paragraph or a sentence."""
    size = max(loaded.tokenizer.get_vocab(with_added_tokens=True).values()) + 1
    texts = loaded.tokenizer.decode_batch([[i] for i in range(size)], skip_special_tokens=False)
    table = np.fromiter(map(is_boundary, texts), bool, size)
    table[loaded.eos_id] = True
    return table
