"""Token shards: write them (native or megatron), open native ones back as numpy arrays.

A native shard `NAME` is two .npy files (readable by plain `numpy.load(..., mmap_mode="r")`):
    NAME.tokens.npy     [sequences, seq_len] uint16 (vocab < 65,536) or uint32 token ids
    NAME.segments.npy   int64 [pieces, 4], one row per piece of a document placed in a
                        sequence: flat start, length, document (index in the shard), offset
                        in the document; sorted by start, so the pieces of sequence i are the
                        rows with start in [i*seq_len, (i+1)*seq_len); positions no piece
                        covers are padding
A megatron shard is NAME.bin + NAME.idx (raypipe.megatron). The run's manifest.json lists
every shard with its sequence and token counts and sha256.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from raypipe import megatron
from raypipe.io import storage
from raypipe.pack import DOCUMENT, LENGTH, OFFSET, Packed, Packer
from raypipe.report.stats import ShardStats

SHARDS_DIR = "shards"


class NativeShard:
    """A native shard written sequence by sequence: tokens stream to storage as they are
    packed (the .npy header, which holds the row count, is patched in last); the
    boundaries, a few bytes per document, are kept and written after the tokens."""

    def __init__(self, output: str, name: str, dtype: np.dtype, seq_len: int) -> None:
        self.output, self.name = output, name
        descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
        self.header = {"descr": descr, "fortran_order": False}
        self.seq_len, self.rows, self.segments = seq_len, 0, []
        self.spool = storage.Spool(storage.join(output, SHARDS_DIR, f"{name}.tokens.npy"))
        self._write_header()  # numpy reserves room for any row count: the size stays

    def _write_header(self) -> None:
        header = {**self.header, "shape": (self.rows, self.seq_len)}
        np.lib.format.write_array_header_1_0(self.spool.file, header)

    def write(self, packed: Packed) -> None:
        self.spool.file.write(np.ascontiguousarray(packed.tokens).tobytes())
        self.rows += len(packed.tokens)
        self.segments.append(packed.segments)

    def publish(self, documents: int) -> dict:
        """Tokens first, boundaries second; describe the shard for the manifest."""
        self.spool.file.seek(0)
        self._write_header()
        sha256 = self.spool.publish()
        segments = np.concatenate(self.segments) if self.segments else np.zeros((0, 4), np.int64)
        buffer = io.BytesIO()
        np.save(buffer, segments, allow_pickle=False)
        uri = storage.join(self.output, SHARDS_DIR, f"{self.name}.segments.npy")
        storage.write_atomic(uri, buffer.getvalue())
        self.split_documents = int(np.count_nonzero(np.bincount(segments[:, DOCUMENT]) > 1))
        return {
            "path": f"{SHARDS_DIR}/{self.name}",
            "sequences": self.rows,
            "tokens": int(segments[:, LENGTH].sum()),
            "documents": documents,
            "sha256": sha256,
        }


def write_shard(output: str, name: str, packed: Packed, documents: int) -> dict:
    """Publish one shard packed at once (see NativeShard)."""
    shard = NativeShard(output, name, packed.tokens.dtype, packed.tokens.shape[1])
    shard.write(packed)
    return shard.publish(documents)


class MegatronShard:
    """A shard as Megatron-LM's NAME.bin/NAME.idx (whole documents, unpacked): the .bin
    streams to storage, the .idx (12 bytes per document) is written after it."""

    def __init__(self, output: str, name: str, vocab_size: int) -> None:
        self.output, self.name = output, name
        self.dtype = megatron.token_dtype(vocab_size)
        self.lengths: list[np.ndarray] = []
        self.spool = storage.Spool(storage.join(output, SHARDS_DIR, f"{name}.bin"))

    def write(self, flat: np.ndarray, doc_lengths: np.ndarray) -> None:
        self.spool.file.write(flat.astype(self.dtype, copy=False).tobytes())
        self.lengths.append(doc_lengths)

    def publish(self) -> dict:
        sha256 = self.spool.publish()
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
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
class Shard:
    path: str
    tokens: np.ndarray
    segments: np.ndarray

    @property
    def n_valid(self) -> int:
        return int(self.segments[:, LENGTH].sum())

    def documents(self) -> Iterator[np.ndarray]:
        """Each document's tokens (EOS included), in shard order, its pieces rejoined."""
        flat = self.tokens.reshape(-1)
        pieces = self.segments[np.lexsort((self.segments[:, OFFSET], self.segments[:, DOCUMENT]))]
        firsts = np.flatnonzero(pieces[:, OFFSET] == 0).tolist() + [len(pieces)]
        for first, end in zip(firsts[:-1], firsts[1:], strict=True):
            parts = [flat[start : start + length] for start, length, *_ in pieces[first:end]]
            yield parts[0] if len(parts) == 1 else np.concatenate(parts)


