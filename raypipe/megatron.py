"""Megatron-LM indexed dataset files (`NAME.bin` + `NAME.idx`), written without Megatron.

Megatron-LM's GPTDataset packs documents into sequences itself at training time, so this
format holds whole documents (each ending in EOS, as `preprocess_data.py --append-eod`
writes them), one Megatron "sequence" per document. Layout of `NAME.idx` (little endian):

    b"MMIDIDX\\x00\\x00"   header
    uint64 1             version
    uint8  dtype code    8 = uint16, 4 = int32
    uint64 S             sequences (= documents)
    uint64 S + 1         entries of document_indices
    int32[S]             sequence lengths (tokens)
    int64[S]             byte offset of each sequence in NAME.bin
    int64[S + 1]         document_indices: 0, 1, ..., S (one sequence per document)

`NAME.bin` is the tokens of every document back to back.
"""

from __future__ import annotations

import struct

import numpy as np

HEADER = b"MMIDIDX\x00\x00"
DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}


def token_dtype(vocab_size: int) -> np.dtype:
    """Megatron's choice: uint16 below 65,500 entries, else int32."""
    return np.dtype(np.uint16 if vocab_size < 65_500 else np.int32)


def index_bytes(doc_lengths: np.ndarray, dtype: np.dtype) -> bytes:
    lengths = np.asarray(doc_lengths, np.int64)
    pointers = (np.cumsum(lengths) - lengths) * dtype.itemsize
    return b"".join(
        [
            HEADER,
            struct.pack("<QBQQ", 1, DTYPE_CODES[dtype], len(lengths), len(lengths) + 1),
            lengths.astype("<i4").tobytes(),
            pointers.astype("<i8").tobytes(),
            np.arange(len(lengths) + 1, dtype="<i8").tobytes(),
        ]
    )


def read_index(data: bytes) -> tuple[np.dtype, np.ndarray]:
    """The token dtype and the document lengths of a `NAME.idx` written by index_bytes."""
    if not data.startswith(HEADER):
        raise ValueError("not a Megatron-LM index (bad header)")
    _, code, count, _ = struct.unpack_from("<QBQQ", data, len(HEADER))
    dtype = next(d for d, c in DTYPE_CODES.items() if c == code)
    start = len(HEADER) + struct.calcsize("<QBQQ")
    return dtype, np.frombuffer(data, "<i4", count, start).astype(np.int64)
