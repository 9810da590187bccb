"""Documents into fixed-length sequences, with the document boundaries of every sequence.

Three strategies, one result: the tokens `[sequences, seq_len]` and their `segments`, one
row per piece of a document placed in a sequence. From the segments a loader restarts
positions and attention at each boundary, and the documents can be read back whole.

    concat    documents back to back; one crossing a sequence end continues in the next
              sequence, so only the last sequence is padded. With a split window, the
              crossing document is cut after the last paragraph or sentence end (a
              boundary token) in the sequence's final `window` positions, and the rest
              of that sequence is padding
    best_fit  best-fit-decreasing over a bounded buffer: a document no longer than seq_len
              is never split; longer ones fill the gaps the others leave, then sequences
              of their own; padding is left only where nothing remaining fits
    pad       one document per sequence (longer ones over several): the naive baseline
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

STRATEGIES = ("concat", "best_fit", "pad")
# Columns of `segments`: flat position of the piece's first token, its length, the
# document (index in the shard's order) and where in that document the piece starts.
START, LENGTH, DOCUMENT, OFFSET = range(4)


@dataclass(frozen=True)
class Packed:
    """Sequences of one shard.

    tokens    [sequences, seq_len] ids; positions no segment covers are padding
    segments  int64 [pieces, 4]: start (flat), length, document, offset; sorted by start
    """

    tokens: np.ndarray
    segments: np.ndarray

    @property
    def n_valid(self) -> int:
        return int(self.segments[:, LENGTH].sum())

    @property
    def split_documents(self) -> int:
        """Documents placed in more than one piece."""
        return int(np.count_nonzero(np.bincount(self.segments[:, DOCUMENT]) > 1))


def _doc_starts(doc_lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(doc_lengths) + 1, np.int64)
    np.cumsum(doc_lengths, out=starts[1:])
    return starts


def _assemble(
    flat: np.ndarray,
    doc_lengths: np.ndarray,
    segments: np.ndarray,
    n_seq: int,
    seq_len: int,
    pad_id: int,
) -> Packed:
    tokens = np.full(n_seq * seq_len, pad_id, dtype=flat.dtype)
    source = _doc_starts(doc_lengths)[segments[:, DOCUMENT]] + segments[:, OFFSET]
    # One slice copy per piece: pieces are hundreds of tokens, so this is memcpy-bound.
    for start, length, src in zip(
        segments[:, START].tolist(), segments[:, LENGTH].tolist(), source.tolist(), strict=True
    ):
        tokens[start : start + length] = flat[src : src + length]
    return Packed(tokens.reshape(-1, seq_len), segments)


def _segments(
    start: np.ndarray, length: np.ndarray, document: np.ndarray, offset: np.ndarray
) -> np.ndarray:
    return np.stack([start, length, document, offset], axis=1).astype(np.int64).reshape(-1, 4)


def _sequence_starts(
    flat: np.ndarray, doc_starts: np.ndarray, seq_len: int, window: int, boundary: np.ndarray
) -> np.ndarray:
    """Where each sequence begins in the document stream, cutting cleanly where the window allows.

    A clean cut falls right after a boundary token or at a document start. Each sequence
    ends at the last clean cut in its final `window` positions, else at seq_len tokens.
    """
    total = int(doc_starts[-1])
    if not total:
        return np.zeros(0, np.int64)
    # Two sorted runs merged (repeats are harmless to the search): numpy 2.x np.union1d
    # hashes, and took 25x the time of the whole packing on 240k boundaries of a book.
    clean = np.sort(np.concatenate([np.flatnonzero(boundary[flat]) + 1, doc_starts]), kind="stable")
    starts = [0]
    # One step per sequence: each start depends on where the previous sequence was cut.
    while (end := starts[-1] + seq_len) < total:
        last = int(clean[np.searchsorted(clean, end, side="right") - 1])
        starts.append(last if last > end - window else end)
    return np.array(starts, np.int64)


def pack_concat(
    flat: np.ndarray,
    doc_lengths: np.ndarray,
    seq_len: int,
    pad_id: int,
    window: int = 0,
    boundary: np.ndarray | None = None,
) -> Packed:
    """Documents (each already ending in EOS) streamed back to back into sequences.

    With `window` > 0, `boundary` (bool per token id) marks the tokens a document may be
    cut after; window <= seq_len / 2 keeps every sequence at least half full.
    """
    doc_starts = _doc_starts(doc_lengths)
    total = int(doc_starts[-1])
    if window:
        seq_starts = _sequence_starts(flat, doc_starts, seq_len, window, boundary)
    else:
        seq_starts = np.arange(0, total, seq_len, dtype=np.int64)
    cuts = np.union1d(doc_starts[:-1], seq_starts)
    cuts = cuts[cuts < total]
    lengths = np.diff(np.append(cuts, total))
    document = np.searchsorted(doc_starts, cuts, side="right") - 1
    sequence = np.searchsorted(seq_starts, cuts, side="right") - 1
    start = sequence * seq_len + cuts - seq_starts[sequence]
    segments = _segments(start, lengths, document, cuts - doc_starts[document])
    return _assemble(flat, doc_lengths, segments, len(seq_starts), seq_len, pad_id)


def _pieces(doc_lengths: np.ndarray, seq_len: int) -> tuple[np.ndarray, ...]:
    """Each document cut into seq_len pieces (the last one shorter): document, offset, length."""
    doc_lengths = np.asarray(doc_lengths, np.int64)
    counts = -(-doc_lengths // seq_len)
    document = np.repeat(np.arange(len(doc_lengths)), counts)
    index = np.arange(len(document)) - np.repeat(np.cumsum(counts) - counts, counts)
    offset = index * seq_len
    return document, offset, np.minimum(seq_len, doc_lengths[document] - offset)


def pack_pad(flat: np.ndarray, doc_lengths: np.ndarray, seq_len: int, pad_id: int) -> Packed:
    """One document per sequence; a longer one fills several, its last one padded."""
    document, offset, length = _pieces(doc_lengths, seq_len)
    start = np.arange(len(document), dtype=np.int64) * seq_len
    segments = _segments(start, length, document, offset)
    return _assemble(flat, doc_lengths, segments, len(document), seq_len, pad_id)


class _Sequences:
    """Sequences being filled with pieces (document, offset, length); open ones by space left."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.pieces: list[list[tuple[int, int, int]]] = []  # by sequence id
        self.spaces: list[tuple[int, int]] = []  # open sequences: (space left, id), ascending
        self.closed: list[int] = []  # ids, in the order they filled up

    def _new(self) -> tuple[int, int]:
        self.pieces.append([])
        return self.capacity, len(self.pieces) - 1

    def _add(self, key: int, piece: tuple[int, int, int], space: int) -> None:
        self.pieces[key].append(piece)
        if space:
            bisect.insort(self.spaces, (space, key))
        else:
            self.closed.append(key)

    def put_whole(self, doc: int, length: int) -> None:
        """Into the open sequence it fills most tightly, or a new one."""
        at = bisect.bisect_left(self.spaces, (length, -1))
        space, key = self.spaces.pop(at) if at < len(self.spaces) else self._new()
        self._add(key, (doc, 0, length), space - length)

    def put_split(self, doc: int, length: int) -> None:
        """Into the largest gaps first (the longest pieces), then new sequences."""
        offset = 0
        while offset < length:
            space, key = self.spaces.pop() if self.spaces else self._new()
            take = min(space, length - offset)
            self._add(key, (doc, offset, take), space - take)
            offset += take

    def close_fullest(self, keep: int) -> None:
        while len(self.spaces) > keep:
            self.closed.append(self.spaces.pop(0)[1])

    def in_order(self) -> list[list[tuple[int, int, int]]]:
        return [self.pieces[k] for k in self.closed + sorted(k for _, k in self.spaces)]


