"""Where did a document go? Every place an id or URL ended up in a committed run: the
shards and sequences holding it (from each shard's documents table, raypipe.shards) or
the stage and reason that rejected it (from the rejects ledger).

Both are Parquet folders read with a filter, so a lookup reads the key columns of the
run and never its tokens. A run without tokenizer is searched in its documents/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from raypipe.io import storage
from raypipe.shards import DOCUMENTS_DIR, require_documents_tables
from raypipe.writers import SHARDS_DIR


@dataclass(frozen=True)
class Place:
    key: str  # the id or URL asked for
    id: str
    url: str | None
    shard: str | None = None  # kept in this shard (its manifest path)
    document: int | None = None
    first_sequence: int | None = None
    last_sequence: int | None = None
    tokens: int | None = None
    file: str | None = None  # kept in this file of documents/ (a run without tokenizer)
    stage: str | None = None  # rejected by this stage, for this reason
    reason: str | None = None

    def line(self) -> str:
        if self.reason is not None:
            return f"{self.key}\trejected\t{self.stage}: {self.reason}\tid={self.id}"
        if self.shard is None:
            return f"{self.key}\tkept\t{self.file}\tid={self.id}"
        sequences = (
            f"sequence {self.first_sequence}"
            if self.first_sequence == self.last_sequence
            else f"sequences {self.first_sequence}-{self.last_sequence}"
        )
        where = f"{self.shard} {sequences} (document {self.document}, {self.tokens} tokens)"
        return f"{self.key}\tkept\t{where}\tid={self.id}"


def _matching(output: str, folder: str, keys: list[str], form: str = "parquet") -> list[dict]:
    """Rows of the tables under `output`/`folder` whose id or url is a key, each with the
    file it is in (relative to `output`)."""
    uri = storage.join(output, folder)
    if not storage.exists(uri):
        return []
    fs, path = storage.filesystem(uri)
    wanted = pa.array(keys, pa.string())
    rows = []
    for fragment in pads.dataset(path, filesystem=fs, format=form).get_fragments():
        names = fragment.physical_schema.names
        match = [pc.field(c).isin(wanted) for c in ("id", "url") if c in names]
        if not match:
            continue
        table = fragment.to_table(filter=match[0] if len(match) == 1 else match[0] | match[1])
        file = f"{folder}/{fragment.path.rsplit('/', 1)[-1]}"
        rows += [{"url": None, **row, "file": file} for row in table.to_pylist()]
    return rows


def _keys(row: dict, asked: set[str]) -> list[str]:
    """The asked keys a row answers: its id, its URL, or both."""
    return [key for key in dict.fromkeys([row["id"], row["url"]]) if key in asked]


def locate(output: str, keys: list[str]) -> list[Place]:
    """Every place of every key in the committed run at `output`, kept ones first."""
    if not storage.exists(storage.join(output, "manifest.json")):
        raise FileNotFoundError(f"{output} holds no committed run (no manifest.json)")
    manifest = json.loads(storage.read_bytes(storage.join(output, "manifest.json")))
    asked, places = set(keys), []
    if "shards" in manifest:
        require_documents_tables(output, manifest)
        for row in _matching(output, f"{SHARDS_DIR}/{DOCUMENTS_DIR}", keys):
            fields = {name: row[name] for name in PLACED}
            places += [Place(key, **fields) for key in _keys(row, asked)]
    else:  # the cleaned documents themselves
        form = {"jsonl": "json"}.get(manifest["config"]["output"]["format"], "parquet")
        for row in _matching(output, manifest["documents"].rstrip("/"), keys, form):
            places += [
                Place(key, row["id"], row["url"], file=row["file"]) for key in _keys(row, asked)
            ]
    for row in _matching(output, "rejects", keys):
        for key in _keys(row, asked):
            places.append(
                Place(key, row["id"], row["url"], stage=row["stage"], reason=row["reason"])
            )
    return places


PLACED = ("id", "url", "shard", "document", "first_sequence", "last_sequence", "tokens")
