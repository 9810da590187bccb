"""MinHash signatures of whole batches, and the LSH band keys cut from them.

A document's shingles are its word n-grams (lowercased; any run of characters that are
neither letters nor digits separates words, so punctuation and whitespace do not matter).
Words are hashed once per batch with xxHash-64 (each distinct word once), n-grams are
combined from word hashes with numpy, and every permutation `a*x + b` (mod 2^64, a odd:
a bijection of the hash space) is applied to all shingles of a chunk at once. The
signature keeps the top 32 bits of each minimum: collisions of distinct minima stay at
2^-32, and a signature of 112 permutations is 448 bytes.

Verifying a candidate pair needs no signature: `shingle_sets` gives documents' distinct
shingles and `set_jaccard` the exact Jaccard of many pairs of them with one sort.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from raypipe.batch import alive, set_column
from raypipe.config import NearDedupConfig

NON_WORD = r"[^\pL\pN]+"
CHUNK_SHINGLES = 4096  # shingles permuted at once: bounds the [chunk, permutations] buffer
SHINGLE_MIX = np.uint64(0x9E3779B97F4A7C15)
PERMUTATION_SEED = 0x6D696E68617368
EMPTY = np.iinfo(np.uint64).max
JACCARD_MEMBERS = 1 << 22  # members of pairs sorted at once in set_jaccard (32 MB of keys)


def mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit reaches every output bit."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


Texts = list[str] | pa.Array | pa.ChunkedArray


def _text_array(texts: Texts) -> pa.Array:
    if isinstance(texts, pa.ChunkedArray):
        return texts.combine_chunks()
    return texts if isinstance(texts, pa.Array) else pa.array(texts, pa.large_string())


def word_hashes(texts: Texts) -> tuple[np.ndarray, np.ndarray]:
    """(xxHash-64 of every word in order, index of its document)."""
    parts = pc.split_pattern_regex(pc.utf8_lower(_text_array(texts)), NON_WORD)
    words = pc.list_flatten(parts)
    doc = pc.list_parent_indices(parts)
    nonempty = pc.greater(pc.binary_length(words), 0)
    words, doc = words.filter(nonempty), doc.filter(nonempty)
    encoded = words.dictionary_encode()
    distinct = encoded.dictionary.cast(pa.large_binary()).to_pylist()
    hashed = np.fromiter(map(xxhash.xxh64_intdigest, distinct), np.uint64, len(distinct))
    return hashed[encoded.indices.to_numpy()], doc.to_numpy().astype(np.int64)


def shingle_hashes(
    texts: Texts, ngram: int, short_texts: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every word n-gram, index of its document), in document order.

    A document with fewer than `ngram` words has no shingle (it is never a candidate),
    unless `short_texts`: then its words, if any, make one shingle.
    """
    words, doc = word_hashes(texts)
    count = max(0, len(words) - ngram + 1)
    h = words[:count].copy()
    for j in range(1, ngram):
        h = h * SHINGLE_MIX + words[j : j + count]
    inside = doc[:count] == doc[ngram - 1 : ngram - 1 + count]
    h, doc_of = h[inside], doc[:count][inside]
    lengths = np.bincount(doc, minlength=len(texts))
    short = np.flatnonzero((lengths > 0) & (lengths < ngram)) if short_texts else []
    if len(short):
        # The same polynomial over the words there are: one shingle per short document.
        first, length = (np.cumsum(lengths) - lengths)[short], lengths[short]
        whole = np.zeros(len(short), np.uint64)
        for j in range(ngram - 1):
            word = words[np.minimum(first + j, len(words) - 1)]
            whole = np.where(j < length, whole * SHINGLE_MIX + word, whole)
        order = np.argsort(np.concatenate([doc_of, short]), kind="stable")
        h, doc_of = np.concatenate([h, whole])[order], np.concatenate([doc_of, short])[order]
    return mix64(h), doc_of


class MinHasher:
    """bands x rows fixed permutations of `ngram`-word shingles: signatures of any run
    compare. `short_texts`: see `shingle_hashes`."""

    def __init__(self, ngram: int, bands: int, rows: int = 1, short_texts: bool = False):
        self.ngram, self.bands, self.rows, self.short_texts = ngram, bands, rows, short_texts
        rng = np.random.default_rng(PERMUTATION_SEED)
        perms = bands * rows
        self.a = rng.integers(0, EMPTY, perms, np.uint64, endpoint=True) | np.uint64(1)
        self.b = rng.integers(0, EMPTY, perms, np.uint64, endpoint=True)

    @classmethod
    def of(cls, cfg: NearDedupConfig) -> MinHasher:
        return cls(cfg.ngram, cfg.bands, cfg.rows)

    @property
    def permutations(self) -> int:
        return len(self.a)

    def signatures(self, texts: Texts) -> tuple[np.ndarray, np.ndarray]:
        """([docs, permutations] uint32 signatures, mask of documents that have shingles)."""
        shingles, doc = shingle_hashes(texts, self.ngram, self.short_texts)
        # Permutations along rows, shingles along columns: numpy's fast direction for both
        # the product and the per-document minimum.
        minima = np.full((self.permutations, len(texts)), EMPTY, np.uint64)
        buffer = np.empty((self.permutations, CHUNK_SHINGLES), np.uint64)
        a, b = self.a[:, None], self.b[:, None]
        for start in range(0, len(shingles), CHUNK_SHINGLES):
            x, d = shingles[start : start + CHUNK_SHINGLES], doc[start : start + CHUNK_SHINGLES]
            h = buffer[:, : len(x)]
            np.multiply(a, x, out=h)
            np.add(h, b, out=h)
            firsts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            docs = d[firsts]  # distinct: shingles of a document are contiguous
            chunk_minima = np.minimum.reduceat(h, firsts, axis=1)
            minima[:, docs] = np.minimum(minima[:, docs], chunk_minima)
        has = np.zeros(len(texts), bool)
        has[doc] = True
        return (minima.T >> np.uint64(32)).astype(np.uint32), has

    def band_keys(self, signatures: np.ndarray) -> np.ndarray:
        """[docs, bands] 64-bit keys: equal keys = equal rows in that band (of that band)."""
        bands = signatures.reshape(len(signatures), self.bands, self.rows).astype(np.uint64)
        key = np.broadcast_to(np.arange(self.bands, dtype=np.uint64), bands.shape[:2]).copy()
        for row in range(self.rows):
            key = mix64(key * SHINGLE_MIX + bands[:, :, row])
        return key


