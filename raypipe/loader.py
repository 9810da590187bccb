"""Training-time reader of native shards: shuffled per epoch, split over ranks, resumable.

The order of an epoch is a pure function of (seed, epoch): the shards in a seeded order,
their sequences read as one stream, and that stream shuffled inside consecutive windows
of `shuffle_buffer` sequences. Position p of the epoch goes to rank p % world_size, so the
ranks' slices are disjoint and together yield every sequence exactly once per epoch (rank
counts differ by at most one). A rank's whole state is (epoch, sequences it yielded), so
`load_state_dict` resumes exactly where `state_dict` was taken.

Each batch is a dict of numpy arrays, ready for flash-attention's varlen kernels:
    input_ids     int64 [batch, seq_len]
    labels        int64 [batch, seq_len]: the next token; -100 where that is padding, past
                  the sequence end, or (mask_boundary) the first token of another document
    position_ids  int64 [batch, seq_len]: restart at 0 at each document piece (and padding)
    cu_seqlens    int32 [pieces + 1]: boundaries in the flattened batch (padding is a piece)
    max_seqlen    int: the longest piece
    attention_mask  (on request, seq_len <= 4096) bool [batch, seq_len, seq_len]: causal and
                  block-diagonal, True where query i may attend key j
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from raypipe import shards
from raypipe.io import storage
from raypipe.pack import LENGTH, START

IGNORE = -100
RAY_ROWS = 256  # sequences per block of `ray_dataset`
OPEN_SHARDS = 8  # shards kept open (remote ones are held in memory whole)
MAX_DENSE_MASK = 4096  # [seq_len, seq_len] booleans per sequence: 16 MB at this length


@dataclass(frozen=True)
class _Shard:
    tokens: np.ndarray  # [sequences, seq_len]
    starts: np.ndarray  # segment starts within the flat shard
    ends: np.ndarray  # segment ends
    first: np.ndarray  # [sequences + 1]: segment range of each sequence


def _open_shard(output: str, path: str, seq_len: int) -> _Shard:
    # a plain view of the memory map: numpy.memmap's own indexing is slower
    tokens = np.asarray(shards.load_array(storage.join(output, f"{path}.tokens.npy")))
    segments = np.asarray(shards.load_array(storage.join(output, f"{path}.segments.npy")))
    starts = segments[:, START]
    edges = np.arange(tokens.shape[0] + 1, dtype=np.int64) * seq_len
    return _Shard(tokens, starts, starts + segments[:, LENGTH], np.searchsorted(starts, edges))


class Loader:
    """Batches of packed sequences for one rank, epoch after epoch."""

    def __init__(
        self,
        output: str,
        batch_size: int = 8,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        shuffle_buffer: int = 8192,
        mask_boundary: bool = False,
        attention_mask: bool = False,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size), got {rank} of {world_size}")
        if batch_size < 1 or shuffle_buffer < 1:
            raise ValueError("batch_size and shuffle_buffer must be at least 1")
        manifest = json.loads(storage.read_bytes(storage.join(output, "manifest.json")))
        if (form := manifest["config"]["output"]["format"]) != "native":
            raise ValueError(f"{output} holds {form} shards; the loader reads native shards")
        self.output, self.seq_len = output, int(manifest["seq_len"])
        if attention_mask and self.seq_len > MAX_DENSE_MASK:
            raise ValueError(
                f"a dense attention_mask is for seq_len <= {MAX_DENSE_MASK}; use cu_seqlens"
            )
        self.attention_mask = attention_mask
        self.paths = [entry["path"] for entry in manifest["shards"]]
        self.sizes = np.array([entry["sequences"] for entry in manifest["shards"]], np.int64)
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.seed, self.shuffle_buffer, self.mask_boundary = seed, shuffle_buffer, mask_boundary
        self.epoch, self.consumed = 0, 0
        self._open: OrderedDict[int, _Shard] = OrderedDict()

    # -- the order of an epoch -------------------------------------------------------
    @property
    def sequences(self) -> int:
        return int(self.sizes.sum())

    def rank_sequences(self) -> int:
        """Sequences this rank yields per epoch."""
        return len(range(self.rank, self.sequences, self.world_size))

    def _shard_order(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.paths))
        ends = np.cumsum(self.sizes[order])
        return order, ends

    def _window(self, index: int) -> np.ndarray:
        first = index * self.shuffle_buffer
        size = min(self.shuffle_buffer, self.sequences - first)
        rng = np.random.default_rng([self.seed, self.epoch, index])
        return first + rng.permutation(size)

    def positions(self) -> Iterator[np.ndarray]:
        """Stream indices of this rank's remaining sequences, one window at a time."""
        position = self.rank + self.consumed * self.world_size
        while position < self.sequences:
            index = position // self.shuffle_buffer
            window = self._window(index)
            offset = position - index * self.shuffle_buffer
            yield window[offset :: self.world_size]
            # the next position of this rank past the window's end
            taken = -(-(len(window) - offset) // self.world_size)
            position += taken * self.world_size

    # -- state -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "epoch": self.epoch,
            "consumed": self.consumed,
            "seed": self.seed,
            "world_size": self.world_size,
            "rank": self.rank,
            "shuffle_buffer": self.shuffle_buffer,
            "sequences": self.sequences,
        }

    def load_state_dict(self, state: dict) -> None:
        mine = self.state_dict()
        for key in ("seed", "world_size", "rank", "shuffle_buffer", "sequences"):
            if state[key] != mine[key]:
                raise ValueError(
                    f"cannot resume: the state has {key}={state[key]}, this loader {mine[key]}"
                )
        self.epoch, self.consumed = int(state["epoch"]), int(state["consumed"])

    # -- batches ---------------------------------------------------------------------
    def __iter__(self) -> Iterator[dict]:
        """The rest of the current epoch; afterwards the loader stands at the next one."""
        order, ends = self._shard_order()
        pending = np.empty(0, np.int64)
        for chunk in self.positions():
            pending = np.concatenate([pending, chunk])
            while len(pending) >= self.batch_size:
                batch, pending = pending[: self.batch_size], pending[self.batch_size :]
                yield self._batch(batch, order, ends)
        if len(pending):
            yield self._batch(pending, order, ends)
        self.epoch, self.consumed = self.epoch + 1, 0

    def _shard(self, index: int) -> _Shard:
        if index in self._open:
            self._open.move_to_end(index)
        else:
            self._open[index] = _open_shard(self.output, self.paths[index], self.seq_len)
            if len(self._open) > OPEN_SHARDS:
                self._open.popitem(last=False)
        return self._open[index]

    def _batch(self, stream: np.ndarray, order: np.ndarray, ends: np.ndarray) -> dict:
        n, length = len(stream), self.seq_len
        place = np.searchsorted(ends, stream, side="right")
        rows = stream - (ends[place] - self.sizes[order[place]])
        input_ids = np.empty((n, length), np.int64)
        starts, stops = [], []
        for slot_place in np.unique(place).tolist():
            slots = np.flatnonzero(place == slot_place)
            shard = self._shard(int(order[slot_place]))
            input_ids[slots] = shard.tokens[rows[slots]]
            piece_starts, piece_ends = _pieces(shard, rows[slots], slots, length)
            starts.append(piece_starts)
            stops.append(piece_ends)
        self.consumed += n
        return batch_fields(
            input_ids,
            np.concatenate(starts),
            np.concatenate(stops),
            self.mask_boundary,
            self.attention_mask,
        )


