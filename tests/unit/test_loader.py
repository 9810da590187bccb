"""The training loader on real shards: coverage over ranks, exact resume, varlen batch fields."""

import json
import tempfile
from collections import Counter
from itertools import islice

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raypipe.io import storage
from raypipe.loader import IGNORE, Loader, _shard_rows, torch_dataset
from raypipe.pack import pack
from raypipe.shards import write_shard

PAD = 0


def write_output(out: str, shard_docs: list[list[int]], seq_len: int, strategy: str) -> None:
    """A committed native output; every token of every document is a distinct id > 0."""
    entries, next_id = [], 1
    for index, lengths in enumerate(shard_docs):
        flat = np.arange(next_id, next_id + sum(lengths), dtype=np.uint32)
        next_id += len(flat)
        packed = pack(flat, np.array(lengths, np.int64), seq_len, PAD, strategy, 8)
        entries.append(write_shard(out, f"shard-{index:05d}", packed, len(lengths)))
    manifest = {"seq_len": seq_len, "shards": entries, "config": {"output": {"format": "native"}}}
    storage.write_atomic(storage.join(out, "manifest.json"), json.dumps(manifest).encode())


def rows(batches) -> list[tuple[int, ...]]:
    return [tuple(row) for batch in batches for row in batch["input_ids"].tolist()]


shard_lists = st.lists(st.lists(st.integers(1, 40), max_size=12), min_size=1, max_size=5)
strategies = st.sampled_from(["concat", "best_fit", "pad"])


@settings(max_examples=40, deadline=None)
@given(shard_lists, strategies, st.integers(1, 5), st.integers(1, 20), st.integers(0, 3))
def test_eight_ranks_yield_every_sequence_exactly_once_per_epoch(
    shard_docs, strategy, batch_size, buffer, seed
):
    with tempfile.TemporaryDirectory() as out:
        write_output(out, shard_docs, 16, strategy)
        everything = Counter(rows(Loader(out, batch_size=64, shuffle_buffer=10**6)))
        for epoch in range(2):
            seen = Counter()
            for rank in range(8):
                loader = Loader(out, batch_size, rank, 8, seed, buffer)
                loader.epoch = epoch
                mine = rows(loader)
                assert len(mine) == loader.rank_sequences()
                seen.update(mine)
            assert seen == everything
            assert sum(seen.values()) == loader.sequences


@settings(max_examples=40, deadline=None)
@given(shard_lists, strategies, st.integers(1, 4), st.integers(1, 9), st.integers(0, 12))
def test_resume_continues_exactly_where_it_stopped(shard_docs, strategy, batch_size, buffer, cut):
    with tempfile.TemporaryDirectory() as out:
        write_output(out, shard_docs, 16, strategy)

        def until_epoch(loader, end):
            batches = []
            while loader.epoch < end:
                batches += [rows([b]) for b in loader]
            return batches

        reference = until_epoch(Loader(out, batch_size, 1, 3, 7, buffer), 3)
        first = Loader(out, batch_size, 1, 3, 7, buffer)
        stream = (b for _ in range(2) for b in first)
        head = [rows([b]) for b in islice(stream, cut)]
        resumed = Loader(out, batch_size, 1, 3, 7, buffer)
        resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
        assert head + until_epoch(resumed, 3) == reference


