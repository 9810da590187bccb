"""Token shards: publish them in any format of raypipe.writers, resume the ones a run
already published, open native ones back as numpy arrays. The run's manifest.json lists
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
import pyarrow.parquet as pq

from raypipe.batch import DOCUMENT_KEYS
from raypipe.io import storage
from raypipe.pack import DOCUMENT, LENGTH, OFFSET, Packed, Packing
from raypipe.report.stats import ShardStats
from raypipe.writers import FORMATS, SHARDS_DIR, NativeShard

DOCUMENTS_DIR = "documents"  # under shards/: one table per shard, where each document went


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


def write_shard(output: str, name: str, packed: Packed, documents: int) -> dict:
    """Publish one native shard packed at once."""
    dtype, seq_len = packed.tokens.dtype, packed.tokens.shape[1]
    shard = NativeShard(output, name, dtype, 0, Packing(seq_len, 0, "pad", 1))
    shard.store_packed(packed)
    return shard.publish(documents)


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


def shard_group(file_name: str) -> int | None:
    """The group of a shard file name (inverse of shard_name); None for a file of the
    whole run (an index written at commit)."""
    stem = file_name.split(".")[0].rsplit("-shard-", 1)
    return int(stem[1]) if len(stem) == 2 and stem[1].isdigit() else None


def sidecar_uri(output: str, group: int) -> str:
    return storage.join(output, SHARDS_DIR, f"{shard_name(group)}.json")


def publish(
    chunks: Iterable[pa.Table],
    output: str,
    group: int,
    fingerprint: str,
    vocab_size: int,
    form: str,
    packing: Packing,
) -> dict | None:
    """One shard from its documents, which arrive in chunks in shard order, written in
    the format `form` (raypipe.writers) and published with its sidecar last; None when
    the shard got no document. Its documents table (`write_documents`) says where each
    document went.

    Memory holds a chunk and the writer's bounded state, never the shard. The sidecar
    (NAME.json) marks the shard complete: a resumed run reuses shards whose sidecar
    carries the run's fingerprint.
    """
    stats, writer, documents, keys = ShardStats(vocab_size), None, 0, []
    for chunk in chunks:
        keys.append(chunk.select([*DOCUMENT_KEYS, "chars", "words"]))
        flat = pc.list_flatten(chunk["tokens"]).to_numpy()
        lengths = chunk["n_tokens"].to_numpy()
        stats.add(flat, lengths, chunk["chars"].to_numpy(), chunk["words"].to_numpy())
        documents += len(lengths)
        writer = writer or FORMATS[form].writer(
            output, shard_name(group), flat.dtype, vocab_size, packing
        )
        writer.add(flat, lengths)
    if writer is None:
        return None
    entry = writer.publish(documents)
    placed = pa.concat_tables(keys).combine_chunks().replace_schema_metadata(None)
    placed = placed.add_column(0, "document", pa.array(np.arange(documents, dtype=np.int64)))
    for name, column in writer.placement(documents).items():
        placed = placed.append_column(name, pa.array(column))
    write_documents(output, entry["path"], placed)
    extra = {"split_documents": writer.split_documents} if FORMATS[form].packed else {}
    entry["stats"] = {**stats.as_dict(), **extra}
    entry["fingerprint"] = fingerprint
    entry["group"] = group
    storage.write_atomic(sidecar_uri(output, group), json.dumps(entry).encode())
    return entry


def documents_uri(output: str, path: str) -> str:
    """The documents table of the shard at `path` (its manifest path, shards/NAME)."""
    name = path.rsplit("/", 1)[-1]
    return storage.join(output, SHARDS_DIR, DOCUMENTS_DIR, f"{name}.parquet")


def write_documents(output: str, path: str, placed: pa.Table) -> None:
    """The shard's documents table, in shard order: the shard (its manifest path),
    `document` (its index in the shard, the `document` of the native segments), id,
    source, url, characters, the tokens placed and the first and last sequence holding a
    piece of it."""
    placed = placed.drop_columns([c for c in ["shard"] if c in placed.column_names])
    shard = pa.array([path] * placed.num_rows, pa.string())
    storage.write_table(documents_uri(output, path), placed.add_column(0, "shard", shard))


DOCUMENTS_COLUMNS = {
    *("shard", "document", "chars", "words", "tokens", "first_sequence", "last_sequence")
}


def require_documents_tables(output: str, manifest: dict) -> None:
    """Fail clearly for a run whose shards have no (complete) documents tables: one
    written by an earlier raypipe, where a lookup would wrongly find nothing."""
    for entry in manifest.get("shards", []):
        uri = documents_uri(output, entry["path"])
        fs, path = storage.filesystem(uri)
        if storage.exists(uri):
            with fs.open_input_file(path) as handle:
                if set(pq.read_schema(handle).names) >= DOCUMENTS_COLUMNS:
                    continue
        raise ValueError(
            f"{output} has no documents table for {entry['path']} (written by an earlier "
            "raypipe): run it again into a new output.path to locate or remove documents"
        )


def committed_entries(output: str, fingerprint: str) -> dict[int, dict]:
    """Shards a previous attempt of this very run already published, by group.

    Shards of any other run (an overwritten or abandoned one) are deleted.
    """
    fs, path = storage.filesystem(storage.join(output, SHARDS_DIR))
    entries = {}
    for info in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        if info.path.endswith(".json"):
            with fs.open_input_stream(info.path, compression=None) as stream:
                entry = json.loads(stream.read())
            if entry.get("fingerprint") == fingerprint:
                entries[entry["group"]] = entry
    stale = [  # the documents tables too, under shards/documents/
        i.path
        for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
        if i.type == pafs.FileType.File and shard_group(i.base_name) not in entries
    ]
    for path in stale:
        fs.delete_file(path)
    return entries
