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

from raypipe.io import storage
from raypipe.pack import DOCUMENT, LENGTH, OFFSET, Packed, Packing
from raypipe.report.stats import ShardStats
from raypipe.writers import FORMATS, SHARDS_DIR, NativeShard


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
    the shard got no document.

    Memory holds a chunk and the writer's bounded state, never the shard. The sidecar
    (NAME.json) marks the shard complete: a resumed run reuses shards whose sidecar
    carries the run's fingerprint.
    """
    stats, writer, documents = ShardStats(vocab_size), None, 0
    for chunk in chunks:
        flat = pc.list_flatten(chunk["tokens"]).to_numpy()
        lengths = chunk["n_tokens"].to_numpy()
        stats.add(flat, lengths, chunk["chars"].to_numpy())
        documents += len(lengths)
        writer = writer or FORMATS[form].writer(
            output, shard_name(group), flat.dtype, vocab_size, packing
        )
        writer.add(flat, lengths)
    if writer is None:
        return None
    entry = writer.publish(documents)
    extra = {"split_documents": writer.split_documents} if FORMATS[form].packed else {}
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