@settings(max_examples=60, deadline=None)
@given(shard_lists, strategies, st.booleans())
def test_batch_fields_agree_with_the_documents(shard_docs, strategy, mask_boundary):
    seq_len = 16
    with tempfile.TemporaryDirectory() as out:
        write_output(out, shard_docs, seq_len, strategy)
        # document of each token id, from the layout write_output used
        doc_of, next_id = {}, 1
        for lengths in shard_docs:
            for doc, n in enumerate(lengths):
                doc_of.update({t: (len(doc_of), doc) for t in range(next_id, next_id + n)})
                next_id += n
        for batch in Loader(out, 3, shuffle_buffer=4, mask_boundary=mask_boundary):
            ids, labels = batch["input_ids"], batch["labels"]
            flat, cu = ids.reshape(-1), batch["cu_seqlens"]
            assert cu[0] == 0 and cu[-1] == ids.size and np.all(np.diff(cu) > 0)
            assert np.all(cu[:-1] // seq_len == (cu[1:] - 1) // seq_len)  # inside a row
            assert batch["max_seqlen"] == np.diff(cu).max()
            for a, b in zip(cu[:-1], cu[1:], strict=True):
                piece = flat[a:b]
                assert batch["position_ids"].reshape(-1)[a:b].tolist() == list(range(b - a))
                if piece[0] == PAD:
                    assert not piece.any()
                else:  # one run of consecutive ids of one document
                    assert np.all(np.diff(piece.astype(np.int64)) == 1)
                    assert len({doc_of[int(t)] for t in piece}) == 1
            for t in range(flat.size):
                here, nxt = flat[t], flat[t + 1] if t + 1 < flat.size else PAD
                crosses = (t + 1) % seq_len == 0 or (mask_boundary and (t + 1) in cu)
                expect = IGNORE if PAD in (here, nxt) or crosses else nxt
                assert labels.reshape(-1)[t] == expect


def test_dense_attention_mask_is_causal_inside_each_piece(tmp_path):
    write_output(str(tmp_path), [[5, 9, 30, 2]], 16, "best_fit")
    batch = next(iter(Loader(str(tmp_path), 3, attention_mask=True)))
    cu = batch["cu_seqlens"]
    for row in range(batch["input_ids"].shape[0]):
        expected = np.zeros((16, 16), bool)
        for a, b in zip(cu[:-1], cu[1:], strict=True):
            if row * 16 <= a < (row + 1) * 16:
                a, b = a - row * 16, b - row * 16
                expected[a:b, a:b] = np.tri(b - a, dtype=bool)
        assert np.array_equal(batch["attention_mask"][row], expected)


def test_ray_dataset_rows_agree_with_the_loader(tmp_path):
    """The per-shard reader behind `ray_dataset` (run by Ray tasks; here called directly)."""
    write_output(str(tmp_path), [[5, 9, 30, 2] * 200], 16, "best_fit")
    loader = Loader(str(tmp_path), 1)
    by_ids = {tuple(b["input_ids"][0].tolist()): b for b in loader}
    rows = _shard_rows({"shard": np.array([loader.paths[0]])}, str(tmp_path), 16, False)
    blocks = list(rows)
    assert len(blocks) > 1  # read in blocks, not whole
    assert sum(len(b["input_ids"]) for b in blocks) == len(by_ids) == loader.sequences
    for block in blocks:
        for i, ids in enumerate(block["input_ids"].tolist()):
            expected = by_ids[tuple(ids)]
            assert block["labels"][i].tolist() == expected["labels"][0].tolist()
            assert block["position_ids"][i].tolist() == expected["position_ids"][0].tolist()


def test_epochs_are_shuffled_deterministically(tmp_path):
    write_output(str(tmp_path), [[30] * 20, [30] * 20], 16, "concat")
    order = lambda seed, epoch: rows(  # noqa: E731
        Loader(str(tmp_path), 4, seed=seed, shuffle_buffer=16) if epoch == 0 else second(seed)
    )

    def second(seed):
        loader = Loader(str(tmp_path), 4, seed=seed, shuffle_buffer=16)
        list(loader)
        return loader

    assert order(1, 0) == order(1, 0)
    assert order(1, 0) != order(2, 0)
    assert order(1, 0) != order(1, 1)
    assert sorted(order(1, 0)) == sorted(order(1, 1))


def test_resume_refuses_another_layout(tmp_path):
    write_output(str(tmp_path), [[30] * 4], 16, "concat")
    state = Loader(str(tmp_path), world_size=2).state_dict()
    with pytest.raises(ValueError, match="world_size=2"):
        Loader(str(tmp_path), world_size=4).load_state_dict(state)


def test_reads_shards_from_object_storage(s3_server, tmp_path):
    out = f"{s3_server}/loader-test"
    write_output(out, [[30] * 5, [7] * 9], 16, "best_fit")
    write_output(str(tmp_path), [[30] * 5, [7] * 9], 16, "best_fit")
    remote = rows(Loader(out, 2, seed=3, shuffle_buffer=5))
    assert remote == rows(Loader(str(tmp_path), 2, seed=3, shuffle_buffer=5))
    assert len(remote) == Loader(out).sequences


def test_torch_dataset_yields_tensors_and_resumes(tmp_path):
    torch = pytest.importorskip("torch")
    write_output(str(tmp_path), [[30] * 6], 16, "concat")
    dataset = torch_dataset(Loader(str(tmp_path), 2, seed=5))
    batches = iter(torch.utils.data.DataLoader(dataset, batch_size=None))
    first = next(batches)
    assert first["input_ids"].dtype == torch.int64 and first["cu_seqlens"].dtype == torch.int32
    state = dataset.state_dict()
    again = torch_dataset(Loader(str(tmp_path), 2, seed=5))
    again.load_state_dict(state)
    assert torch.equal(next(iter(again))["input_ids"], next(batches)["input_ids"])


def test_loader_bench_command(tmp_path):
    from typer.testing import CliRunner

    from raypipe.cli import app

    write_output(str(tmp_path), [[30] * 20], 16, "concat")
    done = CliRunner().invoke(app, ["loader-bench", str(tmp_path), "--seconds", "0.2"])
    assert done.exit_code == 0, done.output
    assert "positions per CPU second" in done.output
    missing = CliRunner().invoke(app, ["loader-bench", str(tmp_path / "nothing")])
    assert missing.exit_code == 1 and "error" in missing.output
