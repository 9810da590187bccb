"""MinHash signatures, LSH buckets and the sharded clustering, in one process."""

import numpy as np
import pyarrow as pa
import pytest

from raypipe.batch import reject
from raypipe.config import DedupConfig, NearDedupConfig
from raypipe.dedup.exact import DedupKeys
from raypipe.dedup.lsh import (
    BUCKET_HEADS,
    LshShard,
    bucket_edges,
    near_duplicates_here,
    size_histogram,
)
from raypipe.dedup.minhash import (
    MinHasher,
    Signatures,
    candidate_probability,
    estimated_jaccard,
    set_jaccard,
    shingle_hashes,
    shingle_sets,
)
from tests.batches import document_batch

VOCABULARY = np.array([f"{stem}{i}" for stem in ("tal", "mor", "ven", "quo") for i in range(1500)])
NEAR = NearDedupConfig(enabled=True)


def words(rng: np.random.Generator, n: int) -> list[str]:
    return rng.choice(VOCABULARY, n).tolist()


def edited(text: str, fraction: float, rng: np.random.Generator) -> str:
    """`text` with `fraction` of its words replaced by random ones."""
    tokens = text.split()
    for at in rng.choice(len(tokens), int(len(tokens) * fraction), replace=False):
        tokens[at] = str(rng.choice(VOCABULARY))
    return " ".join(tokens)


def jaccard(a: str, b: str, n: int = 5) -> float:
    grams = [{tuple(t.split()[i : i + n]) for i in range(len(t.split()) - n + 1)} for t in (a, b)]
    return len(grams[0] & grams[1]) / len(grams[0] | grams[1])


def signed(texts: list[str], dedup: DedupConfig | None = None, first_uid: int = 0) -> pa.Table:
    batch = document_batch(texts, first_uid, source="web", id_prefix="doc")
    near = (dedup or DedupConfig()).near.model_copy(update={"enabled": True})
    return Signatures(near)(DedupKeys(dedup or DedupConfig())(batch))


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """0-3: one cluster (3 edits of 0), 4-5: a pair, 6-15: unrelated, 16: exact copy of 4."""
    rng = np.random.default_rng(7)
    base, pair = " ".join(words(rng, 400)), " ".join(words(rng, 300))
    texts = [base, *(edited(base, 0.015, rng) for _ in range(3)), pair, edited(pair, 0.01, rng)]
    texts += [" ".join(words(rng, 300)) for _ in range(10)]
    return [*texts, pair]


def test_shingles_ignore_case_punctuation_and_spacing():
    a, _ = shingle_hashes(["The quick, brown fox -- jumps over the lazy dog!"], 5)
    b, _ = shingle_hashes(["the QUICK brown\n\nfox jumps   over the lazy dog"], 5)
    c, _ = shingle_hashes(["the quick brown fox jumps over the lazy cat"], 5)
    assert len(a) == 5 and (a == b).all()
    assert (a[:4] == c[:4]).all() and a[4] != c[4]


def test_short_and_rejected_documents_have_no_signature():
    batch = signed(["too short to shingle", " ".join(["word"] * 40), " ".join(["word"] * 40)])
    batch = Signatures(NEAR)(reject(batch, np.array([False, False, True]), "quality", "bad"))
    assert batch["minhash"].is_null().to_pylist() == [True, False, True]
    assert batch.schema.field("minhash").type == pa.binary(4 * 14 * 8)


def test_estimated_jaccard_tracks_the_true_jaccard():
    rng = np.random.default_rng(3)
    hasher = MinHasher.of(NEAR)
    errors = []
    for fraction in np.linspace(0.0, 0.25, 26):
        a = " ".join(words(rng, 500))
        b = edited(a, fraction, rng)
        signatures, _ = hasher.signatures([a, b])
        errors.append(abs(estimated_jaccard(signatures[:1], signatures[1:])[0] - jaccard(a, b)))
    # 112 permutations: standard error <= 0.047
    assert np.mean(errors) < 0.05 and max(errors) < 0.15


