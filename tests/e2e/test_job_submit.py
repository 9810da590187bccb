"""`ray job submit` to a real two-node cluster started on this machine."""

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.cluster import BIN, free_ports, local_cluster

ROOT = Path(__file__).parents[2]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def wait_for_nodes(env: dict, count: int, timeout: float = 90) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = subprocess.run(
            [str(BIN / "ray"), "status"], capture_output=True, text=True, env=env, timeout=60
        )
        if status.stdout.count(" node_") >= count:
            return True
        time.sleep(1)
    return False


def test_job_submit_runs_the_pipeline_on_two_nodes(tmp_path):
    out = tmp_path / "out"
    ports = free_ports(4)
    # Ray's socket paths must stay under 108 bytes: a short session folder.
    ray_dir = Path(tempfile.mkdtemp(prefix="rp2n-", dir="/tmp"))
    with local_cluster(ray_dir, *ports, nodes=2) as env:
        assert wait_for_nodes(env, 2)
        job = subprocess.run(
            [
                str(BIN / "ray"),
                "job",
                "submit",
                "--working-dir",
                ".",
                "--",
                "python",
                "jobs/pipeline.py",
                "--config",
                "jobs/configs/sample.yaml",
                "--set",
                f"output.path={out}",
                "--set",
                "output.shard_tokens=100000",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=900,
        )
        assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
        assert "succeeded" in job.stdout + job.stderr
    shutil.rmtree(ray_dir, ignore_errors=True)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["documents_in"] == 514
    assert manifest["documents_in"] == manifest["documents_out"] + sum(
        manifest["rejected"].values()
    )
    assert len(manifest["shards"]) > 1
