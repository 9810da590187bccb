"""`raypipe sft clean --ray` on a local Ray: the same verdicts as the in-process run, and a
driver that streams."""

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from typer.testing import CliRunner

from raypipe.cli import app
from raypipe.sft import job
from raypipe.sft.config import SftConfig

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sft"
RAYPIPE = str(Path(sys.executable).with_name("raypipe"))


@pytest.mark.ray
@pytest.mark.slow
def test_ray_job_matches_the_in_process_clean(tmp_path, local_ray):
    runner = CliRunner()
    source = FIXTURES / "instruction.jsonl"
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert runner.invoke(app, ["sft", "clean", str(source), "-o", str(local)]).exit_code == 0
    result = runner.invoke(app, ["sft", "clean", str(source), "-o", str(on_ray), "--ray"])
    assert result.exit_code == 0, result.output
    assert on_ray.read_text() == local.read_text()
    assert (tmp_path / "ray.rejects.jsonl").read_text() == (
        tmp_path / "local.rejects.jsonl"
    ).read_text()
    report = json.loads((tmp_path / "ray.report.json").read_text())
    expected = json.loads((tmp_path / "local.report.json").read_text())
    assert {k: report[k] for k in ("examples", "kept", "rejected")} == {
        k: expected[k] for k in ("examples", "kept", "rejected")
    }


def _instruction_set(path: Path, examples: int) -> int:
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    with path.open("w") as out:
        for i in range(examples):
            answer = " ".join(vocab[rng.integers(0, len(vocab), 1_500)])
            out.write(json.dumps({"instruction": f"Explain topic {i}.", "output": answer}) + "\n")
    return path.stat().st_size


def _driver_peak(source: Path, out: Path) -> int:
    """Peak USS (own memory: shared object-store pages excluded) of `raypipe sft clean
    --ray`, the driver, sampled while it runs."""
    run = subprocess.Popen(
        [RAYPIPE, "sft", "clean", str(source), "-o", str(out), "--ray"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "RAY_ADDRESS": ""},
    )
    driver, peak = psutil.Process(run.pid), 0
    while run.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, driver.memory_full_info().uss)
        time.sleep(0.05)
    assert run.returncode == 0, run.stderr.read().decode()[-2000:]
    return peak


@pytest.mark.ray
@pytest.mark.slow
def test_the_ray_job_driver_holds_no_text_of_a_large_set(tmp_path):
    """Workers read and judge byte ranges: from 0.4 MB to 78 MB of examples, the driver's
    peak grows by a small fraction of the file."""
    small = _instruction_set(tmp_path / "small.jsonl", 40)
    large = _instruction_set(tmp_path / "large.jsonl", 8_000)
    grew = _driver_peak(tmp_path / "large.jsonl", tmp_path / "l.jsonl") - _driver_peak(
        tmp_path / "small.jsonl", tmp_path / "s.jsonl"
    )
    assert (tmp_path / "l.jsonl").stat().st_size == large
    # Holding the text (as reading the file on the driver did) is >2x the file; the keys
    # and signatures are ~5% of it, the rest is the noise of sampled peaks (10-92 MB).
    assert grew < 1.5 * (large - small), f"driver grew {grew / 1e6:.0f} MB"


@pytest.mark.ray
def test_a_set_the_rules_reject_entirely_ends_with_every_example_rejected(tmp_path, local_ray):
    source = tmp_path / "short.jsonl"
    source.write_text(
        "".join(
            json.dumps({"instruction": f"Q{i}?", "output": "Too short."}) + "\n" for i in range(3)
        )
    )
    result = job.run(source, tmp_path / "kept.jsonl", SftConfig())
    assert result == {"examples": 3, "kept": 0, "rejected": {"answer_words:too_short": 3}}