def _tagged(groups: np.ndarray, members: np.ndarray) -> np.ndarray:
    """One sortable 64-bit key per (group, 32-bit member): the group in the top half."""
    return (groups.astype(np.uint64) << np.uint64(32)) | members.astype(np.uint64)


def shingle_sets(texts: Texts, ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """(size of each document's shingle set, the sets' members one set after another).

    Members are the top 32 bits of the shingle hashes: half the memory of the hashes, and
    two documents of n shingles share a member by chance n^2 / 2^32 times (0.0005 for 6 KB
    passages; about one for 400 KB books, off by 1e-5 in their Jaccard).
    """
    shingles, doc = shingle_hashes(texts, ngram)
    keys = np.sort(_tagged(doc, shingles >> np.uint64(32)))
    distinct = np.ones(len(keys), bool)  # np.unique hashes: slower here
    distinct[1:] = keys[1:] != keys[:-1]
    keys = keys[distinct]
    counts = np.bincount((keys >> np.uint64(32)).astype(np.int64), minlength=len(texts))
    return counts, keys.astype(np.uint32)


def spans(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the spans flat[start : start + count], index of the span of each)."""
    span = np.repeat(np.arange(len(counts)), counts)
    ends = np.cumsum(counts)
    offsets = np.repeat(starts - (ends - counts), counts)
    return offsets + np.arange(len(offsets)), span


def set_jaccard(
    flat: np.ndarray, starts: np.ndarray, counts: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Exact Jaccard of the pairs of sets (a[i], b[i]); set k is flat[starts[k]:][:counts[k]].

    Sets hold distinct members, so a (pair, member) key seen twice is in both sets of the
    pair. Pairs go JACCARD_MEMBERS members per sort.
    """
    sizes = np.cumsum(counts[a] + counts[b])
    common = np.zeros(len(a), np.int64)
    lo = 0
    while lo < len(a):
        taken = sizes[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(sizes, taken + JACCARD_MEMBERS)))
        keys = []
        for side in (a[lo:hi], b[lo:hi]):
            positions, pair = spans(starts[side], counts[side])
            keys.append(_tagged(pair, flat[positions]))
        key = np.sort(np.concatenate(keys))
        twice = key[1:][key[1:] == key[:-1]]
        pairs = (twice >> np.uint64(32)).astype(np.int64)
        common[lo:hi] = np.bincount(pairs, minlength=hi - lo)
        lo = hi
    return common / np.maximum(1, counts[a] + counts[b] - common)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal minima between rows of two [n, permutations] signature arrays."""
    return (a == b).mean(axis=1)


def candidate_probability(jaccard: np.ndarray | float, bands: int, rows: int) -> np.ndarray:
    """The S-curve: chance that two documents of this Jaccard share at least one band."""
    return 1 - (1 - np.asarray(jaccard, float) ** rows) ** bands


def signature_column(signatures: np.ndarray, has: np.ndarray) -> pa.Array:
    """Signatures as fixed-size binary (null where a document has no shingle)."""
    width = signatures.shape[1] * 4
    flat = pa.py_buffer(np.ascontiguousarray(signatures).tobytes())
    column = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(signatures), [None, flat])
    return pc.if_else(pa.array(has), column, pa.nulls(len(signatures), pa.binary(width)))


def signature_array(column: pa.Array | pa.ChunkedArray, permutations: int) -> np.ndarray:
    """[n, permutations] uint32 from a signature column without nulls."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    raw = np.frombuffer(column.buffers()[1], np.uint32)
    start = column.offset * permutations
    return raw[start : start + len(column) * permutations].reshape(-1, permutations)


class Signatures:
    """Document stage: adds `minhash` (null for rejected documents and those too short)."""

    name = "minhash"

    def __init__(self, cfg: NearDedupConfig):
        self.hasher = MinHasher.of(cfg)

    def __call__(self, batch: pa.Table) -> pa.Table:
        live = alive(batch)
        signatures, has = self.hasher.signatures(batch["text"])
        return set_column(batch, "minhash", signature_column(signatures, has & live))
