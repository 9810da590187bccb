"""Where a run keeps its intermediate results, and how it knows they are complete.

Each phase writes into a folder named after the fingerprint of everything its result
depends on (input files, options); a `_COMMITTED` marker written last makes it reusable.
A re-run after a crash skips committed phases and redoes an interrupted one from scratch,
so nothing is duplicated or lost.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import ray

from raypipe import __version__
from raypipe.config import PipelineConfig
from raypipe.io import storage

WORK_DIR = "_work"
MARKER = "_COMMITTED"
# Options that only shape phase 3 (tokenize, pack, write) or how Ray runs.
PHASE3_ONLY = ("output", "tokenizer", "eos_token", "pack", "tokenize", "ray", "seed")
# The checkpoints' columns: a new layout (2: the tokens checkpoint counts words) never
# resumes from a checkpoint of an older one.
LAYOUT = 2


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprints(cfg: PipelineConfig, files: list[tuple[str, int, int]]) -> tuple[str, str]:
    """(cleaning fingerprint, whole-run fingerprint)."""
    options = cfg.model_dump(mode="json")
    cleaning = {k: v for k, v in options.items() if k not in PHASE3_ONLY}
    clean_fp = _digest([__version__, LAYOUT, files, cleaning])
    run_options = {k: v for k, v in options.items() if k != "ray"}
    run_options["output"] = {
        k: v for k, v in run_options["output"].items() if k not in ("overwrite", "keep_work")
    }
    return clean_fp, _digest([clean_fp, run_options])


def tokens_fingerprint(cfg: PipelineConfig, clean_fp: str) -> str:
    """Tokens depend on the cleaned documents, the tokenizer, and (for mixing) the seed."""
    return _digest([clean_fp, cfg.tokenizer, cfg.eos_token, cfg.seed])


def phase_dir(output: str, phase: str, fingerprint: str) -> str:
    return storage.join(output, WORK_DIR, f"{phase}-{fingerprint}")


def committed(folder: str) -> dict | None:
    """The marker's content when `folder` holds a complete phase result."""
    marker = storage.join(folder, MARKER)
    return json.loads(storage.read_bytes(marker)) if storage.exists(marker) else None


def commit(folder: str, info: dict) -> dict:
    """Mark `folder` complete; return `info` as `committed` will read it back."""
    data = json.dumps(info).encode()
    storage.write_atomic(storage.join(folder, MARKER), data)
    return json.loads(data)


def write_part(batch: pa.Table, folder: str, tally: Callable[[pa.Table], dict]) -> pa.Table:
    """`publish_part` as a Ray Data map: its tally as one JSON row, never the documents."""
    return pa.table({"tally": [json.dumps(publish_part(batch, folder, tally))]})


def publish_part(batch: pa.Table, folder: str, tally: Callable[[pa.Table], dict]) -> dict:
    """Publish one checkpoint file; return its tally.

    The name comes from the first document, so a retried task rewrites the same file
    instead of adding a second copy.
    """
    sink = pa.BufferOutputStream()
    pq.write_table(batch, sink, compression="zstd")
    first = int(batch["uid"][0].as_py()) if batch.num_rows else 0
    name = f"part-{first:020d}-{batch.num_rows}.parquet"
    storage.write_atomic(storage.join(folder, name), sink.getvalue().to_pybytes())
    return tally(batch)


def read(folders: str | list[str], columns: list[str] | None = None) -> ray.data.Dataset:
    """The part files of checkpoint `folders` (their `columns`, else all), a block each.

    Ray Data's `read_parquet` took ~5.5 s on every call in a warm Ray, even for eight
    small files, and a run reads its checkpoints about ten times; listing the parts here
    and reading each in a task with pyarrow takes a fifth of a second.
    """
    names = [folders] if isinstance(folders, str) else folders
    parts = [uri for folder in names for uri in storage.files(folder, ".parquet")]
    if not parts:
        return ray.data.from_items([])
    listed = ray.data.from_items([{"uri": uri} for uri in parts], override_num_blocks=len(parts))
    return listed.map_batches(
        _read_parts, fn_kwargs={"columns": columns}, batch_size=1, batch_format="pyarrow"
    )


def _read_parts(listed: pa.Table, columns: list[str] | None) -> pa.Table:
    return pa.concat_tables(storage.read_table(uri, columns) for uri in listed["uri"].to_pylist())
