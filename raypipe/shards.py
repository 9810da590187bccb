"""Native token shards: write them, open them back as numpy arrays.

A shard `NAME` is two .npy files (readable by plain `numpy.load(..., mmap_mode="r")`):
    NAME.tokens.npy   [sequences, seq_len] uint16 (vocab < 65,536) or uint32 token ids
    NAME.docs.npy     int64 flat offsets of document starts, then the number of valid
                      (non-padding) tokens; the document boundaries inside sequence i are
                      the offsets in [i*seq_len, (i+1)*seq_len)
The run's manifest.json lists every shard with its sequence and token counts and sha256.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from raypipe.io import storage
from raypipe.pack import Packed, pack_concat
from raypipe.report.stats import shard_stats

SHARDS_DIR = "shards"


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def write_shard(output: str, name: str, packed: Packed) -> dict:
    """Publish one shard (tokens first, boundaries second) and describe it for the manifest."""
    tokens = _npy_bytes(packed.tokens)
    storage.write_atomic(storage.join(output, SHARDS_DIR, f"{name}.tokens.npy"), tokens)
    storage.write_atomic(
        storage.join(output, SHARDS_DIR, f"{name}.docs.npy"), _npy_bytes(packed.doc_starts)
    )
    return {
        "path": f"{SHARDS_DIR}/{name}",
        "sequences": int(packed.tokens.shape[0]),
        "tokens": packed.n_valid,
        "documents": len(packed.doc_starts) - 1,
        "sha256": hashlib.sha256(tokens).hexdigest(),
    }


@dataclass(frozen=True)
class Shard:
    path: str
    tokens: np.ndarray
    doc_starts: np.ndarray

    @property
    def n_valid(self) -> int:
        return int(self.doc_starts[-1])

    def documents(self) -> Iterator[np.ndarray]:
        """Each document's tokens (EOS included), in shard order."""
        flat = self.tokens.reshape(-1)
        for start, end in zip(self.doc_starts[:-1], self.doc_starts[1:], strict=True):
            yield flat[start:end]


def _load(uri: str) -> np.ndarray:
    if storage.is_remote(uri):
        return np.load(io.BytesIO(storage.read_bytes(uri)), allow_pickle=False)
    return np.load(uri, mmap_mode="r", allow_pickle=False)


def open(output: str) -> list[Shard]:  # noqa: A001 (reads like the builtin on purpose)
    """The shards of a committed run, in manifest order, as (memory-mapped) arrays."""
    manifest = json.loads(storage.read_bytes(storage.join(output, "manifest.json")))
    return [
        Shard(
            entry["path"],
            _load(storage.join(output, f"{entry['path']}.tokens.npy")),
            _load(storage.join(output, f"{entry['path']}.docs.npy")),
        )
        for entry in manifest["shards"]
    ]


def shard_name(group: int) -> str:
    return f"shard-{group:05d}"


def sidecar_uri(output: str, group: int) -> str:
    return storage.join(output, SHARDS_DIR, f"{shard_name(group)}.json")


def pack_and_write(
    group: pa.Table, output: str, seq_len: int, pad_id: int, vocab_size: int, fingerprint: str
) -> pa.Table:
    """One shard from all documents assigned to it, published with its sidecar last.

    The sidecar (NAME.json) marks the shard complete: a resumed run reuses shards whose
    sidecar carries the run's fingerprint.
    """
    group = group.take(pc.sort_indices(group, [("order", "ascending")]))
    flat = pc.list_flatten(group["tokens"]).to_numpy()
    doc_tokens = group["n_tokens"].to_numpy()
    packed = pack_concat(flat, doc_tokens, seq_len, pad_id)
    index = int(group["group"][0].as_py())
    entry = write_shard(output, shard_name(index), packed)
    entry["stats"] = shard_stats(flat, doc_tokens, group["chars"].to_numpy(), vocab_size)
    entry["fingerprint"] = fingerprint
    entry["group"] = index
    storage.write_atomic(sidecar_uri(output, index), json.dumps(entry).encode())
    return pa.table({"entry": [json.dumps(entry)]})


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
        if i.type == pafs.FileType.File
        and int(i.base_name.split(".")[0].split("-")[1]) not in entries
    ]
    for path in stale:
        fs.delete_file(path)
    return entries
