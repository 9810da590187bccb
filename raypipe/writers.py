"""Output formats, by name: the one table that decides what a run writes.

A token format is a shard writer, opened as `Writer(output, name, dtype, vocab_size,
packing)` (each takes what its layout needs): documents go in chunk by chunk (`add(flat, lengths)`,
the token ids of whole documents end to end and their lengths), `publish(documents)`
makes the shard's files visible and describes them for the manifest, `placement` says
which sequences hold each document (raypipe.shards writes it as the shard's documents
table). Writers of packed
formats inherit the packing from `PackedShard` and only say how sequences are stored.
A format without a writer writes the cleaned documents themselves (no tokenizer).

    native      NAME.tokens.npy [sequences, seq_len] uint16/uint32 ids + NAME.segments.npy
                int64 [pieces, 4] (flat start, length, document, offset; sorted by start,
                so the pieces of sequence i are the rows with start in
                [i*seq_len, (i+1)*seq_len); positions no piece covers are padding);
                plain `numpy.load(..., mmap_mode="r")` reads both
    hf-parquet  NAME.parquet, one row per sequence: input_ids, position_ids (restarting at
                each document and sequence, as Hugging Face's packed-sequence attention
                expects) and attention_mask (0 on padding); `datasets.load_dataset("parquet",
                data_files=...)` reads it
    mds         NAME.NNNNN.mds + one index.json for the run, MosaicML Streaming's format:
                one sample per sequence with the hf-parquet columns;
                `streaming.StreamingDataset(local="OUT/shards")` reads it
    megatron    NAME.bin + NAME.idx of whole documents, packed by Megatron-LM at training
                (raypipe.megatron)
    parquet     documents/ as Parquet: the cleaned documents and their kept fields
    jsonl       documents/ as JSON lines
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raypipe import megatron
from raypipe.io import storage
from raypipe.pack import DOCUMENT, LENGTH, START, Packed, Packing

SHARDS_DIR = "shards"


class ShardWriter(Protocol):
    packed: ClassVar[bool]  # sequences of seq_len (with split_documents after publish)

    def add(self, flat: np.ndarray, lengths: np.ndarray) -> None: ...
    def publish(self, documents: int) -> dict: ...
    def placement(self, documents: int) -> dict[str, np.ndarray]: ...


class PackedShard:
    """A shard of fixed-length sequences: the packing is done here, a subclass stores the
    sequences as they complete (`store`) and its boundaries at the end (`seal`)."""

    packed: ClassVar[bool] = True

    def __init__(
        self, output: str, name: str, dtype: np.dtype, vocab_size: int, packing: Packing
    ) -> None:
        self.output, self.name, self.seq_len = output, name, packing.seq_len
        self.packer = packing.packer(dtype)
        self.rows, self.segments, self.split_documents = 0, [], 0
        self.placed = np.zeros((0, 4), np.int64)  # every segment, once published

    def add(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        self.store_packed(self.packer.add(flat, lengths))

    def store_packed(self, packed: Packed) -> None:
        self.store(packed)
        self.rows += len(packed.tokens)
        self.segments.append(packed.segments)

    def publish(self, documents: int) -> dict:
        self.store_packed(self.packer.finish())
        segments = np.concatenate(self.segments) if self.segments else self.placed
        self.placed, self.segments = segments, []
        self.split_documents = int(np.count_nonzero(np.bincount(segments[:, DOCUMENT]) > 1))
        return {
            "path": f"{SHARDS_DIR}/{self.name}",
            "sequences": self.rows,
            "tokens": int(segments[:, LENGTH].sum()),
            "documents": documents,
            "sha256": self.seal(segments),
        }

    def placement(self, documents: int) -> dict[str, np.ndarray]:
        """Per document in the order added: the tokens placed, the first and last sequence
        holding a piece of it."""
        document, start, length = (self.placed[:, c] for c in (DOCUMENT, START, LENGTH))
        first = np.full(documents, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, document, start // self.seq_len)
        last = np.full(documents, -1, np.int64)
        np.maximum.at(last, document, (start + length - 1) // self.seq_len)
        tokens = np.bincount(document, weights=length, minlength=documents).astype(np.int64)
        return {"tokens": tokens, "first_sequence": first, "last_sequence": last}

    def store(self, packed: Packed) -> None:
        raise NotImplementedError

    def seal(self, segments: np.ndarray) -> str:
        """Publish the shard's files; the sha256 of its token file."""
        raise NotImplementedError


