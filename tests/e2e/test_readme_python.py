"""The README's Python snippets, run as written (in a folder where `examples/` is the
project's and `out/demo` is their own)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.ray
# What a snippet takes from its surroundings: a trainer's rank and world size.
GIVEN = {"Loader(": "rank, world_size = 0, 1\n"}


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_python_snippets_run_in_order(tmp_path):
    blocks = python_blocks()
    assert len(blocks) >= 3 and "Pipeline.from_yaml" in blocks[0]
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for block in blocks:
        given = "".join(text for marker, text in GIVEN.items() if marker in block)
        done = subprocess.run(
            [sys.executable, "-c", given + block],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
        )
        assert done.returncode == 0, (block, done.stderr[-3000:])
    assert (tmp_path / "out" / "demo" / "manifest.json").exists()
