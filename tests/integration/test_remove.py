"""`raypipe remove` on real runs: only the shards holding the documents change, and the
run's record accounts for every document afterwards."""

import json
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from raypipe import megatron, remove, shards
from raypipe.cli import app
from raypipe.io import storage
from raypipe.loader import Loader
from raypipe.locate import locate

from .test_pipeline import assert_accounted, run

pytestmark = pytest.mark.ray


def documents(out) -> list[dict]:
    return pq.read_table(f"{out}/shards/documents").to_pylist()


def removal_request(tmp_path, ids, domains=()):
    (tmp_path / "ids.txt").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "domains.txt").write_text("".join(f"{d}\n" for d in domains))
    return ["--ids", str(tmp_path / "ids.txt"), "--domains", str(tmp_path / "domains.txt")]


def native_tokens(out) -> Counter:
    return Counter(d.tobytes() for s in shards.open(str(out)) for d in s.documents())


def test_remove_by_id_and_domain_rewrites_only_their_shards(local_ray, mini_corpus, tmp_path):
    out = tmp_path / "run"
    before = run(mini_corpus, out)
    rows = documents(out)
    by_id = {r["id"]: r for r in rows}
    spdx = [r for r in rows if (r["url"] or "").startswith("https://spdx.org/")]
    assert spdx
    named = [r for r in rows if r["source"] == "udhr"][:2]
    gone = {r["id"] for r in [*named, *spdx]}
    tokens_before = native_tokens(out)
    removed_docs = {
        (s.path, n): d.tobytes() for s in shards.open(str(out)) for n, d in enumerate(s.documents())
    }
    removed_docs = {i: removed_docs[(by_id[i]["shard"], by_id[i]["document"])] for i in gone}
    contents = {s.path: s.tokens.tobytes() for s in shards.open(str(out))}

    request = removal_request(tmp_path, [r["id"] for r in named] + ["not-in-the-run"], ["spdx.org"])
    result = CliRunner().invoke(app, ["remove", str(out), *request])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"removed {len(gone)} documents")

    after = json.loads((out / "manifest.json").read_text())
    assert after["documents_out"] == before["documents_out"] - len(gone)
    assert after["rejected"]["removed"] == len(gone)
    assert after["removals"] == [1]
    assert_accounted(after, out)
    touched = {by_id[i]["shard"] for i in gone}
    for old, new in zip(before["shards"], after["shards"], strict=True):
        if old["path"] in touched:  # rewritten under a new name, the old files gone
            assert new["path"] == f"{old['path']}.r1" and new["sha256"] != old["sha256"]
            assert not (out / f"{old['path']}.tokens.npy").exists()
        else:
            assert new == old
    # Every other document is still there, token for token.
    assert native_tokens(out) == tokens_before - Counter(removed_docs.values())
    assert after["tokens"] == before["tokens"] - sum(by_id[i]["tokens"] for i in gone)
    left = documents(out)
    assert {r["id"] for r in left} == set(by_id) - gone
    for row in left:
        assert {k: row[k] for k in ("first_sequence", "last_sequence", "document")} == {
            k: by_id[row["id"]][k] for k in ("first_sequence", "last_sequence", "document")
        }
        assert row["shard"].removesuffix(".r1") == by_id[row["id"]]["shard"]
    now = {s.path: s.tokens.tobytes() for s in shards.open(str(out))}
    assert all(now[p] == contents[p] for p in contents if p not in touched)
    report = json.loads((out / "report.json").read_text())
    assert report["documents"] == after["documents_written"] == after["documents_out"]
    assert report["tokens"] == after["tokens"]
    place = next(iter(locate(str(out), [named[0]["id"]])))
    assert (place.shard, place.reason) == (None, "removed")
    assert sum(len(b["input_ids"]) for b in Loader(str(out), batch_size=4)) == after["sequences"]
    # Asked again, nothing is left to remove.
    again = CliRunner().invoke(app, ["remove", str(out), *request])
    assert again.exit_code == 0 and again.output.startswith("nothing removed")


def test_megatron_shards_lose_the_documents(local_ray, mini_corpus, tmp_path):
    out = tmp_path / "run"
    before = run(mini_corpus, out, **{"output.format": "megatron"})
    rows = documents(out)
    victim = rows[1]
    result = CliRunner().invoke(
        app, ["remove", str(out), *removal_request(tmp_path, [victim["id"]])]
    )
    assert result.exit_code == 0, result.output
    after = json.loads((out / "manifest.json").read_text())
    assert after["documents_written"] == before["documents_written"] - 1
    entry = next(e for e in after["shards"] if e["path"] == f"{victim['shard']}.r1")
    _, lengths = megatron.read_index((out / f"{entry['path']}.idx").read_bytes())
    table = [r for r in documents(out) if r["shard"] == entry["path"]]
    assert [r["tokens"] for r in table] == lengths.tolist()
    assert [r["first_sequence"] for r in table] == list(range(len(table)))
    assert victim["id"] not in {r["id"] for r in table}
    assert (out / f"{entry['path']}.bin").stat().st_size == lengths.sum() * 2
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    dataset = indexed.IndexedDataset(str(out / entry["path"]))
    assert [len(dataset[i]) for i in range(len(dataset))] == lengths.tolist()


