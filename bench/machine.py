"""What the figures were measured on: the machine, the software and the input files."""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

from bench.common import PEER_PACKAGES, ROOT, iter_jsonl_zst


def _proc_field(path: str, key: str) -> str | None:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(key)), None)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> str:
    memory_kb = _proc_field("/proc/meminfo", "MemTotal")
    memory = f"{int(memory_kb.split()[0]) / 2**20:.1f} GiB" if memory_kb else "unknown"
    rows = {
        "CPU": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "memory": memory,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "Ray": _version("ray"),
        "tokenizers": _version("tokenizers"),
        "pyarrow": _version("pyarrow"),
        "peers (bench/.venv-peers)": ", ".join(PEER_PACKAGES),
    }
    return "\n".join(
        ["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in rows.items())]
    )


def describe_inputs(folder: Path) -> str:
    """Size, documents and text of each corpus in `folder` (counted, not copied from a README)."""
    files = sorted(folder.glob("*.jsonl.zst"))
    if not files:
        return f"No input files found under {folder}."
    lines = [
        f"Files of `{os.path.relpath(folder, ROOT)}` (see its README for their "
        "provenance); each case says which slice it reads.",
        "",
        "| file | on disk | documents | text | mean document |",
        "|---|---:|---:|---:|---:|",
    ]
    for path in files:
        documents = text_bytes = 0
        for row in iter_jsonl_zst(path):
            documents += 1
            text_bytes += len(row["text"].encode())
        lines.append(
            f"| `{path.name}` | {path.stat().st_size / 1e6:,.1f} MB | {documents:,} | "
            f"{text_bytes / 1e6:,.1f} MB | {text_bytes / max(documents, 1) / 1e3:,.1f} KB |"
        )
    return "\n".join(lines)
