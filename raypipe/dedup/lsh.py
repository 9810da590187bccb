"""Near-duplicate clusters: LSH bucket tables and connected components, spread over shards.

This module is the algorithm, without Ray: `LshShard` and the rounds between shards
(`components`, `keepers`), run in one process by `near_duplicates_here`. On Ray each
shard is an actor (raypipe.dedup.lsh_actors). Every shard plays two parts:

* bucket table: it owns the band keys that hash to it. Inside a bucket, each member is
  linked to the bucket's BUCKET_HEADS smallest members (by keeper order), so a bucket of
  n documents gives fewer than BUCKET_HEADS * n edges, never n^2 pairs. More than one
  head keeps a member whose edge to the first head fails verification connected through
  the others. Edges stay on the shard that found them.
* node owner: it owns the documents whose uid hashes to it: their keeper order
  (rank, uid) and their current label.

Verification is exact: once the buckets have given their edges, the documents at either
end of an edge are read again and their shingle sets (and only theirs) go to their owners;
each edge shard then keeps the edges whose exact shingle Jaccard reaches the threshold. A
signature estimate would err by ~0.04 around the threshold with 112 permutations.

Components come from min-label propagation: each round, every edge shard reads its
endpoints' labels from their owners, proposes the smaller label of each edge to both
ends, and owners keep the minimum, until no label changes. The label that survives is
the component's smallest (rank, uid): the keeper, whatever the order of tasks, retries
or the number of shards. Only arrays addressed to one shard move between shards; no
shard or driver ever holds all edges.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from raypipe.batch import DOCUMENT_KEYS
from raypipe.config import NearDedupConfig
from raypipe.dedup.minhash import (
    MinHasher,
    mix64,
    set_jaccard,
    shingle_sets,
    signature_array,
    spans,
)

SIZE_BINS = (2, 3, 5, 9, 17, 33, 65, 129)  # cluster sizes 2, 3-4, 5-8, ..., 129+
# What a shard holds per document it owns: the document's uid, rank, id, source and url
# (about 256 bytes) throughout; at the sort that turns buckets into edges, each band entry
# (key, uid, rank: 24 bytes) held, concatenated and ordered (about 72 bytes a band); with
# verification, later, the shingle sets of candidate documents (1,523 bytes per document
# on the benchmark corpus, BENCHMARKS.md: more where more of a corpus is near-duplicate).
DOCUMENT_BYTES, BAND_BYTES, SHINGLE_BYTES = 256, 72, 1_536
SHARD_BYTES = 4 << 30  # the most one shard's tables take: a 64 GiB worker holds many
SHARD_BASE = 256 << 20  # an actor's interpreter, pyarrow and numpy before any table
BUCKET_HEADS = 3


def owner_of(values: np.ndarray, shards: int) -> np.ndarray:
    """The shard owning each uid or band key (mixed first: uids are sequential)."""
    return (mix64(values.astype(np.uint64)) % np.uint64(shards)).astype(np.int64)


def bucket_edges(keys: np.ndarray, uids: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """[edges, 2] (member uid, head uid): every member of a bucket linked to each of the
    bucket's BUCKET_HEADS smallest members that come before it, without repeats."""
    order = np.lexsort((uids, ranks, keys))
    keys, uids = keys[order], uids[order]
    again = np.zeros(len(keys), bool)  # the same entry twice: a retried batch
    again[1:] = (keys[1:] == keys[:-1]) & (uids[1:] == uids[:-1])
    keys, uids = keys[~again], uids[~again]
    first = np.r_[True, keys[1:] != keys[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(keys)), 0))
    place = np.arange(len(keys)) - start
    edges = [
        np.stack([uids[linked], uids[start[linked] + h]], axis=1)
        for h in range(BUCKET_HEADS)
        if (linked := place > h).any()
    ]
    return np.unique(np.concatenate(edges), axis=0) if edges else np.empty((0, 2), np.int64)


def smaller(rank_a, uid_a, rank_b, uid_b) -> np.ndarray:
    """Where (rank_a, uid_a) comes before (rank_b, uid_b)."""
    return (rank_a < rank_b) | ((rank_a == rank_b) & (uid_a < uid_b))


