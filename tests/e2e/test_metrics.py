"""During a run, raypipe's metrics are on the node's Prometheus endpoint, and every query
of the Grafana dashboard names a metric that exists there."""

import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cluster import BIN, free_ports, local_cluster
from tests.faults import repeated_corpus

ROOT = Path(__file__).parents[2]
METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", re.M)
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def dashboard_metrics() -> set[str]:
    dashboard = json.loads((ROOT / "dashboards" / "raypipe.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    return {name for expr in exprs for name in re.findall(r"\b(ray_[a-z0-9_]+)\b", expr)}


def scrape(port: int) -> set[str]:
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    except OSError:
        return set()
    return set(METRIC.findall(body.decode()))


def test_metrics_appear_during_a_run_and_the_dashboard_queries_exist(tmp_path, mini_corpus):
    corpus = repeated_corpus(mini_corpus, tmp_path / "corpus.jsonl", copies=6)
    ports = free_ports(4)
    ray_dir = Path(tempfile.mkdtemp(prefix="rpm-", dir="/tmp"))
    seen: set[str] = set()
    # One node, so that every worker exports on the endpoint scraped here; two CPUs, so
    # that stage actors and read tasks run side by side.
    with local_cluster(ray_dir, *ports, nodes=1, cpus=2) as env:
        run = subprocess.Popen(
            [
                str(BIN / "raypipe"),
                "run",
                "/dev/stdin",
                "--address",
                env["RAY_ADDRESS"],
                "--set",
                f"input.paths=[{corpus}]",
                "--set",
                f"output.path={tmp_path / 'out'}",
                "--set",
                "ray.batch_docs=16",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        run.stdin.write("{}")
        run.stdin.close()
        while run.poll() is None:
            seen |= scrape(ports[3])
            time.sleep(1)
        for _ in range(15):  # the last export interval after the run
            seen |= scrape(ports[3])
            time.sleep(1)
        assert run.returncode == 0, run.stderr.read()[-3000:]
    shutil.rmtree(ray_dir, ignore_errors=True)
    ours = {name for name in seen if name.startswith("ray_raypipe_")}
    assert {
        "ray_raypipe_documents_out_total",
        "ray_raypipe_rejects_total",
        "ray_raypipe_bytes_read_total",
        "ray_raypipe_tokens_written_total",
    } <= ours, ours
    missing = dashboard_metrics() - seen
    assert not missing, f"dashboard queries metrics never exported: {missing}"
