"""`raypipe sft clean --ray` on a local Ray: the same verdicts as the in-process run, and a
driver that streams."""

import json
import threading
from pathlib import Path

import numpy as np
import psutil
import pytest
from typer.testing import CliRunner

from raypipe.cli import app
from raypipe.sft import job
from raypipe.sft.config import SftConfig

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sft"


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


@pytest.mark.ray
@pytest.mark.slow
def test_the_ray_job_driver_holds_no_text_of_a_large_set(tmp_path, local_ray):
    """~80 MB of examples: workers read and judge byte ranges; the driver's own memory
    (USS: shared object-store pages excluded) grows by a small fraction of the file."""
    source = tmp_path / "large.jsonl"
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    with source.open("w") as out:
        for i in range(8_000):
            answer = " ".join(vocab[rng.integers(0, len(vocab), 1_500)])
            out.write(json.dumps({"instruction": f"Explain topic {i}.", "output": answer}) + "\n")
    size = source.stat().st_size
    driver = psutil.Process()
    base = peak = driver.memory_full_info().uss
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, driver.memory_full_info().uss)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = job.run(source, tmp_path / "kept.jsonl", SftConfig())
    finally:
        done.set()
        sampler.join()
    assert result == {"examples": 8_000, "kept": 8_000, "rejected": {}}
    assert (tmp_path / "kept.jsonl").stat().st_size == size
    # Holding the text (as the first version did, in Python strings) is >2x the file; the
    # keys and signatures are ~5% of it, the rest is Ray's own fixed overhead.
    assert peak - base < 0.5 * size, f"driver grew {(peak - base) / 1e6:.0f} MB"


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