def test_signatures_do_not_depend_on_batching():
    texts = [" ".join(words(np.random.default_rng(i), 60)) for i in range(6)]
    hasher = MinHasher.of(NEAR)
    whole, _ = hasher.signatures(texts)
    halves = np.concatenate([hasher.signatures(texts[:2])[0], hasher.signatures(texts[2:])[0]])
    assert (whole == halves).all()


def test_s_curve():
    p = candidate_probability(np.array([0.5, 0.7, 0.8, 0.9]), 14, 8)
    assert np.allclose(p, [0.053, 0.56, 0.924, 0.9998], atol=0.005)


def test_a_bucket_links_members_to_its_smallest_not_pairwise():
    keys = np.array([5, 5, 5, 5, 5, 5, 9, 9], np.uint64)
    uids = np.array([40, 10, 30, 20, 60, 50, 7, 7], np.int64)  # uid 7 twice: a retried batch
    edges = bucket_edges(keys, uids, np.zeros(8, np.int64))
    assert BUCKET_HEADS == 3
    heads = {10: [], 20: [10], 30: [10, 20]} | {m: [10, 20, 30] for m in (40, 50, 60)}
    assert edges.tolist() == [[m, h] for m, hs in heads.items() for h in hs]


def test_clusters_keep_the_first_document_and_name_it(corpus):
    removed, stats = near_duplicates_here([signed(corpus)], NEAR, excluded=np.array([16]))
    assert removed["uid"].to_pylist() == [1, 2, 3, 5]
    assert removed["duplicate_of"].to_pylist() == ["doc0", "doc0", "doc0", "doc4"]
    assert stats["cluster_sizes"] == {"2": 1, "3-4": 1}


def test_same_removals_whatever_the_shards_order_and_retries(corpus):
    batches = [signed(corpus[:7]), signed(corpus[7:], first_uid=7)]
    reference, _ = near_duplicates_here(batches, NEAR)
    for shards in (2, 3, 5):
        retried = [batches[1], batches[0], batches[1]]
        removed, _ = near_duplicates_here(retried, NEAR, shards=shards)
        assert removed.equals(reference)


def test_keeper_policy_longest(corpus):
    longest = corpus[2] + " " + " ".join(corpus[2].split()[:30])
    texts = [corpus[0], longest, corpus[3]]
    removed, _ = near_duplicates_here([signed(texts, DedupConfig(keeper="longest"))], NEAR)
    assert removed["duplicate_of"].to_pylist() == ["doc1", "doc1"]


def test_verification_removes_banding_false_positives():
    rng = np.random.default_rng(11)
    a = " ".join(words(rng, 300))
    b = edited(a, 0.12, rng)  # 5-gram Jaccard ~0.3
    loose = NearDedupConfig(enabled=True, bands=64, rows=1, verify=False)
    batch = signed([a, b], DedupConfig(near=loose))
    assert near_duplicates_here([batch], loose)[0]["uid"].to_pylist() == [1]
    checked = loose.model_copy(update={"verify": True})
    assert near_duplicates_here([batch], checked)[0].num_rows == 0


def test_shingle_sets_hold_each_documents_distinct_shingles():
    texts = ["a b c a b c a b c", "too short", "x y z w"]
    counts, flat = shingle_sets(texts, 3)
    assert counts.tolist() == [3, 0, 2]  # abc, bca, cab; none; xyz, yzw
    expected = [set((shingle_hashes([t], 3)[0] >> np.uint64(32)).tolist()) for t in texts]
    assert [set(flat[:3].tolist()), set(), set(flat[3:].tolist())] == expected
    for none in ([], ["too short"]):
        counts, flat = shingle_sets(none, 3)
        assert counts.tolist() == [0] * len(none) and len(flat) == 0


