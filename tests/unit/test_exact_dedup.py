import numpy as np
import pyarrow as pa

from raypipe.dedup.exact import content_hash, exact_duplicates


def group(texts, ranks=None, uids=None):
    n = len(texts)
    uids = uids if uids is not None else list(range(n))
    return pa.table(
        {
            "uid": pa.array(uids, pa.int64()),
            "id": [f"doc{u}" for u in uids],
            "source": ["s"] * n,
            "url": [f"https://example.org/{u}" for u in uids],
            "text_hash": content_hash(texts),
            "rank": pa.array(ranks or [0] * n, pa.int64()),
        }
    )


def test_first_copy_in_input_order_is_kept():
    drops = exact_duplicates(group(["a", "b", "a", "a", "c"], uids=[9, 1, 4, 7, 2]))
    assert sorted(zip(drops["id"].to_pylist(), drops["duplicate_of"].to_pylist(), strict=True)) == [
        ("doc7", "doc4"),
        ("doc9", "doc4"),
    ]


def test_drops_carry_their_url_to_the_ledger():
    drops = exact_duplicates(group(["a", "a"], uids=[3, 5]))
    assert drops.select(["id", "url"]).to_pylist() == [
        {"id": "doc5", "url": "https://example.org/5"}
    ]


def test_rank_beats_input_order():
    drops = exact_duplicates(group(["x", "x"], ranks=[0, -5]))
    assert drops["duplicate_of"].to_pylist() == ["doc1"]


def test_keeper_does_not_depend_on_row_order():
    table = group(["p", "q", "p", "q", "p"] * 20, uids=list(range(100)))
    rng = np.random.default_rng(0)
    expected = sorted(exact_duplicates(table).to_pylist(), key=lambda r: r["uid"])
    for _ in range(5):
        shuffled = table.take(pa.array(rng.permutation(100)))
        got = sorted(exact_duplicates(shuffled).to_pylist(), key=lambda r: r["uid"])
        assert got == expected
    assert len(expected) == 98


def test_sliced_batches_hash_correctly():
    table = group(["a", "b", "a", "b"])
    assert exact_duplicates(table.slice(1)).to_pylist() == [
        {
            "uid": 3,
            "id": "doc3",
            "source": "s",
            "url": "https://example.org/3",
            "duplicate_of": "doc1",
        }
    ]
