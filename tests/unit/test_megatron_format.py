"""A megatron shard read back by the real megatron-core IndexedDataset."""

import numpy as np
import pyarrow as pa
import pytest

from raypipe.pack import Packing
from raypipe.shards import publish, shard_name
from tests.batches import document_keys

indexed_dataset = pytest.importorskip("megatron.core.datasets.indexed_dataset")


@pytest.mark.parametrize("vocab_size", [50_257, 100_277])
def test_megatron_core_reads_every_document_as_written(tmp_path, vocab_size):
    rng = np.random.default_rng(vocab_size)
    docs = [rng.integers(0, vocab_size, n).tolist() + [vocab_size - 1] for n in (0, 5, 700, 33)]
    group = pa.table(
        {
            "tokens": docs,
            "n_tokens": [len(d) for d in docs],
            "chars": [4 * len(d) for d in docs],
            "words": [len(d) for d in docs],
            "order": [3, 1, 2, 0],  # written in this order
            **document_keys(4),
        }
    )
    chunks = [group.sort_by("order").slice(0, 2), group.sort_by("order").slice(2)]
    packing = Packing(64, vocab_size - 1, "concat", 16)
    entry = publish(chunks, str(tmp_path), 7, "fp", vocab_size, "megatron", packing)
    dataset = indexed_dataset.IndexedDataset(str(tmp_path / "shards" / shard_name(7)))
    written = [docs[i] for i in (3, 1, 2, 0)]
    assert len(dataset) == len(written) == entry["sequences"] == entry["documents"]
    assert [dataset[i].tolist() for i in range(len(dataset))] == written
    assert dataset.index.dtype == (np.uint16 if vocab_size < 65_500 else np.int32)
    assert list(dataset.document_indices) == list(range(len(written) + 1))
