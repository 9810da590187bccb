"""A checkpoint is reused only for the inputs it was made of."""

import os

from raypipe import checkpoint
from raypipe.config import build_config
from raypipe.io import storage


def test_a_rewritten_input_of_the_same_size_is_a_new_cleaning_fingerprint(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "alpha"}\n')
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    cfg = build_config({"input": {"paths": [str(path)]}, "output": {"path": str(tmp_path / "o")}})
    before = checkpoint.fingerprints(cfg, storage.expand([str(path)]))
    assert checkpoint.fingerprints(cfg, storage.expand([str(path)])) == before  # stable
    path.write_text('{"text": "omega"}\n')  # same size, other text
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    [(_, size, modified)] = storage.expand([str(path)])
    assert (size, modified) == (18, 2_000_000_000)
    assert checkpoint.fingerprints(cfg, storage.expand([str(path)]))[0] != before[0]


def test_an_output_folder_inside_the_input_folder_is_not_read_back(tmp_path, monkeypatch):
    from raypipe.pipeline import Pipeline

    (tmp_path / "docs.jsonl").write_text('{"text": "alpha"}\n')
    (tmp_path / "out" / "documents").mkdir(parents=True)
    (tmp_path / "out" / "documents" / "part-0.jsonl").write_text('{"text": "alpha"}\n')
    (tmp_path / "outer.jsonl").write_text('{"text": "beta"}\n')  # a prefix, not inside
    monkeypatch.chdir(tmp_path)
    cfg = build_config({"input": {"paths": [str(tmp_path)]}, "output": {"path": "out"}})
    files = [f.uri for f in Pipeline(cfg).input_files()]
    assert files == [str(tmp_path / "docs.jsonl"), str(tmp_path / "outer.jsonl")]