def test_set_jaccard_is_exact():
    rng = np.random.default_rng(5)
    sets = [np.unique(rng.integers(0, 60, size)).astype(np.uint32) for size in (40, 1, 30, 55)]
    counts = np.array([len(s) for s in sets])
    flat = np.concatenate(sets)
    a, b = np.array([0, 0, 2, 3, 1]), np.array([2, 3, 3, 3, 0])
    got = set_jaccard(flat, np.cumsum(counts) - counts, counts, a, b)
    expected = [
        len(set(sets[i].tolist()) & set(sets[j].tolist()))
        / len(set(sets[i].tolist()) | set(sets[j].tolist()))
        for i, j in zip(a, b, strict=True)
    ]
    assert got.tolist() == pytest.approx(expected) and got[3] == 1.0


def test_verification_links_by_exact_jaccard_on_either_side_of_the_threshold():
    """Pairs within 0.02 of the threshold, where a 112-minimum estimate errs either way."""
    rng = np.random.default_rng(2)
    loose = NearDedupConfig(enabled=True, bands=64, rows=1)  # every pair is a candidate
    texts, truth = [], []
    for k in range(12):
        a = " ".join(words(rng, 400))
        b = edited(a, 0.022 + 0.002 * (k % 4), rng)
        texts += [a, b]
        truth.append(jaccard(a, b) >= loose.threshold)
    assert 0 < sum(truth) < len(truth)
    removed, _ = near_duplicates_here([signed(texts, DedupConfig(near=loose))], loose, shards=3)
    assert removed["uid"].to_pylist() == [2 * k + 1 for k, near in enumerate(truth) if near]


def test_a_candidate_whose_text_was_not_read_again_is_a_clear_error():
    shard = LshShard(0, 1, 0.8)
    nodes = pa.table(
        {"uid": [1, 2], "rank": [1, 2], "id": ["a", "b"], "source": ["s", "s"], "url": [None, "u"]}
    )
    shard.add((np.array([9, 9], np.uint64), np.array([1, 2]), np.array([1, 2])), nodes)
    assert shard.seal() == 1
    shard.listen(*shard.requests())
    shard.add_shingles(np.array([1]), np.array([2]), np.array([5, 6], np.uint32))
    with pytest.raises(RuntimeError, match="no shingles for some candidate documents"):
        shard.shingles_for()


def test_cluster_size_histogram():
    assert size_histogram(np.array([2, 2, 3, 4, 5, 200])) == {"2": 2, "3-4": 2, "5-8": 1, "129+": 1}


def test_the_algorithm_module_does_not_use_ray():
    """The pure algorithm runs anywhere; only raypipe.dedup.lsh_actors schedules it."""
    import raypipe.dedup.lsh as algorithm

    assert not {"ray", "ray.data"} & {getattr(v, "__name__", "") for v in vars(algorithm).values()}


def test_shards_follow_the_workers_and_the_data_size():
    from raypipe.config import NearDedupConfig
    from raypipe.dedup.lsh import SHARD_BASE, SHARD_BYTES, shard_layout

    bands = NearDedupConfig(bands=14, rows=8, verify=False)
    assert shard_layout(1_000, bands, workers=1) == (2, SHARD_BASE + 500 * (256 + 14 * 72))
    assert shard_layout(1_000, bands, workers=8)[0] == 8  # ray.max_actors, or the CPUs
    # a billion documents (docs/neardup.md): the band tables alone ask for 295 shards
    shards, memory = shard_layout(10**9, bands, workers=32)
    assert shards == 295 and memory - SHARD_BASE <= SHARD_BYTES
    assert shard_layout(10**9, bands, workers=1024)[0] == 1024
    # verification's shingle sets, held after the band tables are gone, weigh more
    verified = NearDedupConfig(bands=14, rows=8, verify=True)
    assert shard_layout(10**9, verified, workers=32)[0] == 418
