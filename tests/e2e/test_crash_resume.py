"""SIGKILL the whole driver mid-run, run the same command again: the same output."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults import repeated_corpus

RAYPIPE = str(Path(sys.executable).with_name("raypipe"))
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def command(corpus, out):
    return [
        RAYPIPE,
        "run",
        "/dev/stdin",
        "--set",
        f"input.paths=[{corpus}]",
        "--set",
        "input.id_field=id",
        "--set",
        f"output.path={out}",
        "--set",
        "output.shard_tokens=2000",
        "--set",
        "pack.seq_len=512",
        "--set",
        "ray.batch_docs=32",
        "--set",
        "ray.num_cpus=2",
    ]


def start(corpus, out):
    env = {**os.environ, "RAY_ADDRESS": ""}
    # A new session: the driver and the local Ray it starts die together, like a lost node.
    return subprocess.Popen(
        command(corpus, out),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        text=True,
    )


def finish(corpus, out) -> dict:
    process = start(corpus, out)
    _, err = process.communicate("{}", timeout=600)
    assert process.returncode == 0, err
    return json.loads((out / "manifest.json").read_text())


def crash_when(corpus, out, ready) -> None:
    process = start(corpus, out)
    process.stdin.write("{}")
    process.stdin.close()
    deadline = time.time() + 300
    while not ready(out):
        assert process.poll() is None, "the run ended before the crash point"
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (out / "manifest.json").exists()


def some_checkpoint_parts(out: Path) -> bool:
    return any(out.glob("_work/clean-*/part-*.parquet"))


def some_shards(out: Path) -> bool:
    return len(list(out.glob("shards/*.json"))) >= 3


@pytest.fixture(scope="module")
def corpus_and_reference(tmp_path_factory, mini_corpus_path):
    base = tmp_path_factory.mktemp("crash")
    corpus = repeated_corpus(mini_corpus_path, base / "corpus.jsonl", copies=4)
    return corpus, finish(corpus, base / "reference")


@pytest.mark.parametrize("crash_point", [some_checkpoint_parts, some_shards])
def test_rerun_after_sigkill_equals_uninterrupted_run(corpus_and_reference, tmp_path, crash_point):
    corpus, reference = corpus_and_reference
    crash_when(corpus, tmp_path / "out", crash_point)
    resumed = finish(corpus, tmp_path / "out")
    assert [s["sha256"] for s in resumed["shards"]] == [s["sha256"] for s in reference["shards"]]
    for key in ("documents_in", "documents_out", "rejected", "tokens", "sequences"):
        assert resumed[key] == reference[key]
