"""Packing strategies and the megatron format through the whole plan on a real local Ray."""

import json
from collections import Counter

import numpy as np
import pytest

from raypipe import shards
from raypipe.boundary import boundary_table
from raypipe.loader import Loader, ray_dataset
from raypipe.pack import DOCUMENT, LENGTH, START
from raypipe.tokenizer import load_tokenizer
from tests.integration.test_pipeline import decoded_documents, inputs, run

pytestmark = [pytest.mark.ray, pytest.mark.slow]
RAW = {"normalize.enabled": False, "quality.enabled": False, "dedup.exact.enabled": False}


def test_best_fit_run_round_trips_and_loads_on_two_ranks(local_ray, mini_corpus, tmp_path):
    manifest = run(mini_corpus, tmp_path, **RAW, **{"pack.strategy": "best_fit"})
    assert Counter(decoded_documents(tmp_path)) == Counter(r["text"] for r in inputs(mini_corpus))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["pack_strategy"] == "best_fit"
    assert report["sequence_utilization"] > 0.9
    seen = Counter()
    for rank in range(2):
        for batch in Loader(str(tmp_path), 4, rank, 2, seed=1):
            seen.update(tuple(row) for row in batch["input_ids"].tolist())
    assert sum(seen.values()) == manifest["sequences"]
    rows = ray_dataset(str(tmp_path)).take_all()
    assert Counter(tuple(r["input_ids"].tolist()) for r in rows) == seen
    loaded = next(iter(Loader(str(tmp_path), 1)))
    match = next(r for r in rows if r["input_ids"].tolist() == loaded["input_ids"][0].tolist())
    assert match["position_ids"].tolist() == loaded["position_ids"][0].tolist()
    assert match["labels"].tolist() == loaded["labels"][0].tolist()


def test_megatron_run_is_read_by_megatron_core(local_ray, mini_corpus, tmp_path):
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    from raypipe.tokenizer import load_tokenizer

    manifest = run(mini_corpus, tmp_path, **RAW, **{"output.format": "megatron"})
    tokenizer = load_tokenizer("gpt2")
    texts = []
    for entry in manifest["shards"]:
        dataset = indexed.IndexedDataset(str(tmp_path / entry["path"]))
        assert len(dataset) == entry["documents"]
        for i in range(len(dataset)):
            doc = dataset[i].tolist()
            assert doc[-1] == tokenizer.eos_id
            texts.append(tokenizer.tokenizer.decode(doc[:-1]))
    assert Counter(texts) == Counter(r["text"] for r in inputs(mini_corpus))
    # Megatron's sequences are its .idx entries, one per document
    assert manifest["sequences"] == manifest["documents_written"] == len(texts)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["pack_strategy"] is report["sequence_utilization"] is None
    assert report["split_documents"] is None


def test_hf_parquet_run_loads_in_datasets_as_the_native_sequences(local_ray, mini_corpus, tmp_path):
    datasets = pytest.importorskip("datasets")
    native = run(mini_corpus, tmp_path / "native", **RAW)
    manifest = run(mini_corpus, tmp_path / "hf", **RAW, **{"output.format": "hf-parquet"})
    files = [str(tmp_path / "hf" / f"{e['path']}.parquet") for e in manifest["shards"]]
    loaded = datasets.load_dataset("parquet", data_files=files, split="train")
    assert len(loaded) == manifest["sequences"] == native["sequences"]
    assert sum(sum(mask) for mask in loaded["attention_mask"]) == manifest["tokens"]
    expected = {
        tuple(r["input_ids"].tolist()): r["position_ids"].tolist()
        for r in ray_dataset(str(tmp_path / "native")).take_all()
    }
    for row in loaded:
        # compared where documents are: padding is position 0 here
        mask = np.array(row["attention_mask"], bool)
        want = np.array(expected[tuple(row["input_ids"])])
        assert (np.array(row["position_ids"])[mask] == want[mask]).all()


def test_concat_split_window_run_cuts_documents_after_boundaries(local_ray, mini_corpus, tmp_path):
    manifest = run(mini_corpus, tmp_path, **RAW, **{"pack.split_window": 64})
    assert Counter(decoded_documents(tmp_path)) == Counter(r["text"] for r in inputs(mini_corpus))
    table = boundary_table(load_tokenizer("gpt2"))
    seq_len, cut_early, split = manifest["seq_len"], 0, 0
    for shard in shards.open(str(tmp_path)):
        segments = np.asarray(shard.segments)
        filled = np.bincount(segments[:, START] // seq_len, segments[:, LENGTH]).astype(int)
        short = np.flatnonzero(filled[:-1] < seq_len)  # sequences cut before their end
        assert (filled[short] > seq_len - 64).all()
        assert table[np.asarray(shard.tokens)[short, filled[short] - 1]].all()
        cut_early += len(short)
        split += int(np.count_nonzero(np.bincount(segments[:, DOCUMENT]) > 1))
    report = json.loads((tmp_path / "report.json").read_text())
    assert cut_early and report["split_documents"] == split
    assert report["sequence_utilization"] == manifest["tokens"] / (manifest["sequences"] * seq_len)


def test_mds_run_is_read_by_mosaicml_streaming_as_the_native_sequences(
    local_ray, mini_corpus, tmp_path, mosaic_streaming
):
    native = run(mini_corpus, tmp_path / "native", **RAW, **{"output.shard_tokens": 2_000})
    manifest = run(
        mini_corpus,
        tmp_path / "mds",
        **RAW,
        **{"output.format": "mds", "output.shard_tokens": 2_000},
    )
    assert len(manifest["shards"]) > 1  # the index joins every shard's files
    local = str(tmp_path / "mds" / "shards")
    dataset = mosaic_streaming.StreamingDataset(local=local, shuffle=False, batch_size=1)
    rows = [dataset[i] for i in range(len(dataset))]
    assert len(rows) == manifest["sequences"] == native["sequences"]
    assert sum(int(r["attention_mask"].sum()) for r in rows) == manifest["tokens"]
    expected = {
        tuple(r["input_ids"].tolist()): r["position_ids"].tolist()
        for r in ray_dataset(str(tmp_path / "native")).take_all()
    }
    for row in rows:
        mask = row["attention_mask"].astype(bool)
        want = np.array(expected[tuple(row["tokens"].tolist())])
        assert (row["position_ids"][mask] == want[mask]).all()
