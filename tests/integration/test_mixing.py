"""A mixture of named sources hits its token shares, the same way on every rerun."""

import json
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from raypipe.config import build_config
from raypipe.pipeline import Pipeline
from tests.faults import repeated_corpus

pytestmark = pytest.mark.ray


@pytest.fixture
def by_source(mini_corpus, tmp_path):
    """The mini corpus x8, as one file per source (as a user's sources would be).

    Shares are met to within one document's tokens, so each source needs many documents.
    """
    rows = defaultdict(list)
    corpus = repeated_corpus(mini_corpus, tmp_path / "all.jsonl", copies=8)
    for line in corpus.read_text().splitlines():
        rows[json.loads(line)["source"]].append(line)
    for name, lines in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def run(folder, out, targets):
    cfg = build_config(
        {
            "recipe": None,  # the mixture's arithmetic, without the recipe's rejections
            "sources": [
                {"name": n, "paths": [str(folder / f"{n}.jsonl")], **target}
                for n, target in targets.items()
            ],
            "input": {"id_field": "id"},
            "output": {"path": str(out), "shard_tokens": 20_000},
            "pack": {"seq_len": 256},
            "quality": {"enabled": False},
        }
    )
    return Pipeline(cfg, log=lambda _: None).run()


def test_token_shares_are_met_and_reproducible(local_ray, by_source, tmp_path):
    # Half of the books, and two sources sized to 30% and 20% of the output around them.
    targets = {"gutenberg": {"epochs": 0.5}, "spamassassin": {"share": 0.3}, "spdx": {"share": 0.2}}
    first = run(by_source, tmp_path / "a", targets)
    sources = first["sources"]
    for name, share in (("gutenberg", 0.5), ("spamassassin", 0.3), ("spdx", 0.2)):
        assert abs(sources[name]["share"] - share) < 0.01, sources[name]
    assert sources["gutenberg"]["epochs"] == pytest.approx(0.5, abs=0.01)
    assert sources["gutenberg"]["documents_out"] < sources["gutenberg"]["documents_kept"]
    written = sum(s["tokens_out"] for s in first["sources"].values())
    assert written == first["tokens"]
    assert first["documents_in"] == first["documents_out"] + sum(first["rejected"].values())
    ledger = pq.read_table(tmp_path / "a" / "rejects")
    assert ledger.num_rows == sum(first["rejected"].values())
    assert first["rejected"]["not_sampled"] == ledger["reason"].to_pylist().count("not_sampled")

    second = run(by_source, tmp_path / "b", targets)
    assert [s["sha256"] for s in second["shards"]] == [s["sha256"] for s in first["shards"]]
    assert second["sources"] == first["sources"]
