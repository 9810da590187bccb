"""The README's cluster commands, run as written: two nodes, `ray status`, `ray job submit`.

They run in network and process namespaces of their own (`unshare`), so that Ray's default
ports and `ray stop` touch nothing but this cluster."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cluster import BIN

ROOT = Path(__file__).parents[2]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def readme_block(marker: str) -> str:
    """The README's bash block whose first line is `marker`."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(block for block in blocks if block.startswith(marker))


def test_the_readme_cluster_commands_run_the_pipeline_on_two_nodes():
    block = readme_block("# a cluster on this machine")
    out = Path(re.search(r"output\.path=(\S+)", block).group(1))
    shutil.rmtree(out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    script = f"set -euo pipefail\nip link set lo up\n{block}"
    done = subprocess.run(
        ["unshare", "--net", "--pid", "--fork", "--mount-proc", "bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Node status" in done.stdout and " node_" in done.stdout  # `ray status` answered
    assert "succeeded" in done.stdout + done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["documents_in"] == 514
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    assert len(manifest["shards"]) > 1
    shutil.rmtree(out, ignore_errors=True)
