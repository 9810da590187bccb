"""The benchmark harness: every case gets a section, a failing one included."""

import json
import time
from pathlib import Path

import pytest
import zstandard

from bench.__main__ import Layout, discover, main, run, slower_lines, write_benchmarks
from bench.cases.scaling import findings
from bench.common import ratio, run_script
from bench.profile import top_lines
from bench.runs import FILES, write_slice

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
    summary = text[text.index("## Where raypipe is slower") : text.index("## a_broken")]
    assert "- a_broken: **This case failed (exit status 1)" in summary
    assert "Good case" not in summary


def test_the_summary_lists_every_line_that_says_raypipe_is_slower():
    sections = [
        "## Tokenize\n\n| a | b |\n- raypipe runs at **0.80x**: **raypipe is slower here**.",
        "## Dedup\n\nraypipe runs at 3.00x.",
        "## Web\n\n**raypipe's extract stage is slower here**: 2 pages/s against 3.",
    ]
    assert slower_lines(sections) == [
        "- Tokenize: raypipe runs at **0.80x**: **raypipe is slower here**.",
        "- Web: **raypipe's extract stage is slower here**: 2 pages/s against 3.",
    ]
    assert slower_lines(sections[1:2]) == [
        "- Nowhere: raypipe is at least as fast as every peer below."
    ]


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


def test_profile_lines_leave_out_waiting_processes():
    raw = "\n".join(
        [
            'process 1:"python x.py";<module> (x.py:9);Tokenize.__call__ (raypipe/stages/tokenize.py:37) 6',
            'process 1:"python x.py";<module> (x.py:9);Tokenize.__call__ (raypipe/stages/tokenize.py:40) 2',
            'process 2:"ray worker";main_loop (ray/_private/worker.py:10);'
            "Worker.main_loop (ray/_private/worker.py:900) 50",
            'process 1:"python x.py";<module> (x.py:9) 2',
        ]
    )
    rows = top_lines(raw)
    assert rows[0] == ("Tokenize.__call__ (stages/tokenize.py:37)", 0.6, 0.8)
    assert rows[1] == ("Tokenize.__call__ (stages/tokenize.py:40)", 0.2, 0.8)
    assert rows[2] == ("<module> (x.py:9)", 0.2, 1.0)
    assert len(rows) == 3  # the idle worker's 50 samples are not in the shares


def test_slice_deals_documents_into_files(tmp_path):
    rows = [{"id": str(i), "text": "x" * 100} for i in range(40)]
    source = tmp_path / "corpus.jsonl.zst"
    source.write_bytes(zstandard.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))

    corpus = write_slice(source, skip_bytes=500, limit_bytes=2_000, folder=tmp_path / "slice")

    assert corpus == {"documents": 20, "mb": 0.002}
    files = sorted((tmp_path / "slice").glob("*.jsonl.zst"))
    assert len(files) == FILES
    ids = sorted(
        int(json.loads(line)["id"])
        for f in files
        for line in zstandard.decompress(f.read_bytes()).decode().splitlines()
    )
    assert ids == list(range(5, 25))


LEAVES_A_PROCESS = """
import subprocess, sys
from pathlib import Path

def run(quick: bool) -> str:
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    Path(__file__).with_name("pid").write_text(str(server.pid))
    return "## Leaves a process"
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # killed, waiting to be reaped


def test_what_a_case_leaves_running_is_ended_with_it(tmp_path):
    layout = _layout(tmp_path)
    (layout.cases / "c_leaves.py").write_text(LEAVES_A_PROCESS)

    assert run(["c_leaves"], quick=True, command="python -m bench run", layout=layout)

    pid = int((layout.cases / "pid").read_text())
    deadline = time.time() + 10
    while not _gone(pid) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone(pid)


def test_a_script_over_its_time_limit_is_ended_with_its_children(tmp_path):
    pid_file = tmp_path / "pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(300)\n"
    )
    with pytest.raises(TimeoutError, match="did not finish in 3 s"):
        run_script(script, {}, timeout=3)
    pid = int(pid_file.read_text())
    deadline = time.time() + 10
    while not _gone(pid) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone(pid)
    assert run_script("import json; print(json.dumps({'cores': 1}))", {}, cpus=1) == {"cores": 1}


def test_scaling_findings_flag_a_driver_that_grows_and_a_stuck_configuration():
    results = {(1, 2): (2.0, 400.0), (16, 2): (3.0, 900.0)}
    stalled = {1: "1 CPU(s) did not finish 1x (0.3 MB) in 900 s"}

    lines = findings(results, stalled, (1, 4, 16))

    assert lines[0].startswith("- **1 CPU(s) did not finish 1x")
    assert "2.25x** — **it grows with the input**" in lines[1]
    assert len(lines) == 2  # no 1-vs-2 CPU speedup without a 1-CPU result
    flat = findings({(1, 2): (2.0, 400.0), (16, 2): (3.0, 420.0)}, {}, (1, 16))
    assert flat == [
        "- Driver peak RSS on 2 CPU(s), 16x over 1x input: **1.05x** — flat: the driver does not hold the corpus."
    ]


def test_ratios_far_below_one_keep_two_significant_digits():
    assert [ratio(x) for x in (3.456, 0.1, 0.0027)] == ["3.46x", "0.10x", "0.0027x"]
