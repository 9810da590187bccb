"""Copies of documents scattered to (shard, chunk) cells on storage, gathered back by shard.

Packing needs each shard's documents in their seeded order (raypipe.shuffle). Rather
than a sort-shuffle, whose reduce task holds a whole shard (or several) in memory, every
scatter task writes its documents into cells: shard x chunk, a chunk being one of equal
ranges of the order key. The cells of a task are the row groups of one Parquet file.
A shard is then gathered one chunk at a time, each chunk from every file and sorted
there: chunk after chunk is the shard in exactly the order one global sort gives, and no
task ever holds more than a chunk. The shuffle spills to storage by design.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from raypipe.batch import DOCUMENT_KEYS
from raypipe.io import storage

CELLS_KEY = b"raypipe.cells"  # schema metadata: the cell of each row group, in order
# What packing reads back: the tokens, and the keys of each shard's documents table.
COLUMNS = ["tokens", "n_tokens", "chars", "words", "order", *DOCUMENT_KEYS]
# Tokens per chunk a shard is gathered in: the most a packing task holds at once
# (a few copies of it, as Arrow columns and numpy arrays, about 150 MB at uint32).
CHUNK_TOKENS = 8_000_000


def chunks_per_shard(tokens_per_shard: float) -> int:
    return max(1, int(np.ceil(tokens_per_shard / CHUNK_TOKENS)))


def chunk_of(order: np.ndarray, chunks: int) -> np.ndarray:
    """The chunk of each order key: `chunks` equal ranges of the key, in key order."""
    high = np.asarray(order, np.uint64) >> np.uint64(32)
    return ((high * np.uint64(chunks)) >> np.uint64(32)).astype(np.int64)


def write_cells(copies: pa.Table, folder: str, name: str, chunks: int) -> int:
    """One file of `copies` (with `group` and `order`) cut into cells; returns its cells."""
    cells = copies["group"].to_numpy().astype(np.int64) * chunks + chunk_of(
        copies["order"].to_numpy(), chunks
    )
    at = np.argsort(cells, kind="stable")
    table, cells = copies.select(COLUMNS).take(pa.array(at)), cells[at]
    starts = np.flatnonzero(np.diff(cells, prepend=-1)).tolist()
    ends = [*starts[1:], len(cells)]
    schema = table.schema.with_metadata({CELLS_KEY: json.dumps(cells[starts].tolist())})
    spool = storage.Spool(storage.join(folder, name))  # streamed out, not built in memory
    # No dictionary: token ids have too many values for one to pay, and building it first
    # holds a hash table beside each row group.
    with pq.ParquetWriter(spool.file, schema, compression="zstd", use_dictionary=False) as writer:
        for start, end in zip(starts, ends, strict=True):
            writer.write_table(table.slice(start, end - start), row_group_size=end - start)
    spool.publish()
    return len(starts)


class Gather:
    """The chunks of one shard, read back from every cell file of the scatter."""

    def __init__(self, folder: str, group: int, chunks: int) -> None:
        self.fs, path = storage.filesystem(folder)
        self.group, self.chunks = group, chunks
        infos = self.fs.get_file_info(pafs.FileSelector(path))
        files = sorted(i.path for i in infos if i.path.endswith(".parquet"))
        first = group * chunks
        # Per chunk: (file, row group) of each file that holds a piece of it.
        self.pieces: list[list[tuple[str, int]]] = [[] for _ in range(chunks)]
        for file in files:
            with self.fs.open_input_file(file) as handle:
                cells = json.loads(pq.read_schema(handle).metadata[CELLS_KEY])
            for row_group, cell in enumerate(cells):
                if first <= cell < first + chunks:
                    self.pieces[cell - first].append((file, row_group))

    def __iter__(self) -> Iterator[pa.Table]:
        """Each non-empty chunk, sorted by order key."""
        for pieces in self.pieces:
            if pieces:
                yield self._read(pieces)

    def _read(self, pieces: list[tuple[str, int]]) -> pa.Table:
        parts = []
        for file, row_group in pieces:
            with self.fs.open_input_file(file) as handle:
                parts.append(pq.ParquetFile(handle).read_row_group(row_group, columns=COLUMNS))
        chunk = pa.concat_tables(parts)
        return chunk.take(pc.sort_indices(chunk, [("order", "ascending")]))
