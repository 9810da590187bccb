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


def _title(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="ignore")
        )
    except OSError:
        return ""


def actor_pids(actor_class: str, marker: str = "") -> list[int]:
    """Processes of Ray actors of `actor_class` (titled ray::<class>...) running `marker`."""
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and (title := _title(int(entry.name))).startswith(f"ray::{actor_class}")
        and marker in title
    ]


def kill_working(pids: list[int], marker: str) -> list[int]:
    """SIGKILL those of `pids` whose title still shows them running `marker` (Ray retitles
    a worker ray::IDLE between tasks, an actor ray::Class between calls); the ones killed."""
    killed = []
    for pid in pids:
        if marker in _title(pid):
            with contextlib.suppress(ProcessLookupError):  # it ended between the two lines
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed
