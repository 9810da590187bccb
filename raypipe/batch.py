"""A batch of documents: the Arrow table every stage takes and returns.

Stages never drop rows. A rejected document keeps its row, gets `stage` and `reason`
set and its text emptied, so that one stream carries both the kept documents and the
accounting for the rejected ones (input documents = kept + rejected, by construction).

Columns every batch has:
    uid     int64   position in the input: (file_index << 32) | row — stable across runs
    id      string  the user's id, or "<file>#<row>" when the input has none
    source  string  the named source the document came from
    text    string  the document ("" once rejected)
    stage   string  null while the document is alive, else the stage that rejected it
    reason  string  null while the document is alive, else the named reason
Readers add `url` (null where the input does not know it) and the kept fields; stages
may add columns (e.g. `language`, `language_score`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CORE_SCHEMA = pa.schema(
    [
        ("uid", pa.int64()),
        ("id", pa.string()),
        ("source", pa.string()),
        ("text", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
    ]
)

# What names a document to a user, carried from the read to every shard's documents
# table and the rejects ledger: by these a document is located and removed afterwards.
DOCUMENT_KEYS = ["id", "source", "url"]
ROW_BITS = 32  # uid = file_index << ROW_BITS | row
# Text a stage turns into Python objects at once. Words and token ids as Python objects take
# tens of times the bytes of their text: a batch of 256 whole books held at once grew a
# cleaning actor to 4 GiB, sliced it stays at a few hundred MB.
SLICE_BYTES = 8 << 20


def make_uid(file_index: int, row: int) -> int:
    return (file_index << ROW_BITS) | row


def counter_column(stage: str, counter: str) -> str:
    """The per-document count column of a counter a stage declares (`pii_email_address`):
    the run's accounting sums it into the manifest's `counters[stage][counter]`."""
    return f"{stage}_{counter}"


def alive(batch: pa.Table) -> np.ndarray:
    """Boolean mask of the documents no stage has rejected yet."""
    return pc.is_null(batch["reason"]).to_numpy(zero_copy_only=False)


def alive_texts(batch: pa.Table) -> tuple[np.ndarray, list[str]]:
    """Row indices and texts of the alive documents (the only ones a stage should look at)."""
    rows = np.flatnonzero(alive(batch))
    texts = batch["text"].take(pa.array(rows)).to_pylist() if len(rows) else []
    return rows, texts


def in_slices(fn: Callable[[pa.Table], pa.Table], batch: pa.Table) -> pa.Table:
    """`fn` applied to consecutive slices of `batch` of at most SLICE_BYTES of text and HTML
    each (a longer document alone), the results joined in order."""
    sizes = np.zeros(batch.num_rows, np.int64)
    for column in {"text", "html"} & set(batch.column_names):
        sizes += pc.binary_length(batch[column]).fill_null(0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(sizes)
    if len(ends) == 0 or ends[-1] <= SLICE_BYTES:
        return fn(batch)
    parts, start = [], 0
    while start < len(ends):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + SLICE_BYTES, side="right")))
        parts.append(fn(batch.slice(start, stop - start)))
        start = stop
    return pa.concat_tables(parts, promote_options="default")


def rebatch(batches: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The rows of `batches`, in order, as tables of `rows` rows (the last one may hold fewer);
    at most one table's worth is held at a time."""
    held: list[pa.Table] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        while count >= rows:
            joined = pa.concat_tables(held, promote_options="default")
            yield joined.slice(0, rows)
            held, count = [joined.slice(rows)], count - rows
    if count:
        yield pa.concat_tables(held, promote_options="default")


def repeat_rows(table: pa.Table, counts: np.ndarray) -> pa.Table:
    """Each row `counts` times, in order, taken chunk by chunk: a take over the whole
    table first concatenates its chunks (a few times the table's bytes at once)."""
    if (counts == 1).all():
        return table
    parts, at = [], 0
    for chunk in table.to_batches():
        rows = np.repeat(np.arange(chunk.num_rows), counts[at : at + chunk.num_rows])
        parts.append(chunk.take(pa.array(rows, pa.int64())))
        at += chunk.num_rows
    return pa.Table.from_batches(parts, table.schema)


def set_column(batch: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Add a column or replace it in place."""
    index = batch.schema.get_field_index(name)
    if index < 0:
        return batch.append_column(name, values)
    return batch.set_column(index, name, values)


def scatter(batch: pa.Table, rows: np.ndarray, values: Sequence, column: str) -> pa.Array:
    """A full-length array of `column` with `values` written at `rows`, others unchanged."""
    full = batch[column].to_pylist()
    for row, value in zip(rows.tolist(), values, strict=True):
        full[row] = value
    return pa.array(full, type=batch.schema.field(column).type)


def reject(
    batch: pa.Table, mask: np.ndarray, stage: str, reason: str | Sequence[str | None]
) -> pa.Table:
    """Mark rows in `mask` (full length) as rejected by `stage` with `reason`.

    `reason` is one string for all rows, or one entry per row (None = keep).
    Rows that are already rejected keep their first reason.
    """
    live = alive(batch)
    if isinstance(reason, str):
        hit = mask & live
        reasons = np.where(hit, reason, None)
    else:
        reasons = np.asarray(reason, dtype=object)
        hit = mask & live & (reasons != None)  # noqa: E711 (elementwise)
    if not hit.any():
        return batch
    hit_arr = pa.array(hit)
    batch = set_column(
        batch, "reason", pc.if_else(hit_arr, pa.array(reasons, pa.string()), batch["reason"])
    )
    batch = set_column(batch, "stage", pc.if_else(hit_arr, pa.scalar(stage), batch["stage"]))
    return set_column(batch, "text", pc.if_else(hit_arr, pa.scalar(""), batch["text"]))


def empty_batch(extra: pa.Schema | None = None) -> pa.Table:
    schema = CORE_SCHEMA if extra is None else pa.unify_schemas([CORE_SCHEMA, extra])
    return schema.empty_table()