class NativeShard(PackedShard):
    """Tokens stream to storage as they are packed (the .npy header, which holds the row
    count, is patched in last); the segments, a few bytes per document, follow them."""

    def __init__(
        self, output: str, name: str, dtype: np.dtype, vocab_size: int, packing: Packing
    ) -> None:
        super().__init__(output, name, dtype, vocab_size, packing)
        descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
        self.header = {"descr": descr, "fortran_order": False}
        self.spool = storage.Spool(storage.join(output, SHARDS_DIR, f"{name}.tokens.npy"))
        self._write_header()  # numpy reserves room for any row count: the size stays

    def _write_header(self) -> None:
        header = {**self.header, "shape": (self.rows, self.seq_len)}
        np.lib.format.write_array_header_1_0(self.spool.file, header)

    def store(self, packed: Packed) -> None:
        self.spool.file.write(np.ascontiguousarray(packed.tokens).tobytes())

    def seal(self, segments: np.ndarray) -> str:
        self.spool.file.seek(0)
        self._write_header()
        sha256 = self.spool.publish()
        buffer = io.BytesIO()
        np.save(buffer, segments, allow_pickle=False)
        uri = storage.join(self.output, SHARDS_DIR, f"{self.name}.segments.npy")
        storage.write_atomic(uri, buffer.getvalue())
        return sha256


