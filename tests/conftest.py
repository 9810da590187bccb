from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
BUCKET = "raypipe-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def mosaic_streaming():
    """MosaicML Streaming's streaming.base (StreamingDataset, MDSWriter). The package's
    __init__ also imports its vision datasets, whose torchvision has no CPU wheel beside
    the pinned torch; streaming.base needs neither, so it is loaded on its own."""
    spec = importlib.util.find_spec("streaming")
    if spec is None:
        pytest.skip("mosaicml-streaming is not installed")
    if "streaming" not in sys.modules:
        package = types.ModuleType("streaming")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streaming"] = package
    import streaming.base

    return streaming.base


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-protocol server (moto) on 127.0.0.1, with one bucket.

    Its address and throwaway credentials go into this process's environment before
    Ray starts, so Ray's workers inherit them like a user's job would.
    """
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="raypipe-test-key",
        AWS_SECRET_ACCESS_KEY="raypipe-test-secret",
        AWS_REGION="us-east-1",
    )
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        endpoint_override=f"127.0.0.1:{port}", scheme="http", allow_bucket_creation=True
    )
    deadline = time.time() + 30
    while True:
        try:
            fs.create_dir(BUCKET)
            break
        except OSError:
            if time.time() > deadline:
                server.kill()
                raise
            time.sleep(0.2)
    yield f"s3://{BUCKET}"
    server.kill()
    server.wait()


@pytest.fixture(scope="session")
def local_ray(s3_server):
    """One real local Ray for the whole session (2 CPUs, no dashboard)."""
    import ray

    from raypipe.runtime import ARROW_POOL

    os.environ.update(ARROW_POOL)  # the workers allocate as a run's do (raypipe.runtime)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def mini_corpus_path() -> Path:
    return FIXTURES / "mini.jsonl"


@pytest.fixture
def mini_corpus(mini_corpus_path) -> Path:
    return mini_corpus_path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under RAYPIPE_NO_SKIP=1 (CI) a skipped test fails: a missing dependency must not
    leave the capability it guards untested."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("RAYPIPE_NO_SKIP") == "1":
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (RAYPIPE_NO_SKIP=1): {report.longrepr}"
