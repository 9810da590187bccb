"""Duplicate examples: exact, near (MinHash + LSH) and semantic (embeddings + an inverted-file
index). None of them compares all pairs: candidates come from hash buckets or index cells,
and only candidates are verified. In every cluster the first example in input order is the
keeper; the others point to it.

Signatures are the pipeline's (raypipe.dedup.minhash): the same shingles and permutations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from raypipe.dedup.minhash import MinHasher

_EMPTY = np.iinfo(np.uint32).max


def exact_keys(texts: Sequence[str]) -> list[bytes]:
    """128-bit keys of the texts with whitespace collapsed."""
    return [
        hashlib.sha256(" ".join(t.split()).encode("utf-8", "surrogatepass")).digest()[:16]
        for t in texts
    ]


def exact_pairs(keys: Sequence[bytes]) -> np.ndarray:
    """(keeper, duplicate) index pairs of equal keys."""
    first: dict[bytes, int] = {}
    pairs = []
    for i, key in enumerate(keys):
        keeper = first.setdefault(key, i)
        if keeper != i:
            pairs.append((keeper, i))
    return np.array(pairs, np.int64).reshape(-1, 2)


def signatures(texts: Sequence[str], num_perm: int, words: int) -> np.ndarray:
    """[n, num_perm] uint32 MinHash signatures of `words`-word shingles, a text shorter than
    that being one shingle (a text without words: all max, nobody's duplicate)."""
    return MinHasher(words, num_perm, short_texts=True).signatures(list(texts))[0]


def bands_for(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) whose S-curve best separates Jaccard below and above `threshold`:
    the least false-positive plus false-negative probability mass (as datasketch chooses)."""
    s = np.linspace(0, 1, 201)
    best, choice = np.inf, (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        hit = 1 - (1 - s**rows) ** bands
        error = np.trapezoid(np.where(s < threshold, hit, 1 - hit), s)
        if error < best:
            best, choice = error, (bands, rows)
    return choice


def near_pairs(sigs: np.ndarray, threshold: float) -> np.ndarray:
    """(keeper, duplicate) pairs whose estimated Jaccard is at least `threshold`."""
    n, num_perm = sigs.shape
    bands, rows = bands_for(threshold, num_perm)
    usable = np.flatnonzero((sigs != _EMPTY).any(axis=1))
    weights = np.random.default_rng(1).integers(1, 2**63, rows, dtype=np.uint64) | np.uint64(1)
    found = []
    for band in range(bands):
        block = sigs[usable, band * rows : (band + 1) * rows].astype(np.uint64)
        keys = (block * weights).sum(axis=1)  # wraps mod 2**64: a hash of the band
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        starts = np.ones(len(order), bool)
        starts[1:] = sorted_keys[1:] != sorted_keys[:-1]
        head = order[np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))]
        members = ~starts
        found.append(np.stack([usable[head[members]], usable[order[members]]], axis=1))
    candidates = np.unique(np.concatenate(found) if found else np.empty((0, 2), np.int64), axis=0)
    if not len(candidates):
        return candidates.reshape(-1, 2)
    candidates = np.sort(candidates, axis=1)
    similar = (sigs[candidates[:, 0]] == sigs[candidates[:, 1]]).mean(axis=1) >= threshold
    return candidates[similar]


def semantic_pairs(embeddings: np.ndarray, threshold: float, nprobe: int) -> np.ndarray:
    """(keeper, duplicate) pairs with cosine above `threshold` on L2-normalized embeddings.

    An inverted-file index of ~sqrt(n) cells: each example is compared with the examples of
    its `nprobe` nearest cells only, so the work grows as n * sqrt(n), never n * n.
    """
    import faiss

    n, dim = embeddings.shape
    vectors = np.ascontiguousarray(embeddings, np.float32)
    cells = int(np.sqrt(n))
    if cells < 16:  # too few examples to partition: compare with all, still without n x n
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, cells, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).permutation(n)[: 64 * cells]
        index.train(vectors[sample])
        index.nprobe = min(nprobe, cells)
    index.add(vectors)
    limits, _, neighbours = index.range_search(vectors, threshold)
    queries = np.repeat(np.arange(n), np.diff(limits.astype(np.int64)))
    pairs = np.stack([queries, neighbours], axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(np.sort(pairs, axis=1), axis=0)


def keepers(n: int, pairs: np.ndarray) -> np.ndarray:
    """For each of n items, the first item of its cluster (connected by `pairs`)."""
    parent = np.arange(n)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs.tolist():
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)  # the earlier item stays the root
    return np.array([root(i) for i in range(n)])
