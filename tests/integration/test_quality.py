"""Quality filters inside a real run on local Ray: the same decisions as the stage makes
in-process, named reasons in the manifest and ledger, every document accounted for."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from raypipe.config import InputConfig, build_config
from raypipe.io.readers import read_file
from raypipe.pipeline import Pipeline, document_stages
from raypipe.quality.classifier import train
from raypipe.quality.perplexity import ByteLM

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_quality_filters_in_a_run(local_ray, mini_corpus, tmp_path):
    texts = [json.loads(line)["text"] for line in mini_corpus.read_text().splitlines()]
    model = tmp_path / "mini.lm"
    ByteLM.train(texts[::2], order=2).save(model)
    classifier = tmp_path / "mini.bin"  # drops what looks like mini's even half
    train(texts[1::2], texts[::2], classifier)
    cfg = build_config(
        {
            "recipe": None,  # only the rules named here
            "input": {"paths": [str(mini_corpus)], "id_field": "id"},
            "output": {"path": str(tmp_path / "out"), "format": "parquet"},
            "tokenizer": None,
            "quality": {
                "heuristic": {"enabled": False},
                "gopher_repetition": {"enabled": True},
                "gopher_quality": {"enabled": True},
                "c4": {"enabled": True},
                "fineweb": {"enabled": True},
                "perplexity": {"enabled": True, "model": str(model), "max_bits_per_byte": 4.5},
                "classifier": {"enabled": True, "model": str(classifier), "min_score": 0.5},
            },
        }
    )
    manifest = Pipeline(cfg, log=lambda _: None).run()

    expected = Counter()
    stages = [planned.build() for planned in document_stages(cfg)]
    for batch in read_file(str(mini_corpus), 0, InputConfig(id_field="id"), 64):
        for stage in stages:
            batch = stage(batch)
        expected.update(r for r in batch["reason"].to_pylist() if r)
    quality = {
        r: n for r, n in manifest["rejected"].items() if r.split(":")[0] != "exact_duplicate"
    }
    assert quality == {r: n for r, n in expected.items() if r.split(":")[0] != "exact_duplicate"}
    assert {r.split(":")[0] for r in quality} >= {"gopher_quality", "c4", "classifier"}
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    ledger = pq.read_table(tmp_path / "out" / "rejects")
    assert Counter(ledger["reason"].to_pylist()) == Counter(manifest["rejected"])


def test_a_percentile_cut_drops_the_worst_share_of_the_whole_run(local_ray, mini_corpus, tmp_path):
    texts = [json.loads(line)["text"] for line in mini_corpus.read_text().splitlines()]
    model = tmp_path / "mini.lm"
    ByteLM.train(texts[::2], order=2).save(model)
    options = {
        "recipe": None,
        "input": {"paths": [str(mini_corpus)], "id_field": "id"},
        "output": {"path": str(tmp_path / "out"), "format": "parquet"},
        "tokenizer": None,
        "dedup": {"exact": {"enabled": False}},
        "quality": {
            "heuristic": {"enabled": False},
            "perplexity": {"enabled": True, "model": str(model), "drop_worst": 0.2},
        },
    }
    cfg = build_config(options)
    manifest = Pipeline(cfg, log=lambda _: None).run()

    scores = {}  # what the stage scores in-process, document by document
    stages = [planned.build() for planned in document_stages(cfg)]
    for batch in read_file(str(mini_corpus), 0, InputConfig(id_field="id"), 64):
        for stage in stages:
            batch = stage(batch)
        for row in batch.select(["id", "bits_per_byte", "reason"]).to_pylist():
            if row["reason"] is None:
                scores[row["id"]] = row["bits_per_byte"]
    worst = sorted(scores, key=scores.get, reverse=True)[: int(0.2 * len(scores))]
    assert len(worst) == 9

    assert manifest["rejected"]["perplexity:drop_worst"] == len(worst)
    assert manifest["percentile_cuts"]["perplexity:drop_worst"] == {
        "scored": len(scores),
        "cut": pytest.approx(scores[worst[-1]], rel=1e-6),  # compared at float32
    }
    assert manifest["rejected_by_stage"]["quality"] == len(worst)
    assert manifest["documents_out"] == len(scores) - len(worst)
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    ledger = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    cut = [r for r in ledger if r["reason"] == "perplexity:drop_worst"]
    assert sorted(r["id"] for r in cut) == sorted(worst)
    assert {r["stage"] for r in cut} == {"quality"}
    written = pq.read_table(tmp_path / "out" / "documents")["id"].to_pylist()
    assert sorted(written) == sorted(set(scores) - set(worst))
