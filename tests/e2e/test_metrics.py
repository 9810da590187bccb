"""A real Prometheus scrapes a running job's node: every query of the Grafana dashboard
returns data, and Prometheus's own graph page charts the series (docs/prometheus.png)."""

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.cluster import BIN, free_ports, local_cluster
from tests.faults import repeated_corpus
from tests.prometheus import graph_url, query, scraping

ROOT = Path(__file__).parents[2]
CHROMIUM = [shutil.which("chromium") or "chromium", "--headless", "--no-sandbox", "--disable-gpu"]
# What docs/prometheus.png shows: documents through the stages, rejects, throughput, tokens.
SCREENSHOT_SERIES = [
    "sum by (stage) (ray_raypipe_documents_out_total)",
    "sum by (reason) (ray_raypipe_rejects_total)",
    "sum by (stage) (rate(ray_raypipe_documents_out_total[10s]))",
    "sum(ray_raypipe_tokens_written_total)",
]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def dashboard_queries() -> list[str]:
    dashboard = json.loads((ROOT / "dashboards" / "raypipe.json").read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]


def test_a_real_prometheus_scraping_a_running_job_answers_every_dashboard_query(
    tmp_path, mini_corpus, monkeypatch
):
    corpus = repeated_corpus(mini_corpus, tmp_path / "corpus.jsonl", copies=30)
    # Workers export every second (Ray's default is 10 s), so that a short job's counters
    # are seen rising, not only at their final values.
    monkeypatch.setenv("RAY_metrics_report_interval_ms", "1000")
    *ports, prometheus_port = free_ports(5)
    ray_dir = Path(tempfile.mkdtemp(prefix="rpm-", dir="/tmp"))
    # One node, so that every worker exports on the endpoint scraped here; two CPUs, so
    # that stage actors and read tasks run side by side.
    with (
        local_cluster(ray_dir, *ports, nodes=1, cpus=2) as env,
        scraping(ports[3], prometheus_port, tmp_path / "prometheus") as prometheus,
    ):
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
                "--set",  # ~50 shards, published one after another over seconds
                "output.shard_tokens=1000",
                "--set",
                "pack.seq_len=128",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        run.stdin.write("{}")
        run.stdin.close()
        answered: set[str] = set()  # queries that returned data while the job ran
        while run.poll() is None:
            answered |= {
                e for e in dashboard_queries() if e not in answered and query(prometheus, e)
            }
            time.sleep(1)
        assert run.returncode == 0, run.stderr.read()[-3000:]
        stages = query(prometheus, dashboard_queries()[0])
        peak = query(
            prometheus, "max_over_time(sum(rate(ray_raypipe_documents_out_total[1m]))[5m:1s])"
        )
        picture = tmp_path / "prometheus.png"
        shown = subprocess.run(
            [
                *CHROMIUM,
                "--window-size=1400,3100",
                "--virtual-time-budget=10000",
                f"--screenshot={picture}",
                graph_url(prometheus, SCREENSHOT_SERIES, minutes=1),
            ],
            capture_output=True,
            timeout=120,
        )
    shutil.rmtree(ray_dir, ignore_errors=True)
    empty = [expr for expr in dashboard_queries() if expr not in answered]
    assert not empty, f"dashboard queries with no data during the run: {empty}"
    assert {"extract", "quality", "pii"} <= {s["metric"]["stage"] for s in stages}, stages
    assert float(peak[0]["value"][1]) > 0  # documents flowed while Prometheus watched
    assert shown.returncode == 0 and picture.stat().st_size > 50_000
