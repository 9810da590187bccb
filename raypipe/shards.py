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
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from raypipe import megatron
from raypipe.io import storage
from raypipe.pack import DOCUMENT, LENGTH, OFFSET, Packed, pack
from raypipe.report.stats import shard_stats

SHARDS_DIR = "shards"


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def write_shard(output: str, name: str, packed: Packed, documents: int) -> dict:
    """Publish one shard (tokens first, boundaries second) and describe it for the manifest."""
    tokens = _npy_bytes(packed.tokens)
    storage.write_atomic(storage.join(output, SHARDS_DIR, f"{name}.tokens.npy"), tokens)
    storage.write_atomic(
        storage.join(output, SHARDS_DIR, f"{name}.segments.npy"), _npy_bytes(packed.segments)
    )
    return {
        "path": f"{SHARDS_DIR}/{name}",
        "sequences": int(packed.tokens.shape[0]),
        "tokens": packed.n_valid,
        "documents": documents,
        "sha256": hashlib.sha256(tokens).hexdigest(),
    }


def write_megatron(
    output: str, name: str, flat: np.ndarray, doc_lengths: np.ndarray, vocab_size: int
) -> dict:
    """Publish one shard as Megatron-LM's NAME.bin/NAME.idx: whole documents, unpacked."""
    data = flat.astype(megatron.token_dtype(vocab_size), copy=False).tobytes()
    storage.write_atomic(storage.join(output, SHARDS_DIR, f"{name}.bin"), data)
    storage.write_atomic(
        storage.join(output, SHARDS_DIR, f"{name}.idx"),
        megatron.index_bytes(doc_lengths, megatron.token_dtype(vocab_size)),
    )
    return {
        "path": f"{SHARDS_DIR}/{name}",
        # Megatron's sequences are the .idx entries: one whole document each.
        "sequences": len(doc_lengths),
        "tokens": len(flat),
        "documents": len(doc_lengths),
        "sha256": hashlib.sha256(data).hexdigest(),
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


def pack_and_write(
    group: pa.Table,
    output: str,
    seq_len: int,
    pad_id: int,
    vocab_size: int,
    fingerprint: str,
    strategy: str,
    buffer: int,
    form: str,
    split_window: int = 0,
    boundary: np.ndarray | None = None,
) -> pa.Table:
    """One shard from all documents assigned to it, published with its sidecar last.

    The sidecar (NAME.json) marks the shard complete: a resumed run reuses shards whose
    sidecar carries the run's fingerprint. `split_window` and `boundary` (bool per token
    id, raypipe.boundary) shape concat's splits.
    """
    group = group.take(pc.sort_indices(group, [("order", "ascending")]))
    flat = pc.list_flatten(group["tokens"]).to_numpy()
    doc_tokens = group["n_tokens"].to_numpy()
    index = int(group["group"][0].as_py())
    stats = shard_stats(flat, doc_tokens, group["chars"].to_numpy(), vocab_size)
    if form == "megatron":
        entry = write_megatron(output, shard_name(index), flat, doc_tokens, vocab_size)
    else:
        packed = pack(flat, doc_tokens, seq_len, pad_id, strategy, buffer, split_window, boundary)
        entry = write_shard(output, shard_name(index), packed, len(doc_tokens))
        stats["split_documents"] = packed.split_documents
    entry["stats"] = stats
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
        if i.type == pafs.FileType.File and shard_group(i.base_name) not in entries
    ]
    for path in stale:
        fs.delete_file(path)
    return entries
