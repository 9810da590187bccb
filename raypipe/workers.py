"""The thin Ray layer: the datasource and the callable classes Ray Data schedules.

Everything here only adapts pure stage logic (raypipe.stages, raypipe.dedup, raypipe.pack)
to Ray Data. Cleaning is one task per input file that reads, runs every stage and writes
the checkpoint; tokenizing is one task per checkpoint part. Both build their stage chain or
tokenizer once per worker process (`reused`). Only stages that declare resources run in
actor pools of their own (one StageChain per actor), between a read task and the checkpoint.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from raypipe import checkpoint, progress
from raypipe.accounting import merge
from raypipe.batch import alive, in_slices, rebatch, set_column
from raypipe.config import InputConfig, PipelineConfig
from raypipe.io.readers import read_file
from raypipe.metrics import count
from raypipe.mix import Source
from raypipe.scatter import Gather
from raypipe.shards import publish
from raypipe.stages import Stage
from raypipe.stages.plan import Planned, pool_of
from raypipe.stages.tokenize import Tokenize

# What a worker process built, by key: Ray Data reuses a task's worker process for the
# next tasks of the run (and of later runs on the same cluster), so a stage chain or a
# tokenizer is set up once per process, as in an actor, without an actor's own process to
# start (~2 s of imports) in every phase. A few keys: a cleaning chain and a tokenizer.
_BUILT: dict[str, Callable] = {}
KEEP_BUILT = 4


@dataclass(frozen=True)
class InputFile:
    uri: str
    size: int
    modified: int  # ns since the epoch: part of the cleaning fingerprint
    input: InputConfig  # the options of the source the file belongs to


class DocumentSource(Datasource):
    """One read task per input file; documents come out as batches (raypipe.batch)."""

    def __init__(self, files: list[InputFile], batch_docs: int):
        self.files, self.batch_docs = files, batch_docs

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(f.size for f in self.files) or None

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context=None
    ) -> list[ReadTask]:
        return [
            ReadTask(
                partial(_read_counted, f, index, self.batch_docs),
                BlockMetadata(
                    num_rows=None, size_bytes=f.size, exec_stats=None, input_files=[f.uri]
                ),
                per_task_row_limit=per_task_row_limit,
            )
            for index, f in enumerate(self.files)
        ]


def _count_rejects(stage: str, reasons: pa.Array) -> None:
    for reason, n in Counter(reasons.to_pylist()).items():
        count("raypipe_rejects", n, stage=stage, reason=reason)


def _read_counted(file: InputFile, index: int, batch_docs: int) -> Iterable[pa.Table]:
    for batch in read_file(file.uri, index, file.input, batch_docs):
        rejects = pc.drop_null(batch["reason"])
        _count_rejects("read", rejects)
        progress.add(documents=batch.num_rows, rejected=len(rejects))
        yield batch
    count("raypipe_bytes_read", file.size, source=file.input.source or "input")
    progress.done(bytes=file.size)


def reused(key: str, build: Callable[[], Callable]) -> Callable:
    """`build()`, or what it built for `key` earlier in this worker process."""
    if key not in _BUILT:
        while len(_BUILT) >= KEEP_BUILT:
            del _BUILT[next(iter(_BUILT))]  # the oldest: a finished phase's or run's
        _BUILT[key] = build()
    return _BUILT[key]


def clean_files(
    rows: pa.Table,
    files: list[InputFile],
    chain: Callable[[], StageChain],
    folder: str,
    tally: Callable[[pa.Table], dict],
    batch_docs: int,
    part_docs: int,
) -> pa.Table:
    """The input files of `rows` (their indexes in `files`), each read, cleaned by every
    stage and published as checkpoint parts of `part_docs` documents in this one task: the
    documents are never copied between reading, cleaning and writing. One tally per file.

    Parts are cut from the file's own documents in order, so a retried task rewrites the
    same parts under the same names. The folder, named after the run's cleaning
    fingerprint, is also the key of the chain this process built for it.
    """
    stages = reused(folder, chain)
    tallies = []
    for index in rows["file"].to_pylist():
        cleaned = map(stages, _read_counted(files[index], index, batch_docs))
        parts = (checkpoint.publish_part(p, folder, tally) for p in rebatch(cleaned, part_docs))
        tallies.append(json.dumps(functools.reduce(merge, parts, {})))
    return pa.table({"tally": pa.array(tallies, pa.string())})


def tokenize_block(
    batch: pa.Table, key: str, spec: str, eos_token: str | None, batch_size: int
) -> pa.Table:
    """Token ids of a block of documents, `batch_size` documents per tokenizer call."""
    tokenize = reused(key, partial(Tokenize, spec, eos_token))
    starts = range(0, max(1, batch.num_rows), batch_size)
    tokens = pa.concat_tables([tokenize(batch.slice(start, batch_size)) for start in starts])
    progress.done(documents=batch.num_rows)
    return tokens


def publish_shard(batch: pa.Table, cells: str, chunks: int, **options) -> pa.Table:
    """Gather, pack and publish the shards of `batch["group"]` (raypipe.scatter,
    raypipe.shards) one after another, counting what was written."""
    entries = []
    for group in batch["group"].to_pylist():
        entry = publish(Gather(cells, group, chunks), group=group, **options)
        if entry is not None:
            count("raypipe_tokens_written", entry["tokens"])
            count("raypipe_shards_written", 1)
            progress.add(shards=1)
            entries.append(json.dumps(entry))
    progress.flush()
    return pa.table({"entry": pa.array(entries, pa.string())})


class StageChain:
    """The stages of one pool of each source's plan (raypipe.stages.plan), built once, run
    on every batch: in a cleaning task (`clean_files`), or as an actor of a user pool."""

    def __init__(
        self, mixture: list[Source], plan: Callable[[PipelineConfig], list[Planned]], pool: int
    ):
        self.chains: dict[str | None, list[Stage]] = {}
        for source in mixture:
            planned = plan(source.stages)
            self.chains[source.name] = [
                p.build() for p, at in zip(planned, pool_of(planned), strict=True) if at == pool
            ]

    def _apply(self, name: str | None, batch: pa.Table) -> pa.Table:
        for stage in self.chains[name]:
            before = alive(batch)
            batch = stage(batch)
            after = alive(batch)
            count("raypipe_documents_in", int(before.sum()), stage=stage.name)
            count("raypipe_documents_out", int(after.sum()), stage=stage.name)
            rejects = batch["reason"].filter(pa.array(before & ~after))
            _count_rejects(stage.name, rejects)
            progress.add(rejected=len(rejects))
        return batch

    def __call__(self, batch: pa.Table) -> pa.Table:
        return in_slices(self._chain, batch)

    def _chain(self, batch: pa.Table) -> pa.Table:
        if len(self.chains) == 1:
            batch = self._apply(next(iter(self.chains)), batch)
        else:  # a batch may join blocks of several sources
            parts = [
                self._apply(name, batch.filter(pc.equal(batch["source"], name)))
                for name in self.chains
            ]
            filled = [p for p in parts if p.num_rows] or parts[:1]
            batch = pa.concat_tables(filled, promote_options="default")
        return set_column(batch, "chars", pc.utf8_length(batch["text"]))
