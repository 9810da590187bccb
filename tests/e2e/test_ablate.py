"""`raypipe ablate` as a user runs it: variants built, models trained, report, resume."""

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import raypipe, write_config

pytestmark = [pytest.mark.ray, pytest.mark.slow]
FIXTURES = Path(__file__).parents[1] / "fixtures"
SAMPLE = Path(__file__).parents[2] / "examples" / "sample"


def test_ablate_compares_variants_and_resumes(tmp_path):
    config = write_config(tmp_path, FIXTURES / "mini.jsonl", pii={"enabled": False})
    out = tmp_path / "ablation"
    args = [
        "ablate", str(config), "--heldout", str(SAMPLE / "gutenberg.jsonl.zst"),
        "--out", str(out), "--variants", "raw,recipe", "--seeds", "2", "--tokens", "8192",
        "--vocab-size", "512", "--seq-len", "64", "--model", "d_model=32", "--model", "heads=2",
    ]  # fmt: skip
    first = raypipe(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "training 4 model(s)" in first.stderr
    result = json.loads((out / "ablation.json").read_text())
    raw, recipe = result["variants"]["raw"], result["variants"]["recipe"]
    assert raw["documents_out"] > recipe["documents_out"]  # the recipe rejects documents
    assert raw["documents_in"] == recipe["documents_in"]
    for row in (raw, recipe):
        assert len(row["per_seed"]) == 2 and 0 < row["bits_per_byte"] < 20
        assert row["per_seed"][0] != row["per_seed"][1]  # the seeds train different models
    assert recipe["vs_raw"]["gap"] == pytest.approx(recipe["bits_per_byte"] - raw["bits_per_byte"])
    assert f"{raw['bits_per_byte']:.4f}" in first.stdout
    page = (out / "report.html").read_text()
    assert 'aria-label="training loss"' in page and "recipe" in page
    assert (out / "models" / "recipe-seed1" / "config.json").exists()

    again = raypipe(*args)  # everything is committed: nothing is built or trained again
    assert again.returncode == 0, again.stderr[-3000:]
    assert "training" not in again.stderr and "already committed" in again.stderr
    assert json.loads((out / "ablation.json").read_text())["variants"] == result["variants"]

    model = out / "models" / "recipe-seed0"
    record = json.loads((model / "record.json").read_text())
    rescored = raypipe("ablate", "--evaluate", str(model), "--heldout", args[3], "--seq-len", "64")
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert rescored.stdout.startswith(f"{record['bits_per_byte']:.4f} bits per byte")
    on_shards = raypipe(
        "ablate", "--evaluate", str(model), "--heldout", str(out / "variants" / "raw")
    )
    assert on_shards.returncode == 0, on_shards.stderr[-3000:]
    assert 0 < float(on_shards.stdout.split()[0]) < 20

    bad = raypipe(*args[:-4], "--model", "heads=3")
    assert bad.returncode != 0 and "must divide" in bad.stderr and "Traceback" not in bad.stderr
