"""Packing strategies: every token placed once, boundaries exact, best_fit keeps documents whole,
concat's split window cuts right after a boundary token."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raypipe.pack import DOCUMENT, LENGTH, OFFSET, START, Packer, best_fit_bins, join, pack
from raypipe.shards import Shard

PAD = 0


def corpus(lengths: list[int]) -> np.ndarray:
    """Document d is tokens d*1000+1, d*1000+2, ...: every token names its document and place."""
    return np.concatenate(
        [np.arange(d * 1000 + 1, d * 1000 + 1 + n) for d, n in enumerate(lengths)] or [[]]
    ).astype(np.uint32)


documents = st.lists(st.integers(1, 300), min_size=0, max_size=60)
settings_ = settings(max_examples=150, deadline=None)
# Boundary tables over the corpus' token ids: none, sparse or dense boundary tokens.
boundaries = st.tuples(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.01, 0.1, 0.5]))


def boundary_table(seed: int, density: float) -> np.ndarray:
    return np.random.default_rng(seed).random(61 * 1000) < density


@settings_
@given(
    documents,
    st.integers(8, 128),
    st.sampled_from(["concat", "best_fit", "pad"]),
    st.integers(1, 16),
    st.integers(0, 64),
    boundaries,
)
def test_every_token_placed_once_and_documents_read_back(
    lengths, seq_len, strategy, buffer, window, boundary
):
    flat = corpus(lengths)
    window = min(window, seq_len // 2) if strategy == "concat" else 0
    n = np.array(lengths, np.int64)
    packed = pack(flat, n, seq_len, PAD, strategy, buffer, window, boundary_table(*boundary))
    tokens = packed.tokens.reshape(-1)
    assert packed.tokens.shape[1] == seq_len
    assert packed.n_valid == len(flat)
    assert sorted(tokens[tokens != PAD].tolist()) == sorted(flat.tolist())
    covered = np.zeros(len(tokens), bool)
    for start, length, doc, offset in packed.segments.tolist():
        assert start // seq_len == (start + length - 1) // seq_len  # inside one sequence
        assert tokens[start : start + length].tolist() == list(
            range(doc * 1000 + 1 + offset, doc * 1000 + 1 + offset + length)
        )
        covered[start : start + length] = True
    assert not tokens[~covered].any()  # everything outside a segment is padding
    assert np.all(np.diff(packed.segments[:, START]) > 0)
    shard = Shard("s", packed.tokens, packed.segments)
    assert [d.tolist() for d in shard.documents()] == [
        list(range(d * 1000 + 1, d * 1000 + 1 + n)) for d, n in enumerate(lengths)
    ]


@settings_
@given(documents, st.integers(8, 128), st.integers(1, 16))
def test_best_fit_splits_only_documents_longer_than_a_sequence(lengths, seq_len, buffer):
    packed = pack(corpus(lengths), np.array(lengths, np.int64), seq_len, PAD, "best_fit", buffer)
    pieces = np.bincount(packed.segments[:, DOCUMENT], minlength=len(lengths))
    for n, count in zip(lengths, pieces.tolist(), strict=True):
        assert count == 1 if n <= seq_len else count >= -(-n // seq_len)
    assert packed.split_documents == sum(n > seq_len for n in lengths)


@settings_
@given(documents, st.integers(8, 128))
def test_concat_pads_only_the_last_sequence_and_pad_one_document_per_sequence(lengths, seq_len):
    n = np.array(lengths, np.int64)
    concat = pack(corpus(lengths), n, seq_len, PAD, "concat", 1)
    assert concat.tokens.shape[0] == -(-sum(lengths) // seq_len)
    padded = pack(corpus(lengths), n, seq_len, PAD, "pad", 1)
    assert padded.tokens.shape[0] == sum(-(-x // seq_len) for x in lengths)
    assert np.all(padded.segments[:, START] % seq_len == 0)
    assert np.all(padded.segments[:, OFFSET] % seq_len == 0)


def test_best_fit_fills_gaps_with_later_documents():
    # 6 + 4 and 7 + 3 fill two sequences exactly; concat order would split one of them.
    lengths = np.array([6, 7, 4, 3])
    bins = best_fit_bins(lengths, 10, buffer=4)
    assert sorted(sorted(doc for doc, _, _ in b) for b in bins) == [[0, 2], [1, 3]]
    packed = pack(corpus(lengths.tolist()), lengths, 10, PAD, "best_fit", 4)
    assert packed.tokens.shape == (2, 10) and packed.n_valid == 20
    assert pack(corpus(lengths.tolist()), lengths, 10, PAD, "concat", 4).split_documents == 1


def test_best_fit_fills_gaps_with_pieces_of_long_documents():
    # 7 and 8 leave gaps of 3 and 2; the 15-token document fills them and one sequence
    lengths = np.array([7, 8, 15])
    packed = pack(corpus(lengths.tolist()), lengths, 10, PAD, "best_fit", 3)
    assert packed.tokens.shape == (3, 10) and packed.n_valid == 30
    assert packed.split_documents == 1


def test_best_fit_buffer_bounds_open_sequences():
    lengths = np.full(100, 6)  # no two fit together: each needs its own sequence
    bins = best_fit_bins(lengths, 10, buffer=3)
    assert sorted(doc for b in bins for doc, _, _ in b) == list(range(100))
    assert all(len(b) == 1 for b in bins)


@pytest.mark.parametrize("strategy", ["concat", "best_fit", "pad"])
def test_long_document_spans_sequences_in_order(strategy):
    packed = pack(corpus([25]), np.array([25]), 10, PAD, strategy, 4)
    assert packed.segments[:, LENGTH].tolist() == [10, 10, 5]
    assert packed.split_documents == 1


@settings_
@given(documents, st.integers(8, 128), st.integers(1, 64), boundaries)
def test_concat_splits_right_after_the_last_boundary_in_the_window(
    lengths, seq_len, window, boundary
):
    window, table = min(window, seq_len // 2), boundary_table(*boundary)
    flat = corpus(lengths)
    packed = pack(flat, np.array(lengths, np.int64), seq_len, PAD, "concat", 1, window, table)
    # Each sequence holds the stream's next tokens from its first position, then padding.
    filled = np.bincount(packed.segments[:, START] // seq_len, packed.segments[:, LENGTH])
    filled = filled.astype(np.int64)
    stream = np.concatenate([row[:n] for row, n in zip(packed.tokens, filled, strict=True)] or [[]])
    assert stream.tolist() == flat.tolist()
    doc_ends = set(np.cumsum(lengths).tolist())
    start = 0
    for n in filled[:-1].tolist():
        end = start + seq_len
        # A clean cut follows a boundary token or ends a document, in the last `window` places.
        clean = [p + 1 for p in range(end - window, end) if table[flat[p]] or p + 1 in doc_ends]
        assert start + n == (clean[-1] if clean else end)
        start += n
    assert len(filled) == 0 or 0 < filled[-1] <= seq_len and start + filled[-1] == len(flat)
    assert packed.split_documents == sum(
        len({int(s) // seq_len for s in packed.segments[packed.segments[:, DOCUMENT] == d, START]})
        > 1
        for d in range(len(lengths))
    )


def test_concat_window_moves_a_crossing_document_to_the_next_sequence():
    # Document 0 ends with position 6 of 10, inside a window of 4 (positions 6-9): document
    # 1 starts the next sequence whole instead of being split 3 + 2. A window of 3 misses it.
    lengths = np.array([7, 5])
    none = np.zeros(61 * 1000, bool)
    clean = pack(corpus([7, 5]), lengths, 10, PAD, "concat", 1, 4, none)
    assert clean.split_documents == 0
    assert clean.segments[:, START].tolist() == [0, 10]
    assert clean.n_valid / clean.tokens.size == 12 / 20
    assert pack(corpus([7, 5]), lengths, 10, PAD, "concat", 1, 3, none).split_documents == 1


@settings_
@given(
    documents,
    st.integers(8, 128),
    st.sampled_from(["concat", "best_fit", "pad"]),
    st.integers(1, 16),
    st.integers(0, 64),
    boundaries,
    st.lists(st.integers(0, 60), max_size=8),
)
def test_packing_in_chunks_gives_what_packing_at_once_gives(
    lengths, seq_len, strategy, buffer, window, boundary, cuts
):
    flat, n = corpus(lengths), np.array(lengths, np.int64)
    window = min(window, seq_len // 2) if strategy == "concat" else 0
    table = boundary_table(*boundary)
    whole = pack(flat, n, seq_len, PAD, strategy, buffer, window, table)
    packer = Packer(seq_len, PAD, strategy, buffer, flat.dtype, window, table)
    edges = [0, *sorted(min(c, len(lengths)) for c in cuts), len(lengths)]
    starts = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
    parts = [
        packer.add(flat[starts[a] : starts[b]], n[a:b])
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]
    chunked = join([*parts, packer.finish()])
    assert np.array_equal(chunked.tokens, whole.tokens)
    assert np.array_equal(chunked.segments, whole.segments)


def test_best_fit_packs_the_bins_it_plans():
    lengths = np.array([6, 7, 4, 3, 12, 1, 9])
    packed = pack(corpus(lengths.tolist()), lengths, 10, PAD, "best_fit", 3)
    planned = [piece for b in best_fit_bins(lengths, 10, 3) for piece in b]
    assert packed.segments[:, [DOCUMENT, OFFSET, LENGTH]].tolist() == [list(p) for p in planned]