def _pieces(shard: _Shard, rows: np.ndarray, slots: np.ndarray, length: int):
    """Starts and ends of the pieces of `rows`, moved to their `slots` in a flat batch."""
    first, counts = shard.first[rows], shard.first[rows + 1] - shard.first[rows]
    pick = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    shift = np.repeat((slots - rows) * length, counts)
    return shard.starts[pick] + shift, shard.ends[pick] + shift


def batch_fields(
    input_ids: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    mask_boundary: bool,
    attention_mask: bool,
) -> dict:
    """A batch's training fields from its tokens and its pieces (flat starts and ends)."""
    n, length = input_ids.shape
    piece_starts = np.sort(starts)
    points = np.sort(np.concatenate([starts, stops, np.arange(n + 1) * length]))
    bounds = points[np.append(True, points[1:] != points[:-1])]
    sizes = np.diff(bounds)
    at = np.minimum(np.searchsorted(piece_starts, bounds[:-1]), len(piece_starts) - 1)
    is_piece = piece_starts[at] == bounds[:-1] if len(piece_starts) else np.zeros(0, bool)
    labels = np.empty((n, length), np.int64)
    labels[:, :-1] = input_ids[:, 1:]
    labels[:, -1] = IGNORE  # the next token is in another sequence, or nowhere
    flat = labels.reshape(-1)
    gaps = zip(bounds[:-1][~is_piece].tolist(), bounds[1:][~is_piece].tolist(), strict=True)
    for a, b in gaps:
        flat[max(a - 1, 0) : b] = IGNORE  # padding, and the token before it
    if mask_boundary:
        flat[piece_starts[piece_starts % length > 0] - 1] = IGNORE
    positions = np.arange(n * length) - np.repeat(bounds[:-1], sizes)
    batch = {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": positions.reshape(n, length),
        "cu_seqlens": bounds.astype(np.int32),
        "max_seqlen": int(sizes.max()),
    }
    if attention_mask:
        piece = np.repeat(np.arange(len(sizes)), sizes).reshape(n, length)
        causal = np.tri(length, dtype=bool)
        batch["attention_mask"] = (piece[:, :, None] == piece[:, None, :]) & causal
    return batch


