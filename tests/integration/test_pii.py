"""The pii stage inside a real run: masked text out, per-entity counts in the manifest."""

import re

import pyarrow.parquet as pq
import pytest

from raypipe.config import build_config
from raypipe.pii.detect import OfflineEmailRecognizer
from raypipe.pipeline import Pipeline

pytestmark = pytest.mark.ray

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def test_run_masks_and_counts(local_ray, mini_corpus, tmp_path):
    cfg = build_config(
        {
            "input": {"paths": [str(mini_corpus)], "id_field": "id"},
            "output": {"path": str(tmp_path)},
        },
        {"tokenizer": None, "pii.enabled": True, "quality.enabled": False},
    )
    manifest = Pipeline(cfg, log=lambda _: None).run()
    docs = pq.read_table(tmp_path / "documents")
    texts = docs["text"].to_pylist()
    tags = sum(text.count("<EMAIL_ADDRESS>") for text in texts)
    # the sample's mails carry addresses: all masked, each counted once
    assert tags > 0
    assert manifest["masked"]["email_address"] == tags
    assert sum(docs["pii_email_address"].to_pylist()) == tags
    # Whatever still looks like an address is allowed (example domains) or is not one for
    # Presidio's own recognizer either (e.g. `Online#3.1@host` in a mail header).
    reference = OfflineEmailRecognizer()
    allowed = ("example.com", "example.org", "example.net")
    for text in texts:
        if any(not m.endswith(allowed) for m in EMAIL.findall(text)):
            found = reference.analyze(text, ["EMAIL_ADDRESS"])
            assert all(text[r.start : r.end].endswith(allowed) for r in found), found