def best_fit_bins(
    doc_lengths: np.ndarray, capacity: int, buffer: int
) -> list[list[tuple[int, int, int]]]:
    """Pieces (document, offset, length) grouped into sequences of `capacity` tokens.

    Documents arrive in windows of `buffer`. A window's documents of at most `capacity`
    tokens go whole, longest first, into the open sequence they fill most tightly, or a new
    one (best-fit-decreasing). Its longer documents, which must be split anyway, then fill
    the gaps left, largest first, and new sequences. Open sequences carry over to the next
    window; a full one closes at once, and past `buffer` open ones the fullest close, so
    memory stays bounded however long the input.
    """
    sequences = _Sequences(capacity)
    lengths = np.asarray(doc_lengths, np.int64)
    for first in range(0, len(lengths), buffer):
        window = np.arange(first, min(first + buffer, len(lengths)))
        window = window[np.argsort(-lengths[window], kind="stable")]
        whole = lengths[window] <= capacity
        for doc in window[whole].tolist():
            sequences.put_whole(doc, int(lengths[doc]))
        for doc in np.sort(window[~whole]).tolist():
            sequences.put_split(doc, int(lengths[doc]))
        sequences.close_fullest(buffer)
    return sequences.in_order()


def pack_best_fit(
    flat: np.ndarray, doc_lengths: np.ndarray, seq_len: int, pad_id: int, buffer: int
) -> Packed:
    """Whole documents into sequences by best fit; only documents longer than seq_len split."""
    bins = best_fit_bins(doc_lengths, seq_len, buffer)
    pieces = np.array([p for b in bins for p in b], np.int64).reshape(-1, 3)
    sizes = np.fromiter((len(b) for b in bins), np.int64, len(bins))
    seq = np.repeat(np.arange(len(bins), dtype=np.int64), sizes)
    placed = pieces[:, 2]
    before = np.cumsum(placed) - placed  # tokens placed before each piece, over all bins
    start = seq * seq_len + before - np.repeat(before[np.cumsum(sizes) - sizes], sizes)
    segments = _segments(start, placed, pieces[:, 0], pieces[:, 1])
    return _assemble(flat, doc_lengths, segments, len(bins), seq_len, pad_id)


def pack(
    flat: np.ndarray,
    doc_lengths: np.ndarray,
    seq_len: int,
    pad_id: int,
    strategy: str,
    buffer: int,
    window: int = 0,
    boundary: np.ndarray | None = None,
) -> Packed:
    """Documents of one shard (concatenated in `flat`) packed by `strategy`.

    `window` and `boundary` shape concat's splits (see pack_concat).
    """
    if strategy == "best_fit":
        return pack_best_fit(flat, doc_lengths, seq_len, pad_id, buffer)
    if strategy == "pad":
        return pack_pad(flat, doc_lengths, seq_len, pad_id)
    return pack_concat(flat, doc_lengths, seq_len, pad_id, window, boundary)