def load_array(uri: str) -> np.ndarray:
    """A .npy file: memory-mapped when local, read whole from object storage."""
    if storage.is_remote(uri):
        return np.load(io.BytesIO(storage.read_bytes(uri)), allow_pickle=False)
    return np.load(uri, mmap_mode="r", allow_pickle=False)


def open(output: str) -> list[Shard]:  # noqa: A001 (reads like the builtin on purpose)
    """The shards of a committed native run, in manifest order, as (memory-mapped) arrays."""
    manifest = json.loads(storage.read_bytes(storage.join(output, "manifest.json")))
    if (form := manifest["config"]["output"]["format"]) != "native":
        raise ValueError(f"{output} holds {form} shards, not native ones")
    return [
        Shard(
            entry["path"],
            load_array(storage.join(output, f"{entry['path']}.tokens.npy")),
            load_array(storage.join(output, f"{entry['path']}.segments.npy")),
        )
        for entry in manifest["shards"]
    ]


def shard_name(group: int) -> str:
    """`7f-shard-00001`: the leading hash spreads keys over an object store's prefix
    partitions, so that many writers publishing at once are not throttled on one prefix."""
    spread = hashlib.blake2b(group.to_bytes(8, "little"), digest_size=1).hexdigest()
    return f"{spread}-shard-{group:05d}"


def shard_group(file_name: str) -> int:
    """The group of a shard file name (inverse of shard_name)."""
    return int(file_name.split(".")[0].rsplit("-", 1)[1])


def sidecar_uri(output: str, group: int) -> str:
    return storage.join(output, SHARDS_DIR, f"{shard_name(group)}.json")


def publish(
    chunks: Iterable[pa.Table],
    output: str,
    group: int,
    seq_len: int,
    pad_id: int,
    vocab_size: int,
    fingerprint: str,
    strategy: str,
    buffer: int,
    form: str,
    split_window: int = 0,
    boundary: np.ndarray | None = None,
) -> dict | None:
    """One shard from its documents, which arrive in chunks in shard order, published
    with its sidecar last; None when the shard got no document.

    Memory holds a chunk and the packer's bounded state, never the shard. The sidecar
    (NAME.json) marks the shard complete: a resumed run reuses shards whose sidecar
    carries the run's fingerprint. `split_window` and `boundary` (bool per token id,
    raypipe.boundary) shape concat's splits.
    """
    stats, writer, packer, documents = ShardStats(vocab_size), None, None, 0
    for chunk in chunks:
        flat = pc.list_flatten(chunk["tokens"]).to_numpy()
        doc_tokens = chunk["n_tokens"].to_numpy()
        stats.add(flat, doc_tokens, chunk["chars"].to_numpy())
        documents += len(doc_tokens)
        if form == "megatron":
            writer = writer or MegatronShard(output, shard_name(group), vocab_size)
            writer.write(flat, doc_tokens)
            continue
        if writer is None:
            writer = NativeShard(output, shard_name(group), flat.dtype, seq_len)
            packer = Packer(seq_len, pad_id, strategy, buffer, flat.dtype, split_window, boundary)
        writer.write(packer.add(flat, doc_tokens))
    if writer is None:
        return None
    if packer is None:
        entry, extra = writer.publish(), {}
    else:
        writer.write(packer.finish())
        entry, extra = writer.publish(documents), {"split_documents": writer.split_documents}
    entry["stats"] = {**stats.as_dict(), **extra}
    entry["fingerprint"] = fingerprint
    entry["group"] = group
    storage.write_atomic(sidecar_uri(output, group), json.dumps(entry).encode())
    return entry


def committed_entries(output: str, fingerprint: str) -> dict[int, dict]:
    """Shards a previous attempt of this very run already published, by group.

    Shards of any other run (an overwritten or abandoned one) are deleted.
    """
    fs, path = storage.filesystem(storage.join(output, SHARDS_DIR))
    selector = pafs.FileSelector(path, allow_not_found=True)
    entries = {}
    for info in fs.get_file_info(selector):
        if info.path.endswith(".json"):
            with fs.open_input_stream(info.path, compression=None) as stream:
                entry = json.loads(stream.read())
            if entry.get("fingerprint") == fingerprint:
                entries[entry["group"]] = entry
    stale = [
        i.path
        for i in fs.get_file_info(selector)
        if i.type == pafs.FileType.File and shard_group(i.base_name) not in entries
    ]
    for path in stale:
        fs.delete_file(path)
    return entries
