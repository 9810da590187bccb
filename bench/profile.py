"""Where raypipe spends its time: a py-spy profile of a benchmark script, as a table.

py-spy samples the script's process and every process it starts (Ray's workers
included), so the table shows the whole run, not only the driver.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench.common import pinned

RATE = 50  # samples per second and process
TOP = 12
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<path>.*?)(?::(?P<line>\d+))?\)$")
# Lines where a thread waits (for a task, a socket, a log line, a lock) rather than works:
# py-spy counts them with --idle, which it needs to see time spent in native code.
WAITING = re.compile(
    r"^(?:\S*\.)?(?:select|wait|sleep|main_loop|get_output_blocking|print_logs|"
    r"listen_error_messages|tick_thread_run|_run|run|<lambda>|_worker) \("
)


def _frame(frame: str) -> tuple[str, str]:
    """`fn (path/to/pkg/module.py:123)` -> (`fn (pkg/module.py:123)`, `fn (pkg/module.py)`)."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, frame
    where = "/".join(Path(match["path"]).parts[-2:])
    function = f"{match['name']} ({where})"
    return (f"{match['name']} ({where}:{match['line']})" if match["line"] else function), function


def top_lines(raw: str, top: int = TOP) -> list[tuple[str, float, float]]:
    """(line, share of busy samples on it, share with its function on the stack) from
    py-spy's raw output; samples of processes waiting for work are left out."""
    own: Counter[tuple[str, str]] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_frame(f) for f in stack.split(";") if not f.startswith("process ")]
        if not frames or WAITING.match(frames[-1][1]):
            continue
        n = int(count)
        samples += n
        own[frames[-1]] += n
        for function in {function for _, function in frames}:
            total[function] += n
    return [
        (where, n / samples, total[function] / samples)
        for (where, function), n in own.most_common(top)
    ]


def profile_script(
    script: str, payload: dict, cpus: int | None = None, python: str = sys.executable
) -> str:
    """Run `script` (as bench.common.run_script would) under py-spy; Markdown of its hot spots."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    with tempfile.TemporaryDirectory() as folder:
        out, source, ended = (Path(folder) / name for name in ("raw.txt", "script.py", "ended"))
        # A file, not -c: py-spy names each process by its command line. py-spy exits 0
        # even when the script fails, so the script marks its own end.
        source.write_text(f"{script}\nopen({str(ended)!r}, 'w').close()\n")
        done = subprocess.run(
            [spy, "record", "--subprocesses", "--idle", "--format", "raw", "--rate", str(RATE)]
            + ["--output", str(out), "--", python, str(source)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            check=False,
            **pinned(cpus),
        )
        if done.returncode != 0 or not ended.exists() or not out.exists():
            return f"py-spy could not profile this run:\n\n```\n{done.stderr[-2000:]}\n```"
        rows = top_lines(out.read_text())
    lines = [
        "| line (own time) | share of busy samples | its function on the stack |",
        "|---|---:|---:|",
        *(f"| `{name}` | {own:.1%} | {total:.1%} |" for name, own, total in rows),
    ]
    return "\n".join(lines)
