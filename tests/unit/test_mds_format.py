"""MDS shards: byte for byte what MosaicML Streaming's own MDSWriter writes for the same
samples, split into files where it splits them, and read back by its StreamingDataset."""

import json

import numpy as np
import pyarrow as pa
import pytest

from raypipe import writers
from raypipe.pack import Packing
from raypipe.shards import publish
from tests.batches import document_keys


def documents(seed: int, vocab_size: int) -> pa.Table:
    """Documents as the tokenizer stage leaves them: ids in the run's dtype, EOS last."""
    rng = np.random.default_rng(seed)
    ids = pa.uint16() if vocab_size < 65_536 else pa.uint32()
    docs = [
        rng.integers(0, vocab_size - 1, n).tolist() + [vocab_size - 1]
        for n in rng.integers(1, 150, 40)
    ]
    return pa.table(
        {
            "tokens": pa.array(docs, pa.list_(ids)),
            "n_tokens": [len(d) for d in docs],
            "chars": [4 * len(d) for d in docs],
            "words": [len(d) for d in docs],
            **document_keys(len(docs)),
        }
    )


@pytest.mark.parametrize("vocab_size", [50_257, 100_277])
def test_mds_files_are_streaming_mdswriter_bytes_and_read_back(
    tmp_path, monkeypatch, mosaic_streaming, vocab_size
):
    monkeypatch.setattr(writers, "MDS_FILE_BYTES", 4_000)  # a few samples per file
    packing = Packing(64, vocab_size - 1, "concat", 16)
    table = documents(vocab_size, vocab_size)
    entries = [
        publish(
            [table.slice(0, 25), table.slice(25)],
            str(tmp_path / "ours"),
            1,
            "fp",
            vocab_size,
            "mds",
            packing,
        ),
        publish([table.slice(10)], str(tmp_path / "ours"), 2, "fp", vocab_size, "mds", packing),
    ]
    files = [f for e in entries for f in e["mds"]]
    assert len(entries[0]["mds"]) > 2 and sum(f["samples"] for f in files) == sum(
        e["sequences"] for e in entries
    )
    writers.write_mds_index(str(tmp_path / "ours"), entries)
    ours = tmp_path / "ours" / "shards"

    dataset = mosaic_streaming.StreamingDataset(local=str(ours), shuffle=False, batch_size=1)
    samples = [dataset[i] for i in range(len(dataset))]
    tokens = np.concatenate([s["tokens"][s["attention_mask"].astype(bool)] for s in samples])
    written = [table.slice(0), table.slice(10)]
    expected = np.concatenate([t["tokens"].combine_chunks().flatten().to_numpy() for t in written])
    assert sorted(tokens.tolist()) == sorted(expected.tolist())  # each token once
    assert all(
        s["tokens"].dtype == (np.uint16 if vocab_size < 65_536 else np.uint32) for s in samples
    )

    # Streaming's own writer, given the same samples, writes the same bytes
    first = entries[0]["mds"]
    columns = dict(zip(first[0]["column_names"], first[0]["column_encodings"], strict=True))
    theirs = tmp_path / "theirs"
    with mosaic_streaming.MDSWriter(columns=columns, out=str(theirs), size_limit=4_000) as out:
        for sample in samples[: sum(f["samples"] for f in first)]:
            out.write({k: sample[k] for k in columns})
    index = json.loads((theirs / "index.json").read_text())
    assert [f["samples"] for f in index["shards"]] == [f["samples"] for f in first]
    for mine, reference in zip(first, index["shards"], strict=True):
        assert (ours / mine["raw_data"]["basename"]).read_bytes() == (
            theirs / reference["raw_data"]["basename"]
        ).read_bytes()
