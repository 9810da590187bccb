"""The `raypipe` command as a user runs it."""

import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RAYPIPE = [str(Path(sys.executable).with_name("raypipe"))]
RAY_NOISE = r"\t(WARNING|ERROR) | [WE] \d+ \d+\] "


def raypipe(*args, cwd=None):
    env = {**os.environ, "RAY_ADDRESS": ""}
    return subprocess.run(
        [*RAYPIPE, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


def assert_renders_in_chromium(page: Path, tmp_path: Path, manifest: dict) -> None:
    """Headless Chromium parses the report offline and lays out every chart."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    screenshot = tmp_path / "report.png"
    headless = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,3000"]
    shown = subprocess.run(
        [*headless, f"--screenshot={screenshot}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    dom = shown.stdout
    charts = re.findall(r'<svg role="img" aria-label="([^"]+)"', dom)
    assert {
        "Documents remaining after each stage",
        "Rejected documents by reason",
        "Kept documents by length",
        "Most frequent tokens",
    } <= set(charts), charts
    assert dom.count('class="bar"') >= len(manifest["rejected"]) + 3
    assert screenshot.stat().st_size > 10_000


def write_config(tmp_path, corpus, **extra):
    config = {
        "input": {"paths": [str(corpus)], "id_field": "id"},
        "output": {"path": str(tmp_path / "out"), "shard_tokens": 5000},
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


@pytest.mark.ray
def test_run_prints_summary_and_paths(tmp_path, mini_corpus):
    done = raypipe(
        "run",
        str(write_config(tmp_path, mini_corpus)),
        "--set",
        "pack.seq_len=512",
        "--set",
        "ray.num_cpus=2",
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert f"manifest: {out}/manifest.json" in done.stdout
    assert f"shards:   {out}/shards/" in done.stdout
    assert "documents in" in done.stderr and "exact_duplicate" in done.stderr
    assert "  tokenize" in done.stderr and "  pack" in done.stderr  # each step's time
    assert "Parquet dataset sampling" not in done.stderr  # a bar per checkpoint read
    # Without a terminal each phase ends with one line of what it did (and logs one a minute).
    assert re.search(r"\nread and clean: \d+ documents, [\d.]+/[\d.]+ MB, ", done.stderr)
    # No Ray warning or error line in a normal run (Python logging's and the core's glog form)
    noise = [line for line in done.stderr.splitlines() if re.search(RAY_NOISE, line)]
    assert not noise, noise
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seq_len"] == 512
    assert f"report:   {out}/report.html" in done.stdout
    assert_renders_in_chromium(out / "report.html", tmp_path, manifest)
    again = raypipe("run", str(write_config(tmp_path, mini_corpus)), "--set", "pack.seq_len=512")
    assert again.returncode == 0 and "already committed" in again.stderr


def test_bad_config_is_one_clear_line(tmp_path, mini_corpus):
    config = write_config(tmp_path, mini_corpus, pack={"seq_len": -1, "strategy_x": 1})
    done = raypipe("run", str(config))
    assert done.returncode == 2
    assert "pack.seq_len: Input should be greater than or equal to 8" in done.stderr
    assert "pack.strategy_x: unknown key" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_input_is_one_clear_line(tmp_path):
    config = tmp_path / "job.yaml"
    config.write_text("input: {paths: [/nonexistent/*.jsonl]}\n")
    done = raypipe("run", str(config))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr


def test_preview_shows_each_stage(tmp_path, mini_corpus):
    done = raypipe("preview", str(write_config(tmp_path, mini_corpus)), "-n", "2")
    assert done.returncode == 0, done.stderr
    for stage in ("after read", "after normalize", "after quality"):
        assert stage in done.stdout


def test_unreachable_storage_is_one_clear_line_and_quick(tmp_path):
    config = tmp_path / "job.yaml"
    config.write_text(
        "input: {paths: [s3://nobucket/x.jsonl]}\nstorage: {endpoint: 'http://127.0.0.1:9'}\n"
    )
    done = raypipe("run", str(config))
    assert done.returncode == 1
    assert "cannot reach s3://nobucket/x.jsonl" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_tokenizer_that_cannot_load_fails_before_any_work(tmp_path, mini_corpus):
    config = write_config(tmp_path, mini_corpus, tokenizer=str(tmp_path / "missing.json"))
    done = raypipe("run", str(config))
    assert done.returncode == 1
    assert "tokenizer: cannot load" in done.stderr
    assert "1/3" not in done.stderr  # no phase started
    assert "Traceback" not in done.stderr


def test_a_cluster_address_nobody_answers_is_one_clear_line_and_quick(tmp_path, mini_corpus):
    config = write_config(tmp_path, mini_corpus, ray={"address": "127.0.0.1:9"})
    done = raypipe("run", str(config))
    assert done.returncode == 1
    assert "ray.address: nothing answers at 127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.ray
def test_a_named_recipe_runs_a_crawl_end_to_end(tmp_path):
    crawl = Path(__file__).parents[1] / "fixtures" / "web" / "pages.warc.gz"
    config = write_config(tmp_path, crawl, input={"paths": [str(crawl)]})
    options = ("--set", "ray.num_cpus=2", "--set", "output.keep_work=false")
    done = raypipe("run", str(config), "--recipe", "fineweb", *options)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (tmp_path / "out" / "_work").exists()  # removed once committed
    again = raypipe("run", str(config), "--recipe", "fineweb", *options)
    assert again.returncode == 0 and "already committed" in again.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["recipe"] == "fineweb"
    assert manifest["config"]["quality"]["fineweb"]["edition"] == "fineweb"
    assert manifest["config"]["dedup"]["near"]["enabled"]
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    shown = raypipe("options", "--recipe", "fineweb")
    assert shown.returncode == 0
    assert '| `langid.languages` | **`["en"]`** [code] |' in shown.stdout
    default = raypipe("options").stdout  # the default recipe, resolved
    assert default.startswith("Recipe `production`") and "| `pii.enabled` | **`true`**" in default
    bare = raypipe("options", "--recipe", "none").stdout
    assert "| `pii.enabled` | `false` |" in bare and "Recipe" not in bare
    wrong = raypipe("run", str(config), "--recipe", "finweb")
    assert wrong.returncode == 2 and "unknown recipe 'finweb'" in wrong.stderr
    assert "Traceback" not in wrong.stderr


@pytest.mark.ray
def test_the_demo_on_a_terminal_shows_live_phase_progress_and_no_ray_logs(tmp_path):
    """What a user sees running the quick start in a terminal."""
    parent, child = pty.openpty()
    out = tmp_path / "demo"
    run = subprocess.Popen(
        [*RAYPIPE, "run", "examples/demo.yaml", "--set", f"output.path={out}"],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=Path(__file__).parents[2],
        env={**os.environ, "RAY_ADDRESS": "", "COLUMNS": "120"},
    )
    os.close(child)
    seen = b""
    while chunk := _read(parent):
        seen += chunk
    assert run.wait(timeout=600) == 0, seen.decode()[-3000:]
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode())
    lines = [line.strip() for line in re.split(r"[\r\n]+", screen) if line.strip()]
    phases = [line for line in lines if line.startswith("phase ")]
    assert phases == [
        "phase 1/3 read and clean",
        "phase 2/3 deduplicate",
        "phase 2/3 near duplicates",
        "phase 3/3 tokenize",
        "phase 3/3 scatter copies to shards",
        "phase 3/3 pack and write shards",
    ]
    redrawn = {line for line in lines if line.startswith("read and clean: ")}
    assert len(redrawn) >= 3, redrawn  # the line changed as the phase went on
    assert re.search(
        r"read and clean: 514 documents, 0\.9/0\.9 MB, [\d,]+ docs/s, \d+ rejected", screen
    )
    assert "pack: 2/2 shards" in lines
    assert not [line for line in lines if re.search(r"\b(INFO|WARNING|ERROR)\b", line)], lines
    assert f"shards:   {out}/shards/" in lines and "documents in" in screen


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the child closed the terminal
        return b""


@pytest.mark.ray
def test_ctrl_c_ends_a_run_within_seconds_in_one_line_and_the_rerun_completes(
    tmp_path, mini_corpus
):
    config = str(write_config(tmp_path, mini_corpus))
    run = subprocess.Popen(
        [*RAYPIPE, "run", config, "--set", "pack.seq_len=512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RAY_ADDRESS": ""},
        # A background child would inherit an ignored SIGINT; a terminal's Ctrl-C is not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert run.stderr.readline().startswith("phase 1/3")  # work under way
    run.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = run.communicate(timeout=60)
    assert time.monotonic() - sent < 5
    assert run.returncode == 130
    assert err.strip().splitlines()[-1] == (
        "interrupted: the same command resumes from the last committed phase"
    )
    assert "Traceback" not in err
    again = raypipe("run", config, "--set", "pack.seq_len=512")
    assert again.returncode == 0, again.stderr[-2000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
