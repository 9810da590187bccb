"""The whole plan on a real local Ray, checked against the input it was given."""

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from raypipe import phases, shards
from raypipe.config import build_config
from raypipe.pipeline import Pipeline
from raypipe.tokenizer import load_tokenizer

pytestmark = pytest.mark.ray


def run(corpus, out, **overrides):
    """A run with every option's own default (no recipe): these tests pin the mechanics;
    the default recipe runs end to end in tests/e2e."""
    cfg = build_config(
        {
            "recipe": None,
            "input": {"paths": [str(corpus)], "id_field": "id"},
            "output": {"path": str(out)},
        },
        {"output.shard_tokens": 5_000, "pack.seq_len": 256, **overrides},
    )
    return Pipeline(cfg, log=lambda _: None).run()


def decoded_documents(out) -> list[str]:
    tokenizer = load_tokenizer("gpt2")
    texts = []
    for shard in shards.open(str(out)):
        for doc in shard.documents():
            assert doc[-1] == tokenizer.eos_id
            texts.append(tokenizer.tokenizer.decode(doc[:-1].tolist()))
    return texts


def inputs(corpus) -> list[dict]:
    return [json.loads(line) for line in corpus.read_text().splitlines()]


def assert_accounted(manifest, out):
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    ledger = pq.read_table(out / "rejects")
    assert ledger.num_rows == sum(manifest["rejected"].values())
    assert Counter(ledger["reason"].to_pylist()) == Counter(manifest["rejected"])


def test_round_trip_without_cleaning(local_ray, mini_corpus, tmp_path):
    manifest = run(
        mini_corpus,
        tmp_path,
        **{"normalize.enabled": False, "quality.enabled": False, "dedup.exact.enabled": False},
    )
    assert Counter(decoded_documents(tmp_path)) == Counter(r["text"] for r in inputs(mini_corpus))
    assert manifest["documents_out"] == manifest["documents_in"] == len(inputs(mini_corpus))
    assert len(manifest["shards"]) > 1
    assert sum(s["tokens"] for s in manifest["shards"]) == manifest["tokens"]
    assert_accounted(manifest, tmp_path)


def test_cleaning_keeps_each_document_once_and_accounts_for_the_rest(
    local_ray, mini_corpus, tmp_path, monkeypatch
):
    manifest = run(mini_corpus, tmp_path)
    assert manifest["rejected"]["exact_duplicate"] == 1
    assert manifest["rejected_by_stage"]["quality"] > 0
    texts = decoded_documents(tmp_path)
    assert len(texts) == len(set(texts)) == manifest["documents_out"]
    assert_accounted(manifest, tmp_path)
    ledger = pq.read_table(tmp_path / "rejects").to_pylist()
    duplicate = next(r for r in ledger if r["reason"] == "exact_duplicate")
    assert (
        duplicate["id"].endswith("-copy") and duplicate["duplicate_of"] + "-copy" == duplicate["id"]
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tokens"] == manifest["tokens"]
    assert 0.5 < report["sequence_utilization"] <= 1.0
    assert report["top_tokens"][0]["count"] >= report["top_tokens"][-1]["count"]

    # Few drops are broadcast to the tasks, many go through a shuffle join: same documents.
    clean, dedup = (str(next((tmp_path / "_work").glob(f"{p}-*"))) for p in ("clean", "dedup"))
    config = build_config({"input": {"paths": ["unused"]}, "output": {"path": "unused"}})

    def kept_ids():
        kept = phases.kept_documents(clean, [dedup], 1, config.ray)
        return sorted(row["id"] for row in kept.select_columns(["id"]).iter_rows())

    broadcast = kept_ids()
    monkeypatch.setattr(phases, "BROADCAST_DROPS", 0)
    assert broadcast == kept_ids()
    assert len(broadcast) == manifest["documents_out"] and duplicate["id"] not in broadcast


def test_same_input_same_shards_and_resume(local_ray, mini_corpus, tmp_path):
    first = run(mini_corpus, tmp_path / "a")
    second = run(mini_corpus, tmp_path / "b")
    assert [s["sha256"] for s in first["shards"]] == [s["sha256"] for s in second["shards"]]
    # A crash after some shards were published: the rerun rewrites only what is missing.
    (tmp_path / "a" / "manifest.json").unlink()
    for suffix in ("tokens.npy", "segments.npy", "json"):
        (tmp_path / "a" / "shards" / f"{shards.shard_name(1)}.{suffix}").unlink()
    resumed = run(mini_corpus, tmp_path / "a")
    assert [s["sha256"] for s in resumed["shards"]] == [s["sha256"] for s in first["shards"]]
    # Each step's wall time; the resumed run redid only packing and the ledger.
    steps = [
        "read and clean",
        "deduplicate",
        "tokenize",
        "scatter copies to shards",
        "pack",
        "rejects ledger",
    ]
    assert list(first["step_seconds"]) == steps and min(first["step_seconds"].values()) > 0
    assert list(resumed["step_seconds"]) == ["pack", "rejects ledger"]
    again = run(mini_corpus, tmp_path / "a")
    assert again["shards"] == first["shards"]


def test_without_tokenizer_writes_clean_documents(local_ray, mini_corpus, tmp_path):
    manifest = run(mini_corpus, tmp_path, tokenizer=None)
    documents = pq.read_table(tmp_path / "documents")
    assert documents.num_rows == manifest["documents_out"]
    assert "write documents" in manifest["step_seconds"] and "pack" not in manifest["step_seconds"]
    assert {"id", "text", "source", "url"} <= set(documents.column_names)
    assert not {"uid", "reason", "text_hash"} & set(documents.column_names)
    assert_accounted(manifest, tmp_path)


def test_workers_allocate_arrow_memory_with_jemalloc(local_ray):
    """mimalloc, pyarrow's default, keeps freed pages: a run's peak grew with its input."""

    @local_ray.remote
    def backend() -> str:
        import pyarrow as pa

        return pa.default_memory_pool().backend_name

    assert local_ray.get(backend.remote()) == "jemalloc"
