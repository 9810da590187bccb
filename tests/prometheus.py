"""A real Prometheus server (Debian's `prometheus` package) scraping one endpoint."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def scraping(target_port: int, port: int, folder: Path) -> Iterator[str]:
    """Prometheus on 127.0.0.1:`port` scraping 127.0.0.1:`target_port` twice a second;
    yields its base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (.ci/run installs Debian's package)")
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 500ms, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: ray\n    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
    )
    log = (folder / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{base}/-/ready", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        else:
            raise AssertionError((folder / "prometheus.log").read_text()[-2000:])
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def query(base: str, expr: str) -> list[dict]:
    """The instant vector of `expr`, as Prometheus's HTTP API returns it."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    body = json.loads(urllib.request.urlopen(url, timeout=10).read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def graph_url(base: str, exprs: list[str], minutes: int) -> str:
    """Prometheus's own graph page charting each of `exprs` over the last `minutes`."""
    params = {}
    for i, expr in enumerate(exprs):
        params |= {f"g{i}.expr": expr, f"g{i}.tab": "0", f"g{i}.range_input": f"{minutes}m"}
    return f"{base}/classic/graph?" + urllib.parse.urlencode(params)