def covered(packed: Packed, first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the tokens of documents sit in `packed` (flat indexes, `first_row` being its
    first sequence in the shard) and each one's position in its piece: positions restart
    at each document and each sequence, so they stay below seq_len."""
    start, length = packed.segments[:, START], packed.segments[:, LENGTH]
    within = np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length)
    return np.repeat(start - first_row * packed.tokens.shape[1], length) + within, within


def training_columns(packed: Packed, first_row: int) -> dict[str, np.ndarray]:
    """The columns trainers of packed sequences take, each [sequences, seq_len]: token
    ids, positions restarting at each document (0 on padding) and the attention mask."""
    flat, positions = covered(packed, first_row)
    position_ids = np.zeros(packed.tokens.size, np.int32)
    position_ids[flat] = positions
    mask = np.zeros(packed.tokens.size, np.uint8)
    mask[flat] = 1
    shape = packed.tokens.shape
    return {
        "tokens": packed.tokens,
        "position_ids": position_ids.reshape(shape),
        "attention_mask": mask.reshape(shape),
    }


class ParquetTokenShard(PackedShard):
    """Packed sequences as a Parquet file of Hugging Face training columns, written one
    row group per stored chunk."""

    def __init__(
        self, output: str, name: str, dtype: np.dtype, vocab_size: int, packing: Packing
    ) -> None:
        super().__init__(output, name, dtype, vocab_size, packing)
        self.spool = storage.Spool(storage.join(output, SHARDS_DIR, f"{name}.parquet"))
        ids = pa.from_numpy_dtype(np.dtype(dtype))
        self.schema = pa.schema(
            [
                ("input_ids", pa.list_(ids)),
                ("position_ids", pa.list_(pa.int32())),
                ("attention_mask", pa.list_(pa.int8())),
            ]
        )
        self.writer = pq.ParquetWriter(self.spool.file, self.schema)

    def store(self, packed: Packed) -> None:
        if not len(packed.tokens):
            return
        named = training_columns(packed, self.rows)
        columns = [named["tokens"], named["position_ids"], named["attention_mask"].view(np.int8)]
        offsets = pa.array(np.arange(len(packed.tokens) + 1, dtype=np.int32) * self.seq_len)
        arrays = [pa.ListArray.from_arrays(offsets, pa.array(c.reshape(-1))) for c in columns]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def seal(self, segments: np.ndarray) -> str:
        self.writer.close()
        return self.spool.publish()


MDS_FILE_BYTES = 1 << 26  # Streaming's default shard size: a file is read whole


class MdsShard(PackedShard):
    """Packed sequences in MosaicML Streaming's MDS format: fixed-size samples of three
    ndarray columns (`tokens`, the name LLM Foundry's text datasets read, `position_ids`
    and `attention_mask`), in files of at most 64 MiB, each written once it fills. The
    run's index.json, which lists every file of every shard, is written at commit."""

    def __init__(
        self, output: str, name: str, dtype: np.dtype, vocab_size: int, packing: Packing
    ) -> None:
        super().__init__(output, name, dtype, vocab_size, packing)
        dtypes = {
            "position_ids": "int32",
            "tokens": np.dtype(dtype).name,
            "attention_mask": "uint8",
        }
        names = sorted(dtypes)  # Streaming stores columns in name order
        # The shard-file header Streaming writes, and the index entry each file repeats.
        self.file_config = {
            "column_names": names,
            "column_encodings": [f"ndarray:{dtypes[n]}:{self.seq_len}" for n in names],
            "column_sizes": [self.seq_len * np.dtype(dtypes[n]).itemsize for n in names],
            "compression": None,
            "format": "mds",
            "hashes": [],
            "size_limit": MDS_FILE_BYTES,
            "version": 2,
        }
        self.config = json.dumps(self.file_config, sort_keys=True).encode()
        self.sample_bytes = sum(self.file_config["column_sizes"])
        self.per_file = max(1, (MDS_FILE_BYTES - 8 - len(self.config)) // (self.sample_bytes + 4))
        self.pending: list[np.ndarray] = []  # [samples, sample_bytes] blocks, < per_file in all
        self.files: list[dict] = []
        self.sha256 = hashlib.sha256()

    def store(self, packed: Packed) -> None:
        if not len(packed.tokens):
            return
        named = training_columns(packed, self.rows)
        rows = [np.ascontiguousarray(named[n]) for n in self.file_config["column_names"]]
        self.pending.append(np.hstack([c.view(np.uint8).reshape(len(c), -1) for c in rows]))
        if sum(map(len, self.pending)) >= self.per_file:
            samples = np.concatenate(self.pending)
            full = len(samples) // self.per_file * self.per_file
            for first in range(0, full, self.per_file):
                self._write_file(samples[first : first + self.per_file])
            self.pending = [samples[full:]]

    def _write_file(self, samples: np.ndarray) -> None:
        """One .mds file: the sample count, every sample's byte offset, the columns'
        description, then the samples."""
        header = 4 + 4 * (len(samples) + 1) + len(self.config)
        offsets = header + np.arange(len(samples) + 1, dtype=np.int64) * self.sample_bytes
        count = np.uint32(len(samples)).tobytes()
        data = b"".join(
            [count, offsets.astype(np.uint32).tobytes(), self.config, samples.tobytes()]
        )
        basename = f"{self.name}.{len(self.files):05d}.mds"
        storage.write_atomic(storage.join(self.output, SHARDS_DIR, basename), data)
        self.sha256.update(data)
        raw = {"basename": basename, "bytes": len(data), "hashes": {}}
        self.files.append(
            {**self.file_config, "samples": len(samples), "raw_data": raw, "zip_data": None}
        )

    def seal(self, segments: np.ndarray) -> str:
        if sum(map(len, self.pending)):
            self._write_file(np.concatenate(self.pending))
        return self.sha256.hexdigest()

    def publish(self, documents: int) -> dict:
        return {**super().publish(documents), "mds": self.files}


def write_mds_index(output: str, entries: list[dict]) -> None:
    """Streaming's index.json, every shard's files in manifest order."""
    index = {"version": 2, "shards": [f for e in entries for f in e["mds"]]}
    uri = storage.join(output, SHARDS_DIR, "index.json")
    storage.write_atomic(uri, json.dumps(index, sort_keys=True).encode())


class MegatronShard:
    """A shard as Megatron-LM's NAME.bin/NAME.idx (whole documents, unpacked): the .bin
    streams to storage, the .idx (12 bytes per document) is written after it."""

    packed: ClassVar[bool] = False

    def __init__(
        self, output: str, name: str, dtype: np.dtype, vocab_size: int, packing: Packing
    ) -> None:
        self.output, self.name = output, name
        self.dtype = megatron.token_dtype(vocab_size)  # Megatron's choice, not the tokenizer's
        self.lengths: list[np.ndarray] = []
        self.spool = storage.Spool(storage.join(output, SHARDS_DIR, f"{name}.bin"))

    def add(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        self.spool.file.write(flat.astype(self.dtype, copy=False).tobytes())
        self.lengths.append(lengths)

    def _lengths(self) -> np.ndarray:
        return np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)

    def placement(self, documents: int) -> dict[str, np.ndarray]:
        """Megatron's sequence i is document i, whole."""
        lengths = self._lengths()
        at = np.arange(len(lengths), dtype=np.int64)
        return {"tokens": lengths.astype(np.int64), "first_sequence": at, "last_sequence": at}

    def publish(self, documents: int) -> dict:
        sha256 = self.spool.publish()
        lengths = self._lengths()
        uri = storage.join(self.output, SHARDS_DIR, f"{self.name}.idx")
        storage.write_atomic(uri, megatron.index_bytes(lengths, self.dtype))
        return {
            "path": f"{SHARDS_DIR}/{self.name}",
            # Megatron's sequences are the .idx entries: one whole document each.
            "sequences": len(lengths),
            "tokens": int(lengths.sum()),
            "documents": len(lengths),
            "sha256": sha256,
        }


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    writer: type[ShardWriter] | None = None  # None: cleaned documents, no tokenizer
    # written at commit from every shard's manifest entry, for formats read as one dataset
    index: Callable[[str, list[dict]], None] | None = None

    @property
    def tokens(self) -> bool:
        return self.writer is not None

    @property
    def packed(self) -> bool:
        return self.writer is not None and self.writer.packed


FORMATS = {
    f.name: f
    for f in (
        Format("native", "packed token shards as .npy (raypipe.loader)", NativeShard),
        Format("hf-parquet", "packed token shards as Hugging Face Parquet", ParquetTokenShard),
        Format("mds", "packed token shards as MosaicML Streaming MDS", MdsShard, write_mds_index),
        Format("megatron", "Megatron-LM .bin/.idx of whole documents", MegatronShard),
        Format("parquet", "cleaned documents as Parquet (tokenizer unset)"),
        Format("jsonl", "cleaned documents as JSON lines (tokenizer unset)"),
    )
}
FormatName = Literal[tuple(FORMATS)]  # type: ignore[valid-type] (the table's names)
