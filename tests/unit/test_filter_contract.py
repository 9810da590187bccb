"""The filter contract: the framework's bookkeeping, language scope, corrections, scores,
and a user filter placed from the config alone."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from raypipe.accounting import tally_block
from raypipe.batch import alive, reject
from raypipe.config import ConfigError, build_config
from raypipe.pipeline import Pipeline, document_stages
from raypipe.stages.filter import Docs, Filter, FilterStage
from raypipe.stages.plan import pool_of, pools
from tests.batches import document_batch


def batch(texts, languages=None):
    return document_batch(texts, languages=languages)


EXAMPLE = Path(__file__).parents[2] / "examples" / "filters" / "no_tables.py"
TABLE = "\n".join(f"| {i} | {i * i} |" for i in range(10))


class Short(Filter):
    name = "short"

    def reasons(self, docs: Docs) -> list[str | None]:
        return ["short:chars" if len(t) < 10 else None for t in docs.texts]


class Upper(Filter):
    """Corrects every text it sees and scores it; rejects nothing."""

    name = "upper"
    scores = ("length",)

    def reasons(self, docs: Docs) -> list[str | None]:
        for i, text in enumerate(docs.texts):
            docs.correct(i, text.upper())
            docs.score("length", i, len(text))
        return [None] * len(docs)


class Seen(Filter):
    name = "seen"

    def __init__(self, languages=()):
        self.languages, self.texts = languages, []

    def reasons(self, docs: Docs) -> list[str | None]:
        self.texts.extend(docs.texts)
        return ["seen:it"] * len(docs)


def test_first_filter_to_fail_names_the_reason_and_later_ones_see_only_survivors():
    seen = Seen()
    out = FilterStage("mine", [Short(), seen])(batch(["tiny", "long enough text"]))
    assert out["reason"].to_pylist() == ["short:chars", "seen:it"]
    assert out["stage"].to_pylist() == ["mine", "mine"]
    assert out["text"].to_pylist() == ["", ""]
    assert seen.texts == ["long enough text"]


def test_languages_scope_a_filter_and_documents_without_one_see_it():
    seen = Seen(languages=["de"])
    out = FilterStage("mine", [seen])(batch(["a text", "ein Text", "???"], ["en", "de", None]))
    assert out["reason"].to_pylist() == [None, "seen:it", "seen:it"]
    assert seen.texts == ["ein Text", "???"]


def test_corrections_reach_later_filters_and_scores_become_a_column():
    seen = Seen()
    out = FilterStage("mine", [Short(), Upper(), seen])(batch(["tiny", "long enough text"]))
    assert seen.texts == ["LONG ENOUGH TEXT"]
    assert out["length"].to_pylist() == [None, 16.0]


def test_an_already_rejected_row_is_never_seen_again():
    first = FilterStage("one", [Short()])(batch(["tiny", "long enough text"]))
    seen = Seen()
    out = FilterStage("two", [seen])(first)
    assert seen.texts == ["long enough text"]
    assert out["stage"].to_pylist() == ["one", "two"]
    assert not alive(out).any()


def _config(**stage):
    spec = {"use": "examples.filters.no_tables:NoTables", **stage}
    return build_config({"input": {"paths": ["examples/sample"]}, "stages": [spec]})


def test_a_user_filter_is_placed_after_the_stage_it_names():
    names = [p.name for p in document_stages(_config(after="quality"))]
    at = names.index("examples.filters.no_tables:NoTables")
    assert names[at - 1] == "quality" and names[at + 1] == "pii"  # the default recipe masks
    names = [p.name for p in document_stages(_config(after="normalize"))]
    assert names.index("examples.filters.no_tables:NoTables") == names.index("normalize") + 1


def test_a_stage_with_resources_gets_a_pool_of_its_own():
    plan = document_stages(_config(after="langid", resources={"num_cpus": 0.5}))
    names = [p.name for p in plan]
    at = names.index("examples.filters.no_tables:NoTables")
    assert pool_of(plan)[at] == 1 and set(pool_of(plan)[:at]) == {0}
    assert pool_of(plan)[names.index("quality")] == 2  # the built-ins after it: a new pool
    assert pool_of(plan)[names.index("dedup_keys")] == 2  # key hashing rides in the last
    assert [pool for pool, _ in pools([plan])] == [0, 1, 2]
    assert pools([plan])[1][1].num_cpus == 0.5 and pools([plan])[2][1] is None


def test_key_stages_ride_in_a_last_resourced_pool():
    plan = document_stages(_config(after="pii", resources={"num_gpus": 1}))
    assert pool_of(plan)[-1] == 1  # dedup_keys with the user's stage, no pool of its own
    assert [pool for pool, _ in pools([plan])] == [0, 1]
    assert pools([plan])[1][1].num_gpus == 1


def test_the_example_filter_drops_tables_with_its_own_reason():
    stage = [p for p in document_stages(_config()) if p.user][0].build()
    out = stage(batch([TABLE, "A sentence of prose.\n| one | row |"]))
    assert out["reason"].to_pylist() == ["no_tables:table_lines", None]
    assert out["stage"].to_pylist() == ["no_tables", None]
    assert out["no_tables_table_lines"].to_pylist() == [10, 1]  # its declared counter


def test_declared_counters_reach_the_tally_and_every_batch_has_them():
    planned = [p for p in document_stages(_config()) if p.user][0]
    assert planned.counters == (("no_tables", "table_lines"),)
    stage = planned.build()
    out = stage(batch([TABLE, "prose"])).append_column("chars", pa.array([0, 0]))
    assert tally_block(out, planned.counters)["counters"] == {"no_tables": {"table_lines": 10}}
    empty = stage(reject(batch(["x"]), np.ones(1, bool), "quality", "x"))
    assert empty["no_tables_table_lines"].to_pylist() == [0]


def test_the_example_needs_no_edit_elsewhere():
    """The filter's module name appears nowhere in raypipe: one file plus config."""
    package = Path(__file__).parents[2] / "raypipe"
    assert EXAMPLE.exists()
    assert not [p for p in package.rglob("*.py") if "no_tables" in p.read_text()]


@pytest.mark.parametrize(
    "use, message",
    [
        ("nowhere.module:Thing", "cannot import 'nowhere.module'"),
        ("examples.filters.no_tables:Missing", "has no 'Missing'"),
        ("raypipe.stages.filter:Docs", "does not take these options"),
    ],
)
def test_a_wrong_stage_is_a_clear_error_before_any_work(use, message):
    with pytest.raises(ConfigError, match=message):
        preview = Pipeline(
            build_config(
                {
                    "input": {"paths": ["examples/sample"]},
                    "stages": [{"use": use, "options": {"x": 1}}],
                }
            )
        )
        preview.preview(1)
