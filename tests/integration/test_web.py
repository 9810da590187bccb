"""Web input through the whole plan on a real local Ray, next to a JSONL source."""

import shutil
from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from raypipe.config import build_config
from raypipe.pipeline import Pipeline

pytestmark = pytest.mark.ray
FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_warc_html_and_jsonl_in_one_run(local_ray, tmp_path):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    for name in ("pages.warc.gz", "truncated.warc", "page.html"):
        shutil.copy(FIXTURES / "web" / name, crawl / name)
    shutil.copy(FIXTURES / "mini.jsonl", crawl / "mini.jsonl")
    cfg = build_config(
        {
            "input": {"paths": [str(crawl)], "id_field": "id"},
            "output": {"path": str(tmp_path / "out")},
        },
        {"tokenizer": None, "quality.enabled": False, "langid.languages": ["en", "de", "fr"]},
    )
    manifest = Pipeline(cfg, log=lambda _: None).run()

    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    ledger = pq.read_table(tmp_path / "out" / "rejects")
    assert Counter(ledger["reason"].to_pylist()) == Counter(manifest["rejected"])
    assert manifest["rejected"]["warc_malformed_record"] == 2
    assert manifest["rejected"]["warc_truncated_record"] == 1
    # The truncated file repeats the first pages of the complete one.
    assert manifest["rejected"]["exact_duplicate"] >= 3

    documents = pq.read_table(tmp_path / "out" / "documents")
    assert "html" not in documents.column_names
    by_url = {row["url"]: row for row in documents.to_pylist() if row["url"]}
    tomatoes = by_url["https://garden.example/tomatoes"]
    assert tomatoes["language"] == "en" and tomatoes["language_score"] > 0.9
    assert tomatoes["title"] == "Growing tomatoes on a balcony"
    assert tomatoes["date"] == "2026-03-01T12:00:00+00:00"
    assert "direct sunlight" in tomatoes["text"] and "About us" not in tomatoes["text"]
    assert set(documents["language"].to_pylist()) == {"en", "de", "fr"}
    rejected_languages = ledger.filter(pc.equal(ledger["reason"], "language"))["id"].to_pylist()
    assert any(i.startswith("udhr:") for i in rejected_languages)  # Hindi, Thai, ... pages
