"""The token dataset's statistics the lesson prints (documents, characters, words, tokens,
vocabulary use, characters per token, utilization, top tokens) from shard statistics, and
the warnings when characters per token or utilization leave their usual ranges."""

from __future__ import annotations

import numpy as np

from raypipe.report.stats import ShardStats, dataset_report, warnings


def shard(docs: list[list[int]], chars: list[int], words: list[int], sequences: int) -> dict:
    stats = ShardStats(vocab_size=10)
    flat = np.concatenate([np.array(d) for d in docs])
    lengths = np.array([len(d) for d in docs])
    stats.add(flat, lengths, np.array(chars), np.array(words))
    return {"stats": stats.as_dict(), "sequences": sequences}


def test_statistics_merge_over_shards():
    shards = [
        shard([[1, 2, 3], [1, 1]], chars=[16, 8], words=[3, 2], sequences=1),
        shard([[4, 5, 6, 7, 1]], chars=[16], words=[4], sequences=1),
    ]
    report = dataset_report(shards, vocab_size=10, seq_len=8)
    assert (report["documents"], report["characters"], report["tokens"]) == (3, 40, 10)
    assert report["doc_words"] == {"min": 2, "mean": 3.0, "max": 4}
    assert report["doc_tokens"] == {"min": 2, "mean": 10 / 3, "max": 5}
    assert report["unique_tokens"] == 7 and report["vocab_utilization"] == 0.7
    assert report["chars_per_token"] == 4.0
    assert report["sequence_utilization"] == 10 / 16
    assert report["top_tokens"][0] == {"id": 1, "count": 4}


def test_warnings_outside_the_usual_ranges():
    good = {"tokens": 100, "chars_per_token": 4.2, "sequences": 5, "sequence_utilization": 0.97}
    assert warnings(good) == []
    assert warnings({**good, "chars_per_token": 3.0}) == []  # the limits are in range
    [low] = warnings({**good, "chars_per_token": 1.8})
    assert low.startswith("1.80 characters per token, outside 3-5")
    [high] = warnings({**good, "chars_per_token": 5.2})
    assert "outside 3-5" in high
    [padded] = warnings({**good, "sequence_utilization": 0.85})
    assert padded.startswith("sequences 85.0% full, under 90%")
    assert warnings({**good, "sequence_utilization": None}) == []  # megatron: not packed
