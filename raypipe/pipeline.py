"""The whole plan: what happens to each document, and the phases of a run.

phase 1  read -> [document stages, user stages] -> clean checkpoint   stream, per document
phase 2  exact duplicates: hash partitions -> keepers -> drops      global, distributed
         near duplicates: LSH shard actors -> components -> drops
         percentile cuts: two counting passes over the scores -> drops
phase 3  clean - drops -> tokenize -> token checkpoint
         -> mixture plan -> copies scattered to (shard, chunk) cells on storage
         -> per shard: gather chunk by chunk -> pack -> stream to shards
commit   rejects ledger, report.json, manifest.json (last: its presence = committed)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from raypipe import checkpoint, mix, phases
from raypipe.accounting import CleanTally, NearTally, tokens_by_source
from raypipe.config import ConfigError, PiiConfig, PipelineConfig, load_config
from raypipe.cut import cuts
from raypipe.dedup.exact import DedupKeys
from raypipe.dedup.lsh_actors import near_duplicates
from raypipe.dedup.minhash import Signatures
from raypipe.io import storage
from raypipe.io.readers import read_file
from raypipe.manifest import Outcome, build_manifest
from raypipe.progress import Goal, watching
from raypipe.runtime import cluster_cpus, connect, use_storage, workers
from raypipe.stages import Stage
from raypipe.stages.content import Content, lists_in_use
from raypipe.stages.extract import Extract
from raypipe.stages.langid import Langid
from raypipe.stages.normalize import Normalize
from raypipe.stages.plan import Planned, with_user_stages
from raypipe.stages.quality import Quality
from raypipe.tokenizer import load_tokenizer
from raypipe.workers import InputFile


def _pii(cfg: PiiConfig) -> Stage:
    # Presidio and spaCy take ~5 s to import: only the actors of runs that mask pay it.
    from raypipe.stages.pii import Pii

    return Pii(cfg)


def document_stages(cfg: PipelineConfig) -> list[Planned]:
    """Phase 1: what happens to each document, in order (each stage is built on a worker)."""
    plan = [Planned("extract", partial(Extract, cfg.extract))]  # a no-op on batches without html
    if cfg.normalize.enabled:
        plan.append(Planned("normalize", partial(Normalize, cfg.normalize)))
    if cfg.langid.enabled:
        plan.append(Planned("langid", partial(Langid, cfg.langid), counters=cfg.langid.counters()))
    if cfg.content.active:
        plan.append(Planned("content", partial(Content, cfg.content)))
    if cfg.quality.enabled:
        plan.append(Planned("quality", partial(Quality, cfg.quality)))
    if cfg.pii.enabled:
        plan.append(Planned("pii", partial(_pii, cfg.pii), counters=cfg.pii.counters()))
    plan.append(Planned("dedup_keys", partial(DedupKeys, cfg.dedup)))
    if cfg.dedup.near.enabled:
        plan.append(Planned("signatures", partial(Signatures, cfg.dedup.near)))
    return with_user_stages(plan, cfg.stages)


class Pipeline:
    def __init__(self, cfg: PipelineConfig, log=print):
        self.cfg, self.log = cfg, log
        self.mixture = mix.sources(cfg)
        self.step_seconds: dict[str, float] = {}  # wall time of each step of the last run
        self.step_cpu: dict[str, float] = {}  # the share of the CPUs busy in each step

    @classmethod
    def from_yaml(
        cls, path: str | Path, overrides: dict[str, Any] | list[str] | None = None, **kwargs
    ) -> Pipeline:
        return cls(load_config(path, overrides), **kwargs)

    def input_files(self) -> list[InputFile]:
        use_storage(self.cfg.storage)
        # An output folder inside an input folder is never read back as input.
        out = self.cfg.output.path
        output = storage.join(out if storage.is_remote(out) else os.path.abspath(out), "")
        return [
            InputFile(uri, size, modified, source.input)
            for source in self.mixture
            for uri, size, modified in storage.expand(source.input.paths)
            if not uri.startswith(output)
        ]

    def preview(self, n: int = 3) -> list[tuple[str, pa.Table]]:
        """The first `n` documents after each stage, computed here without Ray."""
        first = self.input_files()[0]
        batch = next(read_file(first.uri, 0, first.input, n), None)
        if batch is None:
            return []
        views = [("read", batch)]
        for planned in document_stages(self.mixture[0].stages):
            stage = planned.build()
            batch = stage(batch)
            views.append((stage.name, batch))
        return views

    def run(self) -> dict:
        cfg, out, started = self.cfg, self.cfg.output.path, time.time()
        self.step_seconds, self.step_cpu = {}, {}
        files = self.input_files()
        # A tokenizer or user stage that cannot load fails here, not after hours of work.
        loaded = load_tokenizer(cfg.tokenizer, cfg.eos_token) if cfg.tokenizer else None
        for source in self.mixture:
            document_stages(source.stages)
        lists = lists_in_use([source.stages.content for source in self.mixture])
        inputs = [(f.uri, f.size, f.modified) for f in files] + lists
        clean_fp, run_fp = checkpoint.fingerprints(cfg, inputs)
        if (done := self._committed_run(run_fp)) is not None:
            self.log(f"already committed: {storage.join(out, 'manifest.json')}")
            return done
        storage.make_dirs(out)
        connect(cfg.ray, cfg.storage)
        folder = lambda phase: checkpoint.phase_dir(out, phase, clean_fp)  # noqa: E731

        cleaned = CleanTally.from_json(
            self._phase(
                "1/3 read and clean",
                folder("clean"),
                lambda d: phases.clean(files, self.mixture, cfg, document_stages, d),
                Goal("bytes", sum(f.size for f in files)),
            )
        )
        drops, drop_dirs, near = self._deduplicate(folder, cleaned.kept)
        cut_scores = self._cut(folder, cleaned.kept, drops, drop_dirs)
        dropped = sum(drops[reason] for reason in drop_dirs)
        kept = phases.kept_documents(folder("clean"), list(drop_dirs.values()), dropped, cfg.ray)

        tokens_dir, plan, shards, tokenized = None, {}, [], None
        if loaded is not None:
            tokens_fp = checkpoint.tokens_fingerprint(cfg, clean_fp)
            tokens_dir = checkpoint.phase_dir(out, "tokens", tokens_fp)
            tokenized = tokens_by_source(
                self._phase(
                    "3/3 tokenize",
                    tokens_dir,
                    lambda d: phases.tokenize(kept, cfg, d),
                    Goal("documents", cleaned.kept - dropped),
                )
            )
            plan = mix.plan(tokenized, self.mixture)
            outcome = mix.outcome(tokenized, plan, self.mixture)
            n_shards, chunks = phases.layout(cfg, sum(r["tokens_out"] for r in outcome.values()))
            cells_dir = checkpoint.phase_dir(out, "cells", run_fp)
            self._phase(
                "3/3 scatter copies to shards",
                cells_dir,
                lambda d: phases.scatter(cfg, tokens_dir, plan, n_shards, chunks, d),
                Goal("documents", cleaned.kept - dropped),
            )
            self.log("phase 3/3 pack and write shards")
            with self._clock("pack", Goal("shards", n_shards)):
                shards = phases.pack(cfg, cells_dir, n_shards, chunks, loaded, run_fp)
        else:
            self.log("phase 3/3 write cleaned documents")
            goal = Goal("documents", cleaned.kept - dropped)
            with self._clock("write documents", goal):
                phases.write_documents(kept, cfg)
        with self._clock("rejects ledger"):
            phases.write_ledger(out, folder("clean"), drop_dirs, tokens_dir, plan, cfg.seed)
        run = Outcome(run_fp, len(files), cleaned, drops, near, tokenized, plan, shards, cut_scores)
        manifest = build_manifest(cfg, self.mixture, run)
        if not cfg.output.keep_work:  # committed: the checkpoints are no longer needed
            storage.remove(storage.join(out, checkpoint.WORK_DIR))
        manifest["seconds"] = time.time() - started
        manifest["step_seconds"] = self.step_seconds
        manifest["step_cpu"] = self.step_cpu
        return manifest

    def _deduplicate(
        self, folder: Callable[[str], str], cleaned: int
    ) -> tuple[dict[str, int], dict[str, str], NearTally | None]:
        """Phase 2 over the `cleaned` documents phase 1 kept: documents removed by reason,
        the folders that list them, and the near-duplicate clusters when that ran."""
        cfg = self.cfg.dedup
        drops: dict[str, int] = {}
        drop_dirs: dict[str, str] = {}
        if cfg.exact.enabled:
            exact = self._phase(
                "2/3 deduplicate",
                folder("dedup"),
                lambda d: phases.deduplicate(folder("clean"), d, self.cfg.ray),
                Goal("documents", cleaned),
            )
            drops["exact_duplicate"] = exact["removed"]
            if drops["exact_duplicate"]:
                drop_dirs["exact_duplicate"] = folder("dedup")
        if not cfg.near.enabled:
            return drops, drop_dirs, None
        found = self._phase(
            "2/3 near duplicates",
            folder("near"),
            lambda d: near_duplicates(
                folder("clean"),
                drop_dirs.get("exact_duplicate"),
                d,
                cfg.near,
                documents=cleaned,
                workers=workers(self.cfg.ray),
            ),
            Goal("documents", cleaned),
        )
        left = cleaned - drops.get("exact_duplicate", 0)
        near = NearTally(**found, share_removed=found["removed"] / max(1, left))
        drops["near_duplicate"] = near.removed
        if near.removed:
            drop_dirs["near_duplicate"] = folder("near")
        return drops, drop_dirs, near

    def _cut(
        self,
        folder: Callable[[str], str],
        cleaned: int,
        drops: dict[str, int],
        drop_dirs: dict[str, str],
    ) -> dict[str, dict]:
        """Phase 2's percentile cuts, after dedup (their share is of the documents left):
        their drops join `drops` and `drop_dirs`; returns each cut's scored count and score."""
        found = {}
        for cut in cuts(self.cfg.quality):
            dropped = sum(drops[reason] for reason in drop_dirs)
            counts = self._phase(
                f"2/3 cut the worst {cut.share:.0%} by {cut.column}",
                folder(f"cut-{cut.column}"),
                partial(
                    phases.percentile_cut,
                    folder("clean"),
                    [*drop_dirs.values()],
                    dropped,
                    cut,
                    cfg=self.cfg.ray,
                ),
                Goal("documents", cleaned - dropped),
            )
            drops[cut.reason], found[cut.reason] = counts.pop("removed"), counts
            if drops[cut.reason]:
                drop_dirs[cut.reason] = folder(f"cut-{cut.column}")
        return found

    @contextmanager
    def _clock(self, step: str, goal: Goal | None = None) -> Iterator[None]:
        """Time a step; with a `goal`, show its progress and measure the share of the
        cluster's CPUs its workers and the driver kept busy."""
        started = time.perf_counter()
        if goal is None:
            yield
        else:
            with watching(step, goal, self.log) as seen:
                yield
        seconds = time.perf_counter() - started
        self.step_seconds[step] = round(seconds, 3)
        if goal is not None:
            self.step_cpu[step] = round(seen["cpu_seconds"] / (seconds * cluster_cpus()), 3)

    def _phase(self, title: str, folder: str, work, goal: Goal) -> dict:
        """Run a phase unless its checkpoint is committed, showing its progress towards
        `goal`; return its committed counts, as JSON gives them back (a fresh run and a
        resumed one read the same)."""
        if (counts := checkpoint.committed(folder)) is None:
            self.log(f"phase {title}")
            storage.remove(folder)
            step = title.split(" ", 1)[1]
            with self._clock(step, goal):  # resumed: no time
                counts = checkpoint.commit(folder, work(folder))
        return counts

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
        storage.remove(manifest_uri)
        return None
