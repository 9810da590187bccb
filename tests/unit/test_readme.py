"""The README's reference table is the config model's, option for option."""

import re
from pathlib import Path

from raypipe.config import reference_table

README = Path(__file__).parents[2] / "README.md"
SECTION = re.compile(r"<!-- reference:start -->\n(.*?)\n<!-- reference:end -->", re.S)


def test_reference_table_is_current():
    match = SECTION.search(README.read_text())
    assert match, "README lacks the reference markers"
    assert match.group(1) == reference_table(), (
        "README reference table is stale: run `python scripts/update_readme.py`"
    )


def test_no_merge_conflict_markers_in_the_docs():
    docs = [README, *README.parent.glob("docs/*.md"), README.parent / "BENCHMARKS.md"]
    for doc in docs:
        marked = [
            line
            for line in doc.read_text().splitlines()
            if line.startswith(("<<<<<<< ", ">>>>>>> "))
        ]
        assert not marked, f"{doc.name} holds merge conflict markers: {marked}"


def test_ablate_options_are_documented_and_each_is_a_flag():
    from raypipe.ablate.options import AblationConfig
    from raypipe.ablate.options import reference_table as ablate_table
    from raypipe.cli import ablate

    doc = (README.parent / "docs" / "ablate.md").read_text()
    table = re.search(
        r"<!-- ablate-reference:start -->\n(.*?)\n<!-- ablate-reference:end -->", doc, re.S
    )
    assert table and table.group(1) == ablate_table(), "run `python scripts/update_readme.py`"
    flags = set(ablate.__annotations__)
    assert set(AblationConfig.model_fields) <= flags, set(AblationConfig.model_fields) - flags
