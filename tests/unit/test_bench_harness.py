"""The benchmark harness: every case gets a section, a failing one included."""

import json

import pytest
import zstandard

from bench.__main__ import Layout, discover, main, run, write_benchmarks

GOOD = """
def run(quick: bool) -> str:
    return "## Good case\\n\\n| system | x |\\n|---|---|\\n| raypipe | " + ("quick" if quick else "full") + " |"
"""
BROKEN = """
def run(quick: bool) -> str:
    raise ValueError("the input slice is empty")
"""


def _layout(tmp_path) -> Layout:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "__init__.py").write_text("")
    (cases / "a_broken.py").write_text(BROKEN)
    (cases / "b_good.py").write_text(GOOD)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    rows = "".join(json.dumps({"id": str(i), "text": "word " * 10}) + "\n" for i in range(3))
    (inputs / "tiny.jsonl.zst").write_bytes(zstandard.compress(rows.encode()))
    return Layout(
        cases=cases,
        results=tmp_path / "results",
        logs=tmp_path / "logs",
        benchmarks=tmp_path / "BENCHMARKS.md",
        inputs=inputs,
    )


def test_a_failing_case_reports_its_error_and_the_run_goes_on(tmp_path):
    layout = _layout(tmp_path)
    assert discover(layout.cases) == ["a_broken", "b_good"]

    assert not run(["a_broken", "b_good"], quick=True, command="python -m bench run", layout=layout)

    broken = layout.result("a_broken", quick=True).read_text()
    assert broken.startswith("## a_broken")
    assert "This case failed (exit status 1)" in broken
    assert "ValueError: the input slice is empty" in broken
    good = layout.result("b_good", quick=True).read_text()
    assert good.startswith("## Good case\n\n_Measured ")
    assert "quick run" in good and "| raypipe | quick |" in good

    text = layout.benchmarks.read_text()
    assert "## Machine" in text and "| cores |" in text and "| Ray |" in text
    assert "| `tiny.jsonl.zst` |" in text and "| 3 |" in text  # documents counted
    assert text.index("## a_broken") < text.index("## Good case")


def test_full_results_win_over_quick_ones(tmp_path):
    layout = _layout(tmp_path)
    run(["b_good"], quick=True, command="quick", layout=layout)
    run(["b_good"], quick=False, command="full", layout=layout)
    run(["b_good"], quick=True, command="quick again", layout=layout)

    text = write_benchmarks(["b_good"], "write", layout)
    assert "| raypipe | full |" in text and "| raypipe | quick |" not in text
    assert layout.result("b_good", quick=True).exists()


def test_unknown_case_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["run", "--only", "no_such_case"])
    assert exit.value.code == 2
    assert "no case named no_such_case" in capsys.readouterr().err
