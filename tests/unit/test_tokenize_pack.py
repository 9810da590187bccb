import numpy as np
import pyarrow as pa

from raypipe.pack import pack_concat
from raypipe.shuffle import order_key, shard_of
from raypipe.stages.tokenize import Tokenize
from raypipe.tokenizer import load_tokenizer


def test_builtin_gpt2_matches_reference_ids():
    loaded = load_tokenizer("gpt2")
    assert loaded.tokenizer.encode("Hello world").ids == [15496, 995]
    assert (loaded.eos_id, loaded.vocab_size, loaded.dtype) == (50256, 50257, "uint16")


def test_tokenize_appends_eos_to_every_document():
    out = Tokenize("gpt2", None)(pa.table({"uid": [1, 2], "text": ["Hello world", ""]}))
    assert out["tokens"].to_pylist() == [[15496, 995, 50256], [50256]]
    assert out["n_tokens"].to_pylist() == [3, 1]
    assert out["chars"].to_pylist() == [11, 0]
    assert "text" not in out.column_names


def test_concat_packing_pads_only_the_last_sequence():
    lengths = np.array([3, 5, 4])
    flat = np.arange(1, 13, dtype=np.uint16)
    packed = pack_concat(flat, lengths, seq_len=5, pad_id=0)
    assert packed.tokens.tolist() == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 0, 0, 0]]
    # (start, length, document, offset): the second document continues into sequence 1
    assert packed.segments.tolist() == [
        [0, 3, 0, 0],
        [3, 2, 1, 0],
        [5, 3, 1, 2],
        [8, 2, 2, 0],
        [10, 2, 2, 2],
    ]
    assert (packed.n_valid, packed.split_documents) == (12, 2)


def test_shard_assignment_is_seeded_and_spread():
    uids = np.arange(10_000, dtype=np.int64)
    shards = shard_of(uids, 4, seed=1)
    assert np.array_equal(shards, shard_of(uids, 4, seed=1))
    assert not np.array_equal(shards, shard_of(uids, 4, seed=2))
    assert np.bincount(shards).min() > 2_300
    order = np.argsort(order_key(uids, 1))
    assert abs(np.corrcoef(order, uids)[0, 1]) < 0.05


def test_shard_names_spread_over_prefixes_and_parse_back():
    from raypipe.shards import shard_group, shard_name

    names = [shard_name(g) for g in range(256)]
    assert len({name[:2] for name in names}) > 100  # many distinct leading characters
    assert [shard_group(f"{name}.tokens.npy") for name in names] == list(range(256))
