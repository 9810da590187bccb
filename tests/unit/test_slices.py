"""Stages see batches in slices bounded by bytes of text, whatever the documents' length."""

import pyarrow as pa
import pyarrow.compute as pc

from raypipe import batch as batches


def test_slices_are_bounded_ordered_and_a_long_document_goes_alone(monkeypatch):
    monkeypatch.setattr(batches, "SLICE_BYTES", 10)
    table = pa.table({"uid": list(range(6)), "text": ["aaaa", "bbbb", "cc", "x" * 25, "d", ""]})
    seen = []

    def upper(part: pa.Table) -> pa.Table:
        seen.append(part["uid"].to_pylist())
        return part.set_column(1, "text", pc.utf8_upper(part["text"]))

    out = batches.in_slices(upper, table)
    assert seen == [[0, 1, 2], [3], [4, 5]]
    assert out["uid"].to_pylist() == list(range(6))
    assert out["text"].to_pylist() == ["AAAA", "BBBB", "CC", "X" * 25, "D", ""]


def test_html_counts_toward_the_bound_and_a_small_batch_is_one_call(monkeypatch):
    monkeypatch.setattr(batches, "SLICE_BYTES", 10)
    table = pa.table({"text": ["", ""], "html": [b"<p>" * 3, b"<p>" * 3]})
    calls = []
    batches.in_slices(lambda part: calls.append(part.num_rows) or part, table)
    assert calls == [1, 1]
    calls.clear()
    batches.in_slices(lambda part: calls.append(part.num_rows) or part, table.slice(0, 1))
    assert calls == [1]


def test_rebatch_cuts_parts_of_a_fixed_size_in_order_whatever_the_batches():
    pieces = [pa.table({"uid": list(range(a, b))}) for a, b in ((0, 3), (3, 4), (4, 11), (11, 11))]
    parts = list(batches.rebatch(iter(pieces), 4))
    assert [p["uid"].to_pylist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert list(batches.rebatch(iter([pa.table({"uid": []})]), 4)) == []
