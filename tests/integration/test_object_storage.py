"""s3:// in, s3:// out, against a real S3-protocol server on 127.0.0.1."""

import json

import pytest

from raypipe import shards
from raypipe.config import build_config
from raypipe.io import storage
from raypipe.loader import Loader
from raypipe.pipeline import Pipeline

pytestmark = pytest.mark.ray


def test_run_from_s3_to_s3(local_ray, s3_server, mini_corpus):
    source = f"{s3_server}/input/mini.jsonl"
    storage.write_atomic(source, mini_corpus.read_bytes())
    out = f"{s3_server}/runs/one"
    cfg = build_config(
        {"input": {"paths": [f"{s3_server}/input/"], "id_field": "id"}, "output": {"path": out}},
        {"output.shard_tokens": 5_000, "pack.seq_len": 256},
    )
    manifest = Pipeline(cfg, log=lambda _: None).run()
    assert manifest["documents_in"] == len(mini_corpus.read_text().splitlines())
    stored = json.loads(storage.read_bytes(f"{out}/manifest.json"))
    assert stored["shards"] == manifest["shards"]
    opened = shards.open(out)
    assert sum(len(list(s.documents())) for s in opened) == manifest["documents_out"]
    assert sum(s.n_valid for s in opened) == manifest["tokens"]
    # A trainer reads it back straight from the bucket.
    loader = Loader(out, batch_size=4, seed=1)
    batches = list(loader)
    assert sum(len(b["input_ids"]) for b in batches) == manifest["sequences"]
    assert all(b["input_ids"].shape[1] == 256 for b in batches)
    assert storage.exists(f"{out}/rejects/")
    assert not any("secret" in json.dumps(v) for v in manifest.values())
