"""A corpus holding every kind of broken input: the run completes and accounts for all."""

import gzip
import json
from collections import Counter

import pyarrow.parquet as pq
import pytest
import zstandard

from raypipe.config import build_config
from raypipe.pipeline import Pipeline

pytestmark = pytest.mark.ray

GOOD = "A perfectly ordinary paragraph of English prose about the weather and the sea. " * 12


def lines(*rows) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


def test_every_bad_input_kind_is_a_reject(local_ray, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a_mixed.jsonl").write_bytes(
        lines(
            {"id": "good-1", "text": GOOD},
            b'{"id": "broken", "text": ',
            b'{"id": "latin1", "text": "caf\xe9"}',
            {"id": "no-text"},
            {"id": ["not", "a", "string"], "text": GOOD},
            {"id": 12, "text": GOOD + " twelve"},
        )
    )
    (corpus / "b_empty.jsonl").write_bytes(b"")
    (corpus / "c_binary.jsonl").write_bytes(bytes(range(256)) * 64)
    whole = lines(*({"id": f"gz-{i}", "text": f"{GOOD} {i}"} for i in range(400)))
    gz, zst = gzip.compress(whole), zstandard.ZstdCompressor().compress(whole)
    (corpus / "d_cut.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    (corpus / "e_cut.jsonl.zst").write_bytes(zst[: len(zst) // 2])
    (corpus / "f_huge.jsonl").write_bytes(
        lines(
            {"id": "huge", "text": "x" * 50_000_000}, {"id": "after-huge", "text": GOOD + " after"}
        )
    )
    out = tmp_path / "out"
    cfg = build_config(
        {"input": {"paths": [str(corpus)], "id_field": "id"}, "output": {"path": str(out)}}
        | {"recipe": None}  # GOOD repeats one sentence: the recipe's rules reject it
    )
    manifest = Pipeline(cfg, log=lambda _: None).run()

    rejected = manifest["rejected"]
    for reason in (
        "malformed_json",
        "invalid_utf8",
        "missing_text",
        "bad_id",
        "empty_file",
        "binary_file",
        "too_large",
    ):
        assert rejected.get(reason, 0) >= 1, reason
    assert rejected["truncated_file"] == 2
    assert manifest["documents_in"] == manifest["documents_out"] + sum(rejected.values())
    ledger = pq.read_table(out / "rejects").to_pylist()
    assert len(ledger) == sum(rejected.values())
    assert Counter(r["reason"] for r in ledger) == Counter(rejected)
    by_id = {r["id"]: r["reason"] for r in ledger}
    # A gigantic line is streamed past unparsed, so its id is its position.
    assert by_id[f"{corpus / 'f_huge.jsonl'}#0"] == "too_large"
    assert by_id[str(corpus / "c_binary.jsonl")] == "binary_file"
    # Documents before a break, and after a gigantic line, are kept.
    assert manifest["documents_out"] >= 3, rejected


def test_a_run_that_rejects_every_document_commits_an_empty_result(local_ray, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(lines(*({"id": f"s{i}", "text": f"too short {i}"} for i in range(5))))
    out = tmp_path / "out"
    cfg = build_config({"input": {"paths": [str(corpus)]}, "output": {"path": str(out)}})
    manifest = Pipeline(cfg, log=lambda _: None).run()
    assert manifest["documents_in"] == 5 and manifest["documents_out"] == 0
    assert {k: n for k, n in manifest["rejected"].items() if n} == {"heuristic:min_words": 5}
    assert manifest["tokens"] == 0 and (out / "manifest.json").is_file()
