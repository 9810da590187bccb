"""The README's "Finding and removing documents" block, run as written on the demo's output:
each command's output is the comment below it (`...` stands for any text)."""

import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cli import RAYPIPE, raypipe

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.ray


def readme_block(heading: str) -> str:
    section = (ROOT / "README.md").read_text().split(f"### {heading}\n", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def expected(comment: str) -> re.Pattern:
    parts = [re.escape(part) for part in re.split(r"\.\.\.", comment)]
    return re.compile(r"\s+".join(".*".join(parts).split(r"\ \ ")))


def test_the_readme_locate_and_remove_commands_work_as_written(tmp_path):
    # The demo config, with its sample found from anywhere: the block runs in tmp_path.
    demo = (ROOT / "examples" / "demo.yaml").read_text()
    (tmp_path / "demo.yaml").write_text(
        demo.replace("examples/sample/", f"{ROOT}/examples/sample/")
    )
    done = raypipe("run", str(tmp_path / "demo.yaml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    steps: list[tuple[str, list[str]]] = []
    for line in readme_block("Finding and removing documents").splitlines():
        if line.startswith("# "):
            steps[-1][1].append(line[2:])
        else:
            steps.append((line.split("  #")[0].replace("raypipe ", f"{RAYPIPE[0]} ", 1), []))
    assert len(steps) == 4
    for command, outputs in steps:
        shown = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, timeout=300
        )
        assert shown.returncode == 0, (command, shown.stderr[-2000:])
        for comment in outputs:
            assert expected(comment).fullmatch(shown.stdout.strip()), (comment, shown.stdout)
