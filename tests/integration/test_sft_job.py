"""`raypipe sft clean --ray` on a local Ray gives the same verdicts as the in-process run."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raypipe.cli import app

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
