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
        self.pieces: dict[int, list[tuple[int, int, int]]] = {}  # by sequence id
        self.started = 0  # sequences started: the next id
        self.spaces: list[tuple[int, int]] = []  # open sequences: (space left, id), ascending
        self.closed: list[int] = []  # ids, in the order they filled up

    def _new(self) -> tuple[int, int]:
        key, self.started = self.started, self.started + 1
        self.pieces[key] = []
        return self.capacity, key

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

    def place(self, documents: np.ndarray, lengths: np.ndarray, keep: int) -> None:
        """One window of documents: those of at most `capacity` tokens whole, longest first,
        into the open sequence they fill most tightly (best-fit-decreasing); the longer
        ones, which must be split anyway, into the gaps left, largest first, then new
        sequences. Past `keep` open sequences the fullest close."""
        by_length = np.argsort(-lengths, kind="stable")
        whole = lengths[by_length] <= self.capacity
        for at in by_length[whole].tolist():
            self.put_whole(int(documents[at]), int(lengths[at]))
        for at in np.sort(by_length[~whole]).tolist():
            self.put_split(int(documents[at]), int(lengths[at]))
        self.close_fullest(keep)

    def take_closed(self) -> list[list[tuple[int, int, int]]]:
        """The sequences closed since the last call, in the order they closed, forgotten."""
        closed, self.closed = self.closed, []
        return [self._forget(k) for k in closed]

    def take_open(self) -> list[list[tuple[int, int, int]]]:
        """The sequences still open, in the order they were started, forgotten."""
        keys, self.spaces = sorted(k for _, k in self.spaces), []
        return [self._forget(k) for k in keys]

    def _forget(self, key: int) -> list[tuple[int, int, int]]:
        return self.pieces.pop(key)


def best_fit_bins(
    doc_lengths: np.ndarray, capacity: int, buffer: int
) -> list[list[tuple[int, int, int]]]:
    """Pieces (document, offset, length) grouped into sequences of `capacity` tokens.

    Documents arrive in windows of `buffer`, each placed by `_Sequences.place`. Open
    sequences carry over to the next window; a full one closes at once, and past `buffer`
    open ones the fullest close, so memory stays bounded however long the input.
    """
    sequences = _Sequences(capacity)
    lengths = np.asarray(doc_lengths, np.int64)
    for first in range(0, len(lengths), buffer):
        window = np.arange(first, min(first + buffer, len(lengths)))
        sequences.place(window, lengths[window], buffer)
    return sequences.take_closed() + sequences.take_open()


