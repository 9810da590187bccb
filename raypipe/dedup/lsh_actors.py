"""Near-duplicate clustering on Ray: one actor per LSH shard (raypipe.dedup.lsh holds the
algorithm). The driver holds object references only; arrays travel actor to actor, and a
lost actor reruns the phase from the clean checkpoint."""

from __future__ import annotations

import itertools
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import ray.data

from raypipe import checkpoint, progress
from raypipe.batch import DOCUMENT_KEYS
from raypipe.config import NearDedupConfig
from raypipe.dedup.lsh import (
    LshShard,
    components,
    keepers,
    merge_histograms,
    owner_of,
    route,
    send_shingles,
    shard_layout,
)
from raypipe.dedup.minhash import MinHasher
from raypipe.io import storage

ATTEMPTS = 3  # a lost shard actor costs a rerun of the phase from the checkpoint


# A quarter of a CPU each: the shards work hard only between the steps that feed them
# (sealing, the component rounds), while a whole CPU each would leave the tasks that feed
# them no room on a small cluster. Declaring some CPU keeps them off a head node that
# offers none (cluster.yaml's), so an autoscaler starts workers for them.
SHARD_CPUS = 0.25


@ray.remote(num_cpus=SHARD_CPUS, max_restarts=0, scheduling_strategy="SPREAD")
class ShardActor(LshShard):
    def publish(self, folder: str, *keeper_ids: pa.Array) -> int:
        """Write this shard's removed documents (named after the shard: a rerun rewrites)."""
        table = self.removed(*keeper_ids)
        if table.num_rows:
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="zstd")
            name = f"part-{self.index:05d}-of-{self.shards:05d}.parquet"
            storage.write_atomic(storage.join(folder, name), sink.getvalue().to_pybytes())
        return table.num_rows

    def ping(self) -> bool:
        return True


def _send(batch: pa.Table, pool: list, cfg: NearDedupConfig) -> pa.Table:
    parts = route(batch, MinHasher.of(cfg), len(pool))
    added = sum(ray.get([shard.add.remote(*p) for shard, p in zip(pool, parts, strict=True)]))
    progress.done(documents=added)
    return pa.table({"documents": [added]})


def _send_shingles(batch: pa.Table, pool: list, cfg: NearDedupConfig) -> pa.Table:
    return pa.table({"documents": [send_shingles(batch, pool, _on, ray.get, cfg.ngram)]})


def _exclude(batch: pa.Table, pool: list) -> pa.Table:
    uids = batch["uid"].to_numpy()
    owner = owner_of(uids, len(pool))
    ray.get([shard.exclude.remote(uids[owner == j]) for j, shard in enumerate(pool)])
    return pa.table({"documents": [len(uids)]})


def _total(counts: ray.data.Dataset) -> int:
    """Run a plan whose rows are counts (one per batch) and add them up here."""
    return sum(row["documents"] for row in counts.iter_rows())


class _Returning:
    """An actor's methods, each called remotely for n object refs (the `on` of lsh.py)."""

    def __init__(self, actor: Any, n: int):
        self.actor, self.n = actor, n

    def __getattr__(self, method: str) -> Any:
        return getattr(self.actor, method).options(num_returns=self.n).remote


def _on(actor: Any, n: int) -> LshShard:
    return cast(LshShard, _Returning(actor, n))


def _cluster(
    pool: list, clean_dir: str, excluded_dir: str | None, folder: str, cfg: NearDedupConfig
) -> dict:
    signed = checkpoint.read(clean_dir, columns=["uid", *DOCUMENT_KEYS, "rank", "minhash"])
    sent = signed.map_batches(_send, fn_kwargs={"pool": pool, "cfg": cfg}, batch_format="pyarrow")
    documents = _total(sent)
    if excluded_dir is not None:
        _total(
            checkpoint.read(excluded_dir, columns=["uid"]).map_batches(
                _exclude, fn_kwargs={"pool": pool}, batch_format="pyarrow"
            )
        )
    held = sum(ray.get([shard.footprint.remote() for shard in pool]))

    def reread() -> int:
        texts = checkpoint.read(clean_dir, columns=["uid", "text"])
        kwargs = {"pool": pool, "cfg": cfg}
        return _total(texts.map_batches(_send_shingles, fn_kwargs=kwargs, batch_format="pyarrow"))

    stats = components(pool, _on, ray.get, reread if cfg.verify else None)
    stats["shard_bytes"] = held
    ids = keepers(pool, _on)
    removed = sum(ray.get([s.publish.remote(folder, *i) for s, i in zip(pool, ids, strict=True)]))
    sizes = merge_histograms(ray.get([shard.histogram.remote() for shard in pool]))
    summary = {"documents": documents, "removed": removed, "clusters": sum(sizes.values())}
    return {**summary, **stats, "cluster_sizes": sizes}  # the fields of a NearTally


def _lost_a_shard(pool: list) -> bool:
    for shard in pool:
        try:
            ray.get(shard.ping.remote(), timeout=60)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return True
    return False


def near_duplicates(
    clean_dir: str,
    excluded_dir: str | None,
    folder: str,
    cfg: NearDedupConfig,
    documents: int,
    workers: int,
) -> dict:
    """Phase 2b: near-duplicates of the clean checkpoint's `documents`, written to `folder`.

    `excluded_dir` lists documents exact dedup already removed. The result does not depend
    on the number of shards (at least 2, so every shard call returns a list of parts):
    lsh.shard_layout sizes them from the documents and the `workers` a stage may use.
    """
    shards, memory = shard_layout(documents, cfg, workers)
    threshold = cfg.threshold if cfg.verify else None
    actor = ShardActor.options(memory=memory)
    for attempt in itertools.count(1):
        pool = [actor.remote(j, shards, threshold) for j in range(shards)]
        try:
            return _cluster(pool, clean_dir, excluded_dir, folder, cfg)
        except Exception:
            if attempt == ATTEMPTS or not _lost_a_shard(pool):
                raise
            storage.remove(folder)
        finally:
            for shard in pool:
                ray.kill(shard)
