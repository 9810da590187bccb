"""Phase 1's tally: block tallies merged and read into fields, every document counted."""

import json

import numpy as np
import pyarrow as pa

from raypipe.accounting import LENGTH_BINS, CleanTally, SourceTally, merge_tallies, tally_block
from raypipe.batch import reject, set_column
from tests.batches import document_batch


def block(texts: list[str], source: str, rejected: list[bool], first_uid: int) -> str:
    batch = document_batch(texts, first_uid, source, languages=["en"] * len(texts))
    batch = set_column(batch, "chars", pa.array([len(t) for t in texts], pa.int64()))
    return json.dumps(tally_block(reject(batch, np.array(rejected), "quality", "rule:x")))


def test_merged_blocks_read_as_one_typed_tally_that_adds_up():
    blocks = [
        block(["aa", "bbb", "c"], "web", [False, True, False], 0),
        block(["dddd", "ee"], "books", [True, False], 3),
        block(["f"], "web", [False], 5),
    ]
    tally = CleanTally.from_json(merge_tallies(blocks))
    assert tally.documents == 6 == tally.kept + sum(tally.rejected.values())
    assert tally.rejected == {"rule:x": 2} and tally.rejected_by_stage == {"quality": 2}
    assert tally.sources == {
        "web": SourceTally(documents=4, kept=3, kept_chars=4),
        "books": SourceTally(documents=2, kept=1, kept_chars=2),
    }
    assert tally.kept_chars == sum(s.kept_chars for s in tally.sources.values())
    assert tally.languages == {"en": 4} and sum(tally.length_bins) == tally.kept


def test_a_run_of_no_documents_has_an_empty_tally():
    tally = CleanTally.from_json(merge_tallies([]))
    assert tally.documents == tally.kept == 0 and tally.sources == {}
    assert tally.length_bins == [0] * LENGTH_BINS
