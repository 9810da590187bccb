"""report.html from a manifest and report: every chart drawn from the run's own counts."""

import re

import numpy as np
import pyarrow as pa

from raypipe.accounting import length_bins
from raypipe.report.html import language_rows, render

MANIFEST = {
    "fingerprint": "0123456789abcdef0123",
    "files": 2,
    "documents_in": 10,
    "documents_out": 6,
    "rejected": {"heuristic:min_words": 3, "exact_duplicate": 1},
    "rejected_by_stage": {"quality": 3, "dedup": 1},
    "sources": {"web": {"documents_cleaned": 7}},
}


def test_length_bins_are_powers_of_two():
    bins = length_bins(np.array([1, 2, 3, 4, 1000, 1023, 1024]))
    assert bins[0] == 1 and bins[1] == 2 and bins[2] == 1 and bins[9] == 2 and bins[10] == 1
    assert sum(bins) == 7


def test_funnel_rejects_and_lengths_come_from_the_counts():
    report = {
        "languages": {"en": 5, "de": 1},
        "masked": {"email_address": 2},
        "length_bins": length_bins(np.array([100, 200, 5000, 5000, 6000, 7000])),
    }
    page = render(MANIFEST, report)
    titles = re.findall(r'aria-label="([^"]+)"', page)
    assert titles == [
        "Documents remaining after each stage",
        "Rejected documents by reason",
        "Kept documents by length",
        "Kept documents by language",
        "Masked spans by entity",
        "Documents kept after cleaning, per source",
    ]
    funnel = re.findall(r"<title>([^<]+)</title>", page)
    assert funnel[1:4] == ["read: 10", "after quality: 7", "after dedup: 6"]
    assert "heuristic:min_words: 3" in funnel and "en: 5" in funnel
    assert "email_address: 2" in funnel
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_labels_are_escaped():
    manifest = {**MANIFEST, "rejected": {"<b>x</b>": 1}}
    page = render(manifest, {"languages": {}, "length_bins": [0] * 32})
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_packing_figures_only_for_packed_output():
    tokens = {"tokens": 900, "sequences": 3, "chars_per_token": 4.0, "vocab_utilization": 0.1}
    tokens["doc_words"] = {"min": 10, "mean": 150.0, "max": 300}
    base = {"languages": {}, "length_bins": [0] * 32, **tokens}
    packed = render(MANIFEST, {**base, "sequence_utilization": 0.9375, "split_documents": 2})
    assert "<td>sequence utilization</td><td>0.9375</td>" in packed
    assert "<td>split documents</td><td>2</td>" in packed
    megatron = render(MANIFEST, {**base, "sequence_utilization": None, "split_documents": None})
    assert "<td>sequences</td><td>3</td>" in megatron
    assert "utilization</td>" not in megatron and "split documents" not in megatron


def test_rejects_are_counted_per_language_and_shown_beside_the_kept():
    from raypipe.accounting import tally_block
    from raypipe.batch import reject, set_column
    from tests.batches import document_batch

    batch = document_batch(["a", "b", "c", "d", "e"], languages=["en", "en", "zu", "und", None])
    batch = set_column(batch, "chars", pa.array([1] * 5, pa.int64()))
    batch = reject(batch, np.array([0, 1, 1, 0, 1], bool), "quality", "heuristic:min_words")
    tally = tally_block(batch)
    # the document without a language was rejected before language ID saw it
    assert tally["rejected_by_language"] == {
        "en": {"heuristic:min_words": 1},
        "zu": {"heuristic:min_words": 1},
    }
    assert tally["languages"] == {"en": 1, "und": 1}
    rows = language_rows(tally["languages"], tally["rejected_by_language"])
    assert rows == [
        ("en", "kept 1, rejected 1 (heuristic:min_words 1)"),
        ("und", "kept 1, rejected 0"),
        ("zu", "kept 0, rejected 1 (heuristic:min_words 1)"),
    ]
    page = render(
        MANIFEST,
        {
            "languages": tally["languages"],
            "length_bins": [0] * 32,
            "rejected_by_language": tally["rejected_by_language"],
        },
    )
    assert "kept 0, rejected 1 (heuristic:min_words 1)" in page
