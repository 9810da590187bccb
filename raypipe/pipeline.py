"""The whole plan: three phases of Ray Data over the stages.

phase 1  read -> [normalize, quality, dedup keys] -> clean checkpoint (Parquet)
phase 2  exact duplicates: hashes routed to partitions -> keepers -> drop list
phase 3  clean docs - drops -> tokenize -> seeded shard assignment -> pack -> shards
         (or, with no tokenizer, the cleaned documents)
then     rejects ledger, report.json, manifest.json (last: its presence = committed)
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import ray.data
from ray.data import ActorPoolStrategy

from raypipe import checkpoint
from raypipe.accounting import merge_tallies
from raypipe.batch import alive
from raypipe.checkpoint import write_part
from raypipe.config import ConfigError, PipelineConfig, load_config
from raypipe.dedup.exact import DedupKeys, exact_duplicates, hash_words
from raypipe.io import storage
from raypipe.io.readers import read_file
from raypipe.report.stats import dataset_report
from raypipe.runtime import cluster_cpus, connect, use_storage
from raypipe.shards import committed_entries, pack_and_write
from raypipe.shuffle import order_key, shard_of
from raypipe.stages import Stage
from raypipe.stages.normalize import Normalize
from raypipe.stages.quality import Quality
from raypipe.stages.tokenize import Tokenize
from raypipe.tokenizer import load_tokenizer
from raypipe.workers import DocumentSource, StageChain

CHARS_PER_TOKEN = 4  # to size shards before tokenizing
PART_DOCS = 4096  # documents per checkpoint file
LEDGER = pa.schema(
    [(name, pa.string()) for name in ("id", "source", "stage", "reason", "duplicate_of")]
)
INTERNAL_COLUMNS = ["uid", "stage", "reason", "text_hash", "rank", "chars"]


def document_stages(cfg: PipelineConfig) -> list[Stage]:
    """Phase 1: what happens to each document, in order."""
    stages: list[Stage] = []
    if cfg.normalize.enabled:
        stages.append(Normalize(cfg.normalize))
    if cfg.quality.enabled:
        stages.append(Quality(cfg.quality))
    stages.append(DedupKeys(cfg.dedup))
    return stages


class Pipeline:
    def __init__(self, cfg: PipelineConfig, log=print):
        self.cfg, self.log = cfg, log

    @classmethod
    def from_yaml(
        cls, path: str | Path, overrides: dict[str, Any] | list[str] | None = None, **kwargs
    ) -> Pipeline:
        return cls(load_config(path, overrides), **kwargs)

    def preview(self, n: int = 3) -> list[tuple[str, pa.Table]]:
        """The first `n` documents after each stage, computed here without Ray."""
        use_storage(self.cfg.storage)
        uri, _ = storage.expand(self.cfg.input.paths)[0]
        batch = next(read_file(uri, 0, self.cfg.input, n), None)
        if batch is None:
            return []
        views = [("read", batch)]
        for stage in document_stages(self.cfg):
            batch = stage(batch)
            views.append((stage.name, batch))
        return views

    def run(self) -> dict:
        cfg, out = self.cfg, self.cfg.output.path
        started = time.time()
        use_storage(cfg.storage)
        files = storage.expand(cfg.input.paths)
        clean_fp, run_fp = checkpoint.fingerprints(cfg, files)
        if (done := self._committed_run(run_fp)) is not None:
            self.log(f"already committed: {storage.join(out, 'manifest.json')}")
            return done
        storage.make_dirs(out)
        connect(cfg.ray, cfg.storage)
        timings = {}

        clean_dir = checkpoint.phase_dir(out, "clean", clean_fp)
        if checkpoint.committed(clean_dir) is None:
            self.log("phase 1/3: read and clean")
            t = time.time()
            self._clean(files, clean_dir)
            timings["clean"] = time.time() - t
        tally = checkpoint.committed(clean_dir)

        dedup_dir = checkpoint.phase_dir(out, "dedup", clean_fp)
        if cfg.dedup.exact.enabled and checkpoint.committed(dedup_dir) is None:
            self.log("phase 2/3: deduplicate")
            t = time.time()
            self._deduplicate(clean_dir, dedup_dir)
            timings["dedup"] = time.time() - t
        drops = checkpoint.committed(dedup_dir)["drops"] if cfg.dedup.exact.enabled else {}

        self.log("phase 3/3: tokenize, pack, write" if cfg.tokenizer else "phase 3/3: write")
        t = time.time()
        documents = self._kept_documents(clean_dir, dedup_dir if sum(drops.values()) else None)
        if cfg.tokenizer:
            written = self._write_shards(documents, tally["kept_chars"], run_fp)
        else:
            written = self._write_documents(documents)
        timings["write"] = time.time() - t
        self._write_ledger(clean_dir, dedup_dir if drops else None)
        manifest = self._commit(tally, drops, written, run_fp, len(files))
        manifest["seconds"] = {**timings, "total": time.time() - started}
        return manifest

    # -- phase 1 ---------------------------------------------------------------------
    def _clean(self, files: list[tuple[str, int]], clean_dir: str) -> None:
        cfg = self.cfg
        storage.remove_tree(clean_dir)
        docs = ray.data.read_datasource(DocumentSource(files, cfg.input, cfg.ray.batch_docs))
        docs = docs.map_batches(
            StageChain,
            fn_constructor_args=(cfg, document_stages),
            compute=ActorPoolStrategy(min_size=1, max_size=cluster_cpus()),
            batch_size=cfg.ray.batch_docs,
            batch_format="pyarrow",
        )
        # Each part is published by the task that cleaned it, which returns only its tally.
        tallies = docs.map_batches(
            write_part,
            fn_kwargs={"folder": clean_dir},
            batch_size=PART_DOCS,
            batch_format="pyarrow",
        )
        checkpoint.commit(clean_dir, merge_tallies([r["tally"] for r in tallies.take_all()]))

    # -- phase 2 ---------------------------------------------------------------------
    def _deduplicate(self, clean_dir: str, dedup_dir: str) -> None:
        storage.remove_tree(dedup_dir)
        partitions = 4 * cluster_cpus()
        keys = ray.data.read_parquet(
            clean_dir, columns=["uid", "id", "source", "text_hash", "rank", "reason"]
        ).map_batches(
            _partition_by_hash, fn_kwargs={"partitions": partitions}, batch_format="pyarrow"
        )
        drops = keys.groupby("partition", num_partitions=partitions).map_groups(
            exact_duplicates, batch_format="pyarrow"
        )
        drops.write_parquet(storage.join(dedup_dir, "drops"))
        count = ray.data.read_parquet(storage.join(dedup_dir, "drops"), columns=["uid"]).count()
        checkpoint.commit(dedup_dir, {"drops": {"exact_duplicate": count}})

    # -- phase 3 ---------------------------------------------------------------------
    def _kept_documents(self, clean_dir: str, dedup_dir: str | None) -> ray.data.Dataset:
        docs = ray.data.read_parquet(clean_dir).map_batches(_alive_rows, batch_format="pyarrow")
        if dedup_dir is None:
            return docs
        drops = ray.data.read_parquet(storage.join(dedup_dir, "drops"), columns=["uid"])
        return docs.join(
            drops, join_type="left_anti", num_partitions=4 * cluster_cpus(), on=("uid",)
        )

    def _write_shards(self, docs: ray.data.Dataset, kept_chars: int, run_fp: str) -> list[dict]:
        cfg, out = self.cfg, self.cfg.output.path
        loaded = load_tokenizer(cfg.tokenizer, cfg.eos_token)
        shards = max(1, math.ceil(kept_chars / (CHARS_PER_TOKEN * cfg.output.shard_tokens)))
        done = committed_entries(out, run_fp)
        docs = docs.map_batches(
            _assign_shards,
            fn_kwargs={"shards": shards, "seed": cfg.seed, "skip": sorted(done)},
            batch_format="pyarrow",
        ).select_columns(["uid", "text", "group", "order"])
        tokens = docs.map_batches(
            Tokenize,
            fn_constructor_args=(cfg.tokenizer, cfg.eos_token),
            compute=ActorPoolStrategy(min_size=1, max_size=cluster_cpus()),
            batch_size=cfg.tokenize.batch_size,
            batch_format="pyarrow",
        )
        written = tokens.groupby(
            "group", num_partitions=min(shards, 4 * cluster_cpus())
        ).map_groups(
            pack_and_write,
            fn_kwargs={
                "output": out,
                "seq_len": cfg.pack.seq_len,
                "pad_id": loaded.eos_id,
                "vocab_size": loaded.vocab_size,
                "fingerprint": run_fp,
            },
            batch_format="pyarrow",
        )
        entries = [json.loads(row["entry"]) for row in written.take_all()]
        return sorted([*done.values(), *entries], key=lambda e: e["group"])

    def _write_documents(self, docs: ray.data.Dataset) -> list[dict]:
        target = storage.join(self.cfg.output.path, "documents")
        storage.remove_tree(target)
        docs = docs.drop_columns(INTERNAL_COLUMNS)
        if self.cfg.output.format == "jsonl":
            docs.write_json(target)
        else:
            docs.write_parquet(target)
        return []

    # -- ledger and commit -----------------------------------------------------------
    def _write_ledger(self, clean_dir: str, dedup_dir: str | None) -> None:
        target = storage.join(self.cfg.output.path, "rejects")
        storage.remove_tree(target)
        rejects = ray.data.read_parquet(clean_dir, columns=["id", "source", "stage", "reason"])
        rejects = rejects.map_batches(_rejected_rows, batch_format="pyarrow")
        if dedup_dir is not None:
            drops = ray.data.read_parquet(storage.join(dedup_dir, "drops"))
            rejects = rejects.union(drops.map_batches(_as_ledger, batch_format="pyarrow"))
        rejects.write_parquet(target)
        if not storage.exists(target):  # nothing rejected: the ledger exists, empty
            storage.write_atomic(storage.join(target, "empty.parquet"), _parquet_bytes(LEDGER))

    def _committed_run(self, run_fp: str) -> dict | None:
        manifest_uri = storage.join(self.cfg.output.path, "manifest.json")
        if not storage.exists(manifest_uri):
            return None
        manifest = json.loads(storage.read_bytes(manifest_uri))
        if manifest.get("fingerprint") == run_fp:
            return manifest
        if not self.cfg.output.overwrite:
            raise ConfigError(
                f"output.path {self.cfg.output.path} holds a committed run of another "
                "config or input; choose another output.path or set output.overwrite=true"
            )
        for name in ("manifest.json", "report.json"):
            storage.remove_tree(storage.join(self.cfg.output.path, name))
        return None

    def _commit(
        self, tally: dict, drops: dict, shards: list[dict], run_fp: str, files: int
    ) -> dict:
        cfg, out = self.cfg, self.cfg.output.path
        rejected = {**tally["rejected"], **drops}
        manifest: dict[str, Any] = {
            "fingerprint": run_fp,
            "files": files,
            "documents_in": tally["documents"],
            "documents_out": tally["kept"] - sum(drops.values()),
            "rejected": rejected,
            "rejected_by_stage": {**tally["rejected_by_stage"], "dedup": sum(drops.values())},
            "masked": tally["masked"],
            "config": cfg.model_dump(mode="json"),
            "rejects": "rejects/",
        }
        if cfg.tokenizer:
            loaded = load_tokenizer(cfg.tokenizer, cfg.eos_token)
            report = dataset_report(shards, loaded.vocab_size, cfg.pack.seq_len)
            for item in report["top_tokens"]:
                item["token"] = loaded.tokenizer.id_to_token(item["id"])
            manifest.update(
                tokens=report["tokens"],
                sequences=report["sequences"],
                seq_len=cfg.pack.seq_len,
                dtype=loaded.dtype,
                vocab_size=loaded.vocab_size,
                eos_id=loaded.eos_id,
                tokenizer_sha256=loaded.sha256,
                shards=[
                    {k: e[k] for k in ("path", "sequences", "tokens", "documents", "sha256")}
                    for e in shards
                ],
            )
            storage.write_atomic(
                storage.join(out, "report.json"), json.dumps(report, indent=2).encode()
            )
        else:
            manifest["documents"] = "documents/"
        storage.write_atomic(
            storage.join(out, "manifest.json"), json.dumps(manifest, indent=2).encode()
        )
        return manifest


# -- small pure batch functions the plan maps over -------------------------------------
def _parquet_bytes(schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    return sink.getvalue().to_pybytes()


def _alive_rows(batch: pa.Table) -> pa.Table:
    return batch.filter(pa.array(alive(batch)))


def _rejected_rows(batch: pa.Table) -> pa.Table:
    rejected = batch.filter(pc.invert(pa.array(alive(batch))))
    return rejected.append_column("duplicate_of", pa.nulls(rejected.num_rows, pa.string()))


def _as_ledger(drops: pa.Table) -> pa.Table:
    n = drops.num_rows
    return pa.table(
        {
            "id": drops["id"],
            "source": drops["source"],
            "stage": pa.array(["dedup"] * n, pa.string()),
            "reason": pa.array(["exact_duplicate"] * n, pa.string()),
            "duplicate_of": drops["duplicate_of"],
        }
    )


def _partition_by_hash(batch: pa.Table, partitions: int) -> pa.Table:
    batch = _alive_rows(batch).drop_columns(["reason"])
    words = hash_words(batch["text_hash"])
    return batch.append_column("partition", pa.array(words[:, 0] % np.uint64(partitions)))


def _assign_shards(batch: pa.Table, shards: int, seed: int, skip: list[int]) -> pa.Table:
    uids = batch["uid"].to_numpy()
    batch = batch.append_column("group", pa.array(shard_of(uids, shards, seed)))
    batch = batch.append_column("order", pa.array(order_key(uids, seed)))
    if skip:
        batch = batch.filter(pc.invert(pc.is_in(batch["group"], pa.array(skip, pa.int32()))))
    return batch
