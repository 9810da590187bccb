"""Tallies read into fields: every document counted in phase 1, every token in phase 3."""

import json

import numpy as np
import pyarrow as pa

from raypipe import mix
from raypipe.accounting import (
    LENGTH_BINS,
    CleanTally,
    SourceTally,
    merge_tallies,
    tally_block,
    tokens_by_source,
)
from raypipe.batch import reject, set_column
from raypipe.config import build_config
from raypipe.phases import token_tally
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


def test_token_tallies_of_parts_merge_into_typed_sources_the_mixture_plans_on():
    def part(source: str, lengths: list[int], first_uid: int) -> str:
        batch = pa.table(
            {
                "uid": pa.array(range(first_uid, first_uid + len(lengths)), pa.uint64()),
                "source": [source] * len(lengths),
                "n_tokens": pa.array(lengths, pa.int64()),
                "chars": pa.array([4 * n for n in lengths], pa.int64()),
            }
        )
        return json.dumps(token_tally(batch, seed=7))

    merged = merge_tallies([part("web", [3, 5], 0), part("books", [10], 2), part("web", [2], 3)])
    sources = tokens_by_source(merged)
    web = sources["web"]
    assert (web.documents, web.tokens, web.chars) == (3, 10, 40)
    assert sum(web.token_bins) == web.tokens and sum(web.doc_bins) == web.documents
    assert sources["books"].tokens == 10 and tokens_by_source({}) == {}
    cfg = build_config(
        {
            "sources": [
                {"name": "web", "paths": ["x"]},
                {"name": "books", "paths": ["y"], "share": 0.75},
            ]
        }
    )
    # books hold as many tokens as web but are asked for three quarters: three epochs
    assert mix.plan(sources, mix.sources(cfg)) == {"books": (3.0, 0)}