class Packer:
    """Packing over a stream of documents that arrive in chunks, in shard order.

    Each `add` returns the sequences its documents completed, and `finish` the rest:
    together exactly what packing the whole stream at once gives (segments numbered over
    the whole stream). The state stays bounded whatever the stream's length: concat
    keeps the unfinished last sequence (under seq_len tokens), best_fit the documents of
    its current window and of its open sequences (about 2 x buffer), pad nothing.
    """

    def __init__(
        self,
        seq_len: int,
        pad_id: int,
        strategy: str,
        buffer: int,
        dtype: np.dtype,
        window: int = 0,
        boundary: np.ndarray | None = None,
    ) -> None:
        self.seq_len, self.pad_id, self.strategy, self.buffer = seq_len, pad_id, strategy, buffer
        self.dtype, self.window, self.boundary = np.dtype(dtype), window, boundary
        self.sequences = 0  # sequences returned so far
        self.documents = 0  # documents received so far
        # concat: the unfinished last sequence, documents `tail_first`... of `tail_lengths`
        # (the first of them from `tail_offset` on).
        self.tail = np.zeros(0, self.dtype)
        self.tail_lengths = np.zeros(0, np.int64)
        self.tail_first = self.tail_offset = 0
        # best_fit: tokens of each document not yet wholly in a returned sequence.
        self.bins = _Sequences(seq_len)
        self.held: dict[int, np.ndarray] = {}
        self.left: dict[int, int] = {}
        self.placed = 0  # documents placed in sequences

    def add(self, flat: np.ndarray, doc_lengths: np.ndarray) -> Packed:
        return self._step(flat, np.asarray(doc_lengths, np.int64), final=False)

    def finish(self) -> Packed:
        return self._step(np.zeros(0, self.dtype), np.zeros(0, np.int64), final=True)

    def _step(self, flat: np.ndarray, doc_lengths: np.ndarray, final: bool) -> Packed:
        first = self.documents
        self.documents += len(doc_lengths)
        if self.strategy == "pad":
            packed = pack_pad(flat, doc_lengths, self.seq_len, self.pad_id)
            return self._numbered(packed.tokens, packed.segments, first, 0)
        if self.strategy == "best_fit":
            return self._best_fit(flat, doc_lengths, first, final)
        return self._concat(flat, doc_lengths, first, final)

    def _numbered(
        self, tokens: np.ndarray, segments: np.ndarray, first: int, offset: int
    ) -> Packed:
        """Segments of a stream that starts at document `first`, `offset` tokens into it,
        renumbered over the whole stream."""
        segments = segments.copy()
        segments[:, OFFSET] += np.where(segments[:, DOCUMENT] == 0, offset, 0)
        segments[:, DOCUMENT] += first
        segments[:, START] += self.sequences * self.seq_len
        self.sequences += len(tokens)
        return Packed(tokens, segments)

    def _concat(self, flat: np.ndarray, lengths: np.ndarray, first: int, final: bool) -> Packed:
        if len(self.tail_lengths):
            flat = np.concatenate([self.tail, flat])
            lengths = np.concatenate([self.tail_lengths, lengths])
            first = self.tail_first
        offset, self.tail_offset = self.tail_offset, 0
        self.tail, self.tail_lengths = self.tail[:0], self.tail_lengths[:0]
        packed = pack_concat(flat, lengths, self.seq_len, self.pad_id, self.window, self.boundary)
        tokens, segments = packed.tokens, packed.segments
        last = segments[:, START] >= (len(tokens) - 1) * self.seq_len
        held = int(segments[last, LENGTH].sum())
        if not final and len(tokens) and held < self.seq_len:
            # The last sequence can still grow: it starts the next chunk's stream.
            doc, at = (int(v) for v in segments[last][0, [DOCUMENT, OFFSET]])
            self.tail = flat[len(flat) - held :].copy()
            self.tail_lengths = np.concatenate([[lengths[doc] - at], lengths[doc + 1 :]])
            self.tail_first, self.tail_offset = first + doc, at + (offset if doc == 0 else 0)
            tokens, segments = tokens[:-1], segments[~last]
        return self._numbered(tokens, segments, first, offset)

    def _best_fit(self, flat: np.ndarray, lengths: np.ndarray, first: int, final: bool) -> Packed:
        starts = _doc_starts(lengths).tolist()
        for doc, (start, end) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
            self.held[first + doc] = flat[start:end].copy()  # so the chunk itself is let go
            self.left[first + doc] = end - start
        waiting = self.documents - self.placed
        while waiting >= self.buffer or (final and waiting):
            window = np.arange(self.placed, self.placed + min(self.buffer, waiting))
            sizes = np.array([len(self.held[d]) for d in window.tolist()], np.int64)
            self.bins.place(window, sizes, self.buffer)
            self.placed += len(window)
            waiting -= len(window)
        bins = self.bins.take_closed() + (self.bins.take_open() if final else [])
        tokens = np.full((len(bins), self.seq_len), self.pad_id, self.dtype)
        rows = []
        for row, pieces in enumerate(bins):
            at = 0
            for doc, offset, length in pieces:
                tokens[row, at : at + length] = self.held[doc][offset : offset + length]
                rows.append((row * self.seq_len + at, length, doc, offset))
                at += length
                self.left[doc] -= length
                if not self.left[doc]:
                    del self.held[doc], self.left[doc]
        return self._numbered(tokens, np.array(rows, np.int64).reshape(-1, 4), 0, 0)


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
    """Documents of one shard (concatenated in `flat`) packed by `strategy`, at once.

    `window` and `boundary` shape concat's splits (see pack_concat).
    """
    packer = Packer(seq_len, pad_id, strategy, buffer, flat.dtype, window, boundary)
    return join([packer.add(flat, doc_lengths), packer.finish()])


def join(parts: list[Packed]) -> Packed:
    """Consecutive results of one Packer as one."""
    return Packed(
        np.concatenate([p.tokens for p in parts]), np.concatenate([p.segments for p in parts])
    )


@dataclass(frozen=True)
class Packing:
    """How a shard's documents become sequences (the pack section, decided once per run)."""

    seq_len: int
    pad_id: int
    strategy: str
    buffer: int
    split_window: int = 0
    boundary: np.ndarray | None = None  # bool per token id: where concat may cut cleanly

    def packer(self, dtype: np.dtype) -> Packer:
        return Packer(
            self.seq_len,
            self.pad_id,
            self.strategy,
            self.buffer,
            dtype,
            self.split_window,
            self.boundary,
        )
