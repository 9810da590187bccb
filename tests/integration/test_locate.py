"""Every shard's documents table, and `raypipe locate`, on a real local Ray run."""

import json

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from raypipe import shards
from raypipe.cli import app
from raypipe.locate import locate

from .test_pipeline import inputs, run

pytestmark = pytest.mark.ray


def documents_tables(out):
    return pq.read_table(out / "shards" / "documents").sort_by([("shard", "ascending")])


def test_native_documents_table_says_where_each_document_is(local_ray, mini_corpus, tmp_path):
    manifest = run(mini_corpus, tmp_path, **{"pack.strategy": "best_fit"})
    table = documents_tables(tmp_path)
    ledger = pq.read_table(tmp_path / "rejects")
    given = {row["id"]: row for row in inputs(mini_corpus)}
    # Every input document is in exactly one place: one row of a documents table or the ledger.
    kept = table["id"].to_pylist()
    assert len(kept) == len(set(kept)) == manifest["documents_out"]
    assert sorted(kept + ledger["id"].to_pylist()) == sorted(given)
    assert table["url"].to_pylist() == [given[i].get("url") for i in kept]
    assert table["source"].to_pylist() == [given[i]["source"] for i in kept]
    assert any(url is not None for url in ledger["url"].to_pylist())
    for shard in shards.open(str(tmp_path)):
        rows = table.filter(pc.equal(table["shard"], shard.path)).to_pylist()
        assert [r["document"] for r in rows] == list(range(len(rows)))
        documents = list(shard.documents())
        assert [r["tokens"] for r in rows] == [len(d) for d in documents]
        seq_len = shard.tokens.shape[1]
        segments = shard.segments
        for row in rows:
            pieces = segments[segments[:, 2] == row["document"]]
            first = pieces[:, 0] // seq_len
            last = (pieces[:, 0] + pieces[:, 1] - 1) // seq_len
            assert (row["first_sequence"], row["last_sequence"]) == (first.min(), last.max())
            # The sequences named hold the document's tokens.
            span = shard.tokens[row["first_sequence"] : row["last_sequence"] + 1].reshape(-1)
            assert np.isin(documents[row["document"]], span).all()


def test_megatron_documents_table_is_the_idx_order(local_ray, mini_corpus, tmp_path):
    manifest = run(mini_corpus, tmp_path, **{"output.format": "megatron"})
    table = documents_tables(tmp_path)
    for entry in manifest["shards"]:
        rows = table.filter(pc.equal(table["shard"], entry["path"]))
        idx = (tmp_path / f"{entry['path']}.idx").read_bytes()
        count = int(np.frombuffer(idx[18:26], "<u8")[0])
        lengths = np.frombuffer(idx[34 : 34 + 4 * count], "<i4")
        assert rows["tokens"].to_pylist() == lengths.tolist()
        assert rows["first_sequence"].to_pylist() == list(range(count))


def test_locate_finds_kept_rejected_and_unknown_documents(local_ray, mini_corpus, tmp_path):
    run(mini_corpus, tmp_path)
    table = documents_tables(tmp_path)
    ledger = pq.read_table(tmp_path / "rejects")
    kept, rejected = table.to_pylist()[0], ledger.to_pylist()[0]
    url = next(r for r in table.to_pylist() if r["url"])
    places = {p.key: p for p in locate(str(tmp_path), [kept["id"], url["url"], rejected["id"]])}
    assert places[kept["id"]].shard == kept["shard"]
    assert places[kept["id"]].first_sequence == kept["first_sequence"]
    assert places[url["url"]].id == url["id"]
    assert (places[rejected["id"]].shard, places[rejected["id"]].reason) == (
        None,
        rejected["reason"],
    )
    result = CliRunner().invoke(app, ["locate", str(tmp_path), kept["id"], "no-such-document"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{kept['id']}\tkept\t{kept['shard']} sequence")
    assert lines[1].startswith("no-such-document\tnot found")
    assert json.loads((tmp_path / "manifest.json").read_text())["documents_out"] == len(table)


def test_locate_refuses_a_folder_without_a_run(tmp_path):
    result = CliRunner().invoke(app, ["locate", str(tmp_path), "x"])
    assert result.exit_code == 1 and "no committed run" in " ".join(result.output.split())


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_locate_in_a_run_of_cleaned_documents(local_ray, mini_corpus, tmp_path, form):
    run(mini_corpus, tmp_path, **{"tokenizer": None, "output.format": form})
    given = inputs(mini_corpus)
    book = next(r for r in given if r.get("url"))
    chapters = {r["id"] for r in given if r.get("url") == book["url"]}
    places = locate(str(tmp_path), [book["url"], book["id"]])
    # The book's URL names each of its chapters, kept or rejected; its id names one.
    assert {p.id for p in places if p.key == book["url"]} == chapters
    assert [p.id for p in places if p.key == book["id"]] == [book["id"]]
    for place in places:
        assert (tmp_path / place.file).exists() if place.reason is None else place.file is None