def torch_dataset(loader: Loader):
    """`loader` as a `torch.utils.data.IterableDataset` of dicts of tensors.

    Use it with `DataLoader(dataset, batch_size=None, num_workers=0)`: the loader batches
    itself, and its state (for exact resume) lives in this process.
    """
    import torch
    from torch.utils.data import IterableDataset, get_worker_info

    class Sequences(IterableDataset):
        def __init__(self) -> None:
            self.loader = loader

        def __iter__(self):
            info = get_worker_info()
            if info is not None and info.num_workers > 1:
                raise ValueError("use num_workers=0 or 1: each worker would repeat the data")
            for batch in self.loader:
                yield {
                    key: torch.from_numpy(value) if isinstance(value, np.ndarray) else value
                    for key, value in batch.items()
                }

        def state_dict(self) -> dict:
            return self.loader.state_dict()

        def load_state_dict(self, state: dict) -> None:
            self.loader.load_state_dict(state)

    return Sequences()


def throughput(loader: Loader, seconds: float) -> dict:
    """Batches read for about `seconds` (epoch after epoch), per second of this process's CPU.

    CPU time rather than wall time: on a shared machine it is what one core delivers.
    """
    positions = tokens = batches = 0
    started, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds:
        for batch in loader:
            batches += 1
            positions += batch["input_ids"].size
            tokens += int(np.count_nonzero(batch["labels"] != IGNORE))
            if time.perf_counter() - started >= seconds:
                break
    cpu = time.process_time() - cpu
    return {
        "batches": batches,
        "cpu_seconds": cpu,
        "positions_per_cpu_s": positions / cpu,
        "tokens_per_cpu_s": tokens / cpu,
    }


def ray_dataset(output: str, mask_boundary: bool = False):
    """The sequences of a native output as a Ray Dataset, for Ray Train.

    One row per sequence: `input_ids`, `labels` and `position_ids` (restarting at each
    document piece, from which flash-attention's varlen boundaries follow). Each shard is
    read by one task. Shuffle and split it as Ray does (`randomize_block_order`,
    `streaming_split`); the exact resume of a mid-epoch state is the Loader's.
    """
    import ray.data

    loader = Loader(output)
    return ray.data.from_items(
        [{"shard": path} for path in loader.paths], override_num_blocks=len(loader.paths)
    ).map_batches(
        _shard_rows,
        fn_kwargs={"output": output, "seq_len": loader.seq_len, "mask_boundary": mask_boundary},
        batch_size=1,
    )


def _shard_rows(item: dict, output: str, seq_len: int, mask_boundary: bool) -> Iterator[dict]:
    shard = _open_shard(output, str(item["shard"][0]), seq_len)
    for first in range(0, shard.tokens.shape[0], RAY_ROWS):
        rows = np.arange(first, min(first + RAY_ROWS, shard.tokens.shape[0]))
        slots = np.arange(len(rows))
        starts, stops = _pieces(shard, rows, slots, seq_len)
        ids = shard.tokens[rows].astype(np.int64)
        fields = batch_fields(ids, starts, stops, mask_boundary, False)
        yield {key: fields[key] for key in ("input_ids", "labels", "position_ids")}
