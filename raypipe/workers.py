"""The thin Ray layer: the datasource and the callable classes Ray Data schedules.

Everything here only adapts pure stage logic (raypipe.stages, raypipe.dedup, raypipe.pack)
to Ray Data: one read task per input file, one stage chain per cleaning actor, one
tokenizer per tokenizing actor (raypipe.stages.tokenize.Tokenize).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from raypipe.config import InputConfig, PipelineConfig
from raypipe.io.readers import read_file
from raypipe.stages import Stage


class DocumentSource(Datasource):
    """One read task per input file; documents come out as batches (raypipe.batch)."""

    def __init__(self, files: list[tuple[str, int]], cfg: InputConfig, batch_docs: int):
        self.files, self.cfg, self.batch_docs = files, cfg, batch_docs

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(size for _, size in self.files) or None

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context=None
    ) -> list[ReadTask]:
        return [
            ReadTask(
                partial(self._read, uri, index),
                BlockMetadata(num_rows=None, size_bytes=size, exec_stats=None, input_files=[uri]),
                per_task_row_limit=per_task_row_limit,
            )
            for index, (uri, size) in enumerate(self.files)
        ]

    def _read(self, uri: str, index: int) -> Iterable[pa.Table]:
        return read_file(uri, index, self.cfg, self.batch_docs)


class StageChain:
    """A cleaning actor: builds the per-document stages once, runs them on every batch."""

    def __init__(self, cfg: PipelineConfig, build):
        self.stages: list[Stage] = build(cfg)

    def __call__(self, batch: pa.Table) -> pa.Table:
        for stage in self.stages:
            batch = stage(batch)
        return batch.append_column("chars", pc.utf8_length(batch["text"]))