def size_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Clusters per size bin ("2", "3-4", ..., "129+")."""
    edges = [*SIZE_BINS, np.iinfo(np.int64).max]
    counts = np.histogram(sizes, bins=edges)[0] if len(sizes) else np.zeros(len(SIZE_BINS))
    names = [
        f"{low}" if high == low + 1 else f"{low}-{high - 1}" if high < edges[-1] else f"{low}+"
        for low, high in zip(edges, edges[1:], strict=False)
    ]
    return {name: int(n) for name, n in zip(names, counts, strict=True) if n}


def shard_layout(documents: int, cfg: NearDedupConfig, workers: int) -> tuple[int, int]:
    """How many shards cluster `documents`, and the memory each declares to Ray: one shard
    per worker (at least 2), more when that would put over SHARD_BYTES in one shard."""
    peak = max(cfg.bands * BAND_BYTES, SHINGLE_BYTES if cfg.verify else 0)
    per_document = DOCUMENT_BYTES + peak
    shards = max(2, workers, -(-documents * per_document // SHARD_BYTES))
    return shards, SHARD_BASE + -(-documents // shards) * per_document


class LshShard:
    """One shard's bucket table, its edges, and the documents it owns (no Ray here)."""

    def __init__(self, index: int, shards: int, threshold: float | None):
        self.index, self.shards, self.threshold = index, shards, threshold
        self.band_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.node_parts: list[pa.Table] = []
        self.excluded_parts: list[np.ndarray] = []
        self.shingle_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    # -- ingestion ----------------------------------------------------------------------
    def add(self, bands: tuple[np.ndarray, np.ndarray, np.ndarray], nodes: pa.Table) -> int:
        """Band entries (key, uid, rank) owned here, and documents owned here."""
        if len(bands[0]):
            self.band_parts.append(bands)
        if nodes.num_rows:
            self.node_parts.append(nodes)
        return nodes.num_rows

    def exclude(self, uids: np.ndarray) -> int:
        """Documents already removed (exact duplicates): linked like the rest, never listed."""
        self.excluded_parts.append(uids)
        return len(uids)

    def footprint(self) -> int:
        """Bytes held for band entries, documents and shingle sets not yet sealed or sent
        (at the end of ingestion: the band tables; after the rereading: the shingle sets)."""
        parts = [*self.band_parts, *self.shingle_parts]
        held = sum(array.nbytes for part in parts for array in part)
        return held + sum(table.nbytes for table in self.node_parts)

    def seal(self) -> int:
        """End of ingestion: index the documents, turn buckets into edges; return edges."""
        nodes = pa.concat_tables(self.node_parts) if self.node_parts else None
        self.node_parts = []
        if nodes is None:
            self.uid = self.rank = np.empty(0, np.int64)
            self.keys = {key: pa.array([], pa.string()) for key in DOCUMENT_KEYS}
        else:
            uid = nodes["uid"].to_numpy()
            _, first = np.unique(uid, return_index=True)  # retried batches repeat rows
            nodes = nodes.take(pa.array(first))
            self.uid, self.rank = nodes["uid"].to_numpy(), nodes["rank"].to_numpy()
            self.keys = {key: nodes[key].combine_chunks() for key in DOCUMENT_KEYS}
        self.label_rank, self.label_uid = self.rank.copy(), self.uid.copy()
        self.excluded = np.isin(
            self.uid, np.concatenate(self.excluded_parts) if self.excluded_parts else []
        )
        self.excluded_parts = []
        if self.band_parts:
            keys, uids, ranks = map(np.concatenate, zip(*self.band_parts, strict=True))
            self.edges = bucket_edges(keys, uids, ranks)
        else:
            self.edges = np.empty((0, 2), np.int64)
        self.band_parts = []
        self.endpoints = np.unique(self.edges)
        self.endpoint_owner = owner_of(self.endpoints, self.shards)
        return len(self.edges)

    # -- as an edge shard ---------------------------------------------------------------
    def requests(self) -> list[np.ndarray]:
        """For each owner shard, the endpoints of this shard's edges it owns (sorted)."""
        return [self.endpoints[self.endpoint_owner == j] for j in range(self.shards)]

    def _gather(self, parts: tuple) -> list[np.ndarray]:
        """Owners' answers (one per owner, aligned with `requests`) aligned with endpoints."""
        columns = []
        for column in range(len(parts[0])):
            first = parts[0][column]
            full = np.empty((len(self.endpoints), *first.shape[1:]), first.dtype)
            for j, part in enumerate(parts):
                full[self.endpoint_owner == j] = part[column]
            columns.append(full)
        return columns

    def verify(self, *shingles_by_owner: tuple[np.ndarray, np.ndarray]) -> int:
        """Keep only edges whose exact shingle Jaccard reaches the threshold; return edges.

        Each owner's part is (set size per endpoint, the sets' members one after another),
        aligned with `requests` (see `minhash.shingle_sets`).
        """
        counts = np.zeros(len(self.endpoints), np.int64)
        starts = np.zeros(len(self.endpoints), np.int64)
        base = 0
        for j, (owned_counts, flat) in enumerate(shingles_by_owner):
            mine = self.endpoint_owner == j
            counts[mine] = owned_counts
            starts[mine] = base + np.cumsum(owned_counts) - owned_counts
            base += len(flat)
        flat = np.concatenate([part[1] for part in shingles_by_owner])
        ends = np.searchsorted(self.endpoints, self.edges)
        similar = set_jaccard(flat, starts, counts, ends[:, 0], ends[:, 1])
        self.edges = self.edges[similar >= self.threshold]
        self.endpoints = np.unique(self.edges)
        self.endpoint_owner = owner_of(self.endpoints, self.shards)
        return len(self.edges)

    def propose(self, *labels_by_owner: tuple[np.ndarray, np.ndarray]) -> list[tuple]:
        """Each endpoint's smallest label over its edges, where that beats its own, by owner."""
        rank, uid = self._gather(labels_by_owner)
        ends = np.searchsorted(self.endpoints, self.edges)
        a, b = ends[:, 0], ends[:, 1]
        a_wins = smaller(rank[a], uid[a], rank[b], uid[b])
        best = np.where(a_wins, a, b)
        target = np.concatenate([a, b])
        offer = np.concatenate([best, best])
        order = np.lexsort((uid[offer], rank[offer], target))
        target, offer = target[order], offer[order]
        first = np.r_[True, target[1:] != target[:-1]] if len(target) else np.empty(0, bool)
        target, offer = target[first], offer[first]
        better = smaller(rank[offer], uid[offer], rank[target], uid[target])
        target, offer = target[better], offer[better]
        owner = self.endpoint_owner[target]
        return [
            (self.endpoints[target][owner == j], rank[offer][owner == j], uid[offer][owner == j])
            for j in range(self.shards)
        ]

    # -- as a node owner ----------------------------------------------------------------
    def listen(self, *requests: np.ndarray) -> int:
        """Remember what each edge shard asks for (positions in this shard's documents)."""
        self.asked = [np.searchsorted(self.uid, r) for r in requests]
        self.endpoint_uids = np.unique(np.concatenate(requests))
        return sum(map(len, requests))

    def wants(self, uids: np.ndarray) -> np.ndarray:
        """Which of these documents (owned here) are at an end of some shard's edge."""
        return np.isin(uids, self.endpoint_uids)

    def add_shingles(self, uids: np.ndarray, counts: np.ndarray, flat: np.ndarray) -> int:
        """Shingle sets of documents owned here (see `minhash.shingle_sets`)."""
        self.shingle_parts.append((uids, counts, flat))
        return len(uids)

    def shingles_for(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each edge shard, its endpoints' shingle sets; then forgets them."""
        parts = self.shingle_parts or [(np.empty(0, np.int64),) * 2 + (np.empty(0, np.uint32),)]
        uids, counts, flat = map(np.concatenate, zip(*parts, strict=True))
        self.shingle_parts = []
        starts = np.cumsum(counts) - counts
        known, first = np.unique(uids, return_index=True)  # retried batches repeat documents
        starts, counts = starts[first], counts[first]
        answers = []
        for positions in self.asked:
            wanted = self.uid[positions]
            if not np.isin(wanted, known).all():
                raise RuntimeError(
                    f"near-duplicate shard {self.index}: no shingles for some candidate "
                    "documents (their texts were not read again)"
                )
            at = np.searchsorted(known, wanted)
            answers.append((counts[at], flat[spans(starts[at], counts[at])[0]]))
        return answers

    def labels_for(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(self.label_rank[p], self.label_uid[p]) for p in self.asked]

    def update(self, *proposals: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
        """Keep the smallest label offered; return how many labels changed."""
        changed = 0
        for uids, rank, uid in proposals:
            at = np.searchsorted(self.uid, uids)
            order = np.lexsort((uid, rank, at))  # several edge shards may offer to one node
            at, rank, uid = at[order], rank[order], uid[order]
            first = np.r_[True, at[1:] != at[:-1]] if len(at) else np.empty(0, bool)
            at, rank, uid = at[first], rank[first], uid[first]
            better = smaller(rank, uid, self.label_rank[at], self.label_uid[at])
            self.label_rank[at[better]], self.label_uid[at[better]] = rank[better], uid[better]
            changed += int(better.sum())
        return changed

    def _removed(self) -> np.ndarray:
        return np.flatnonzero((self.label_uid != self.uid) & ~self.excluded)

    def keepers_wanted(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each owner shard, (keeper uid, documents removed here in its favour)."""
        keepers, counts = np.unique(self.label_uid[self._removed()], return_counts=True)
        owner = owner_of(keepers, self.shards)
        return [(keepers[owner == j], counts[owner == j]) for j in range(self.shards)]

    def keeper_ids(self, *wanted: tuple[np.ndarray, np.ndarray]) -> list[pa.Array]:
        """The ids of keepers owned here, for each asking shard; records cluster sizes."""
        keepers = np.concatenate([w[0] for w in wanted])
        counts = np.concatenate([w[1] for w in wanted])
        uids, members = np.unique(keepers, return_inverse=True)
        self.cluster_sizes = np.bincount(members, weights=counts).astype(np.int64) + 1
        ids = self.keys["id"]
        return [ids.take(pa.array(np.searchsorted(self.uid, w[0]))) for w in wanted]

    def removed(self, *keeper_ids: pa.Array) -> pa.Table:
        """(uid, id, source, url, duplicate_of) of every document removed here."""
        rows = self._removed()
        keepers = self.label_uid[rows]
        owner = owner_of(keepers, self.shards)
        duplicate_of = np.empty(len(rows), object)
        for j, ids in enumerate(keeper_ids):
            wanted = np.unique(keepers[owner == j])
            at = np.searchsorted(wanted, keepers[owner == j])
            duplicate_of[owner == j] = np.asarray(ids.to_pylist(), object)[at]
        take = pa.array(rows, pa.int64())
        return pa.table(
            {
                "uid": pa.array(self.uid[rows], pa.int64()),
                **{key: column.take(take) for key, column in self.keys.items()},
                "duplicate_of": pa.array(duplicate_of.tolist(), pa.string()),
            }
        )

    def histogram(self) -> dict[str, int]:
        return size_histogram(self.cluster_sizes)


def route(batch: pa.Table, hasher: MinHasher, shards: int) -> list[tuple]:
    """Split a batch of documents into each shard's (band entries, documents owned)."""
    signed = batch.filter(pc.is_valid(batch["minhash"]))  # alive, with shingles
    uid, rank = signed["uid"].to_numpy(), signed["rank"].to_numpy()
    keys = hasher.band_keys(signature_array(signed["minhash"], hasher.permutations)).ravel()
    band_uid, band_rank = np.repeat(uid, hasher.bands), np.repeat(rank, hasher.bands)
    key_owner, node_owner = owner_of(keys, shards), owner_of(uid, shards)
    nodes = signed.select(["uid", "rank", *DOCUMENT_KEYS])
    parts = []
    for j in range(shards):
        mine = key_owner == j
        bands = (keys[mine], band_uid[mine], band_rank[mine])
        parts.append((bands, nodes.filter(pa.array(node_owner == j))))
    return parts


# How shards talk: `on(shard, n).method(*args)` calls an LshShard method that returns n
# values (a list when n > 1) and `wait(values)` makes them concrete. In one process `on`
# gives the shard itself and `wait` is the identity; on Ray, `on` gives the actor's
# methods returning n object refs and `wait` is ray.get, so arrays travel shard to shard
# and the driver only holds references.
On = Callable[[Any, int], LshShard]
Wait = Callable[[list], list]


def _listen(pool: list, on: On, wait: Wait) -> None:
    n = len(pool)
    requests = [on(shard, n).requests() for shard in pool]
    wait([on(owner, 1).listen(*[r[j] for r in requests]) for j, owner in enumerate(pool)])


def send_shingles(batch: pa.Table, pool: list, on: On, wait: Wait, ngram: int) -> int:
    """Shingle sets of the batch's documents that end a candidate edge, to their owners."""
    uid = batch["uid"].to_numpy()
    owner = owner_of(uid, len(pool))
    mine = [np.flatnonzero(owner == j) for j in range(len(pool))]
    wanted = wait([on(shard, 1).wants(uid[rows]) for shard, rows in zip(pool, mine, strict=True)])
    picks = [rows[w] for rows, w in zip(mine, wanted, strict=True)]
    if not any(map(len, picks)):
        return 0
    counts, flat = shingle_sets(batch["text"].take(pa.array(np.concatenate(picks))), ngram)
    sent, at = [], 0
    ends = np.cumsum([len(rows) for rows in picks])
    for shard, rows, owned in zip(pool, picks, np.split(counts, ends[:-1]), strict=True):
        if len(rows):
            size = int(owned.sum())
            sent.append(on(shard, 1).add_shingles(uid[rows], owned, flat[at : at + size]))
            at += size
    return sum(wait(sent))


def components(pool: list, on: On, wait: Wait, reread: Callable[[], int] | None) -> dict:
    """Edges from buckets, verified if `reread` sends the candidates' shingle sets to their
    owners (see `send_shingles`) and returns how many, then labels until none changes."""
    n = len(pool)
    edges = sum(wait([on(shard, 1).seal() for shard in pool]))
    _listen(pool, on, wait)
    verified = edges
    stats = {"candidate_documents": 0, "shingle_bytes": 0}
    if reread is not None and edges:
        stats["candidate_documents"] = reread()
        stats["shingle_bytes"] = sum(wait([on(shard, 1).footprint() for shard in pool]))
        shingles = [on(owner, n).shingles_for() for owner in pool]
        checks = [on(s, 1).verify(*[sh[i] for sh in shingles]) for i, s in enumerate(pool)]
        verified = sum(wait(checks))
        _listen(pool, on, wait)
    rounds, changed = 0, 1
    while changed:
        rounds += 1
        labels = [on(owner, n).labels_for() for owner in pool]
        proposals = [
            on(shard, n).propose(*[label[i] for label in labels]) for i, shard in enumerate(pool)
        ]
        updates = [on(owner, 1).update(*[p[j] for p in proposals]) for j, owner in enumerate(pool)]
        changed = sum(wait(updates))
    return {"candidate_edges": edges, "edges": verified, "rounds": rounds, **stats}


def keepers(pool: list, on: On) -> list[list]:
    """For each shard, the keeper ids its removed documents name (one array per owner),
    as `LshShard.removed` takes them."""
    n = len(pool)
    wanted = [on(owner, n).keepers_wanted() for owner in pool]
    ids = [on(o, n).keeper_ids(*[w[k] for w in wanted]) for k, o in enumerate(pool)]
    return [[i[j] for i in ids] for j in range(n)]


def merge_histograms(histograms: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for histogram in histograms:
        total.update(histogram)
    return {
        name: total[name] for name in sorted(total, key=lambda s: int(s.split("-")[0].strip("+")))
    }


def near_duplicates_here(
    batches: Sequence[pa.Table],
    cfg: NearDedupConfig,
    shards: int = 1,
    excluded: np.ndarray | None = None,
) -> tuple[pa.Table, dict]:
    """The whole clustering in this process: (removed documents, statistics).

    `batches` hold uid, id, source, rank, minhash and text (the document stages' output);
    verification reads them a second time.
    """
    hasher = MinHasher.of(cfg)
    pool = [LshShard(j, shards, cfg.threshold if cfg.verify else None) for j in range(shards)]
    for batch in batches:
        for shard, part in zip(pool, route(batch, hasher, shards), strict=True):
            shard.add(*part)
    if excluded is not None:
        owner = owner_of(excluded, shards)
        for j, shard in enumerate(pool):
            shard.exclude(excluded[owner == j])

    def on(shard: LshShard, n: int) -> LshShard:
        return shard

    def reread() -> int:
        return sum(send_shingles(batch, pool, on, same, cfg.ngram) for batch in batches)

    def same(values: list) -> list:
        return values

    held = sum(shard.footprint() for shard in pool)
    stats = components(pool, on, same, reread if cfg.verify else None)
    stats["shard_bytes"] = held
    ids = keepers(pool, on)
    removed = pa.concat_tables([s.removed(*mine) for s, mine in zip(pool, ids, strict=True)])
    stats["cluster_sizes"] = merge_histograms(shard.histogram() for shard in pool)
    return removed.sort_by("uid"), stats