def test_an_interrupted_removal_is_finished_by_the_next(
    local_ray, mini_corpus, tmp_path, monkeypatch
):
    out = tmp_path / "run"
    run(mini_corpus, out)
    victim = documents(out)[0]
    twin = tmp_path / "twin"
    run(mini_corpus, twin)
    CliRunner().invoke(app, ["remove", str(twin), *removal_request(tmp_path, [victim["id"]])])

    def crash(output, manifest, number, plan):  # after the shards, before the commit
        remove._rewrite(output, manifest, victim["shard"], np.array([victim["document"]]), 1)
        raise KeyboardInterrupt

    monkeypatch.setattr(remove, "_apply", crash)
    with pytest.raises(KeyboardInterrupt):
        remove.remove(str(out), {victim["id"]}, None, log=lambda _: None)
    assert json.loads((out / "manifest.json").read_text()).get("removals") is None
    monkeypatch.undo()
    logged = []
    finished = remove.remove(str(out), set(), None, log=logged.append)
    assert finished.documents == 0 and logged == ["finishing interrupted removal 1"]
    ours, theirs = (json.loads((d / "manifest.json").read_text()) for d in (out, twin))
    assert ours["shards"] == theirs["shards"] and ours["rejected"] == theirs["rejected"]
    assert not storage.exists(f"{out}/_removals/removal-00001.parquet")


def test_remove_on_s3(local_ray, s3_server, mini_corpus, tmp_path):
    out = f"{s3_server}/runs/remove"
    run(mini_corpus, out)
    victim = documents_s3(out)[0]
    result = CliRunner().invoke(app, ["remove", out, *removal_request(tmp_path, [victim["id"]])])
    assert result.exit_code == 0, result.output
    manifest = json.loads(storage.read_bytes(f"{out}/manifest.json"))
    assert manifest["rejected"]["removed"] == 1
    assert victim["id"] not in {r["id"] for r in documents_s3(out)}
    assert sum(s.n_valid for s in shards.open(out)) == manifest["tokens"]


def documents_s3(out: str) -> list[dict]:
    fs, path = storage.filesystem(f"{out}/shards/documents")
    return pq.read_table(path, filesystem=fs).to_pylist()


def test_remove_refuses_formats_it_cannot_rewrite(local_ray, mini_corpus, tmp_path):
    out = tmp_path / "run"
    run(mini_corpus, out, **{"output.format": "hf-parquet"})
    result = CliRunner().invoke(app, ["remove", str(out), *removal_request(tmp_path, ["x"])])
    assert result.exit_code == 1 and "content.opt_out" in " ".join(result.output.split())
    assert CliRunner().invoke(app, ["remove", str(out)]).exit_code == 2


def test_a_document_the_mixture_wrote_twice_is_removed_once_with_both_copies(
    local_ray, mini_corpus, tmp_path
):
    from raypipe.config import build_config
    from raypipe.pipeline import Pipeline

    out = tmp_path / "run"
    cfg = build_config(
        {
            "recipe": None,
            "sources": [{"name": "twice", "paths": [str(mini_corpus)], "epochs": 2}],
            "input": {"id_field": "id"},
            "output": {"path": str(out), "shard_tokens": 5_000},
        },
        {"pack.seq_len": 256},
    )
    before = Pipeline(cfg, log=lambda _: None).run()
    rows = documents(out)
    victim = rows[0]["id"]
    assert [r["id"] for r in rows].count(victim) == 2
    result = CliRunner().invoke(app, ["remove", str(out), *removal_request(tmp_path, [victim])])
    assert result.exit_code == 0 and result.output.startswith("removed 1 documents (2 copies, "), (
        result.output
    )
    after = json.loads((out / "manifest.json").read_text())
    assert after["documents_out"] == before["documents_out"] - 1
    assert after["documents_written"] == before["documents_written"] - 2
    source = after["sources"]["twice"]
    assert source["documents_written"] == before["sources"]["twice"]["documents_written"] - 2
    assert_accounted(after, out)
    assert victim not in {r["id"] for r in documents(out)}
