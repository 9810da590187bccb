"""Token streams into fixed-length sequences, document boundaries kept beside them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Packed:
    """Sequences of one shard.

    tokens      [sequences, seq_len] ids; positions past `n_valid` (flat) are padding
    doc_starts  flat offsets where each document starts, then `n_valid` as the end
    """

    tokens: np.ndarray
    doc_starts: np.ndarray

    @property
    def n_valid(self) -> int:
        return int(self.doc_starts[-1])


def pack_concat(flat: np.ndarray, doc_lengths: np.ndarray, seq_len: int, pad_id: int) -> Packed:
    """Documents (each already ending in EOS) streamed back to back into sequences.

    A document that crosses a sequence end continues in the next sequence; only the
    last sequence is padded.
    """
    n_seq = max(1, -(-len(flat) // seq_len))
    tokens = np.full(n_seq * seq_len, pad_id, dtype=flat.dtype)
    tokens[: len(flat)] = flat
    starts = np.zeros(len(doc_lengths) + 1, np.int64)
    np.cumsum(doc_lengths, out=starts[1:])
    return Packed(tokens.reshape(n_seq, seq_len), starts)
