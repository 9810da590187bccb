"""Helpers to break a run on purpose: bigger corpora, finding and killing Ray workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path


def repeated_corpus(source: Path, target: Path, copies: int) -> Path:
    """`copies` of `source` under distinct ids and slightly different texts."""
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    with target.open("w") as out:
        for copy in range(copies):
            for row in rows:
                text = f"{row['text']}\n\nCopy {copy} of this page."
                out.write(json.dumps({**row, "id": f"{row['id']}~{copy}", "text": text}) + "\n")
    return target


def worker_pids(marker: str) -> list[int]:
    """Ray worker processes running a task or actor of `marker` (Ray titles them
    ray::MapBatches(...marker...) or ray::MapWorker(...marker...))."""
    return actor_pids("", marker)


def actor_pids(actor_class: str, marker: str = "") -> list[int]:
    """Processes of Ray actors of `actor_class` (titled ray::<class>...) running `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="ignore")
        except OSError:
            continue
        if cmdline.startswith(f"ray::{actor_class}") and marker in cmdline:
            pids.append(int(entry.name))
    return pids


def kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
