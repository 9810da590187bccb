"""Input files to document batches. Bad input is data, not a crash.

Every readable document becomes a row; every unreadable one becomes a rejected row with a
reason (stage "read"), so that input documents = kept + rejected holds for broken files
too. A file that cannot be read at all (missing, binary, empty) or breaks off midway
(truncated .gz/.zst) adds one file-level rejected row whose id is the file URI.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import PurePosixPath

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from raypipe.batch import CORE_SCHEMA, make_uid
from raypipe.config import InputConfig
from raypipe.io.compression import TruncatedInput, chunks
from raypipe.io.storage import filesystem
from raypipe.io.warc import Page, pages

READ_STAGE = "read"
BATCH_TEXT_BYTES = 32 << 20
JSONL_SUFFIXES = {".jsonl", ".json", ".ndjson"}
TEXT_SUFFIXES = {".txt", ".text", ".md"}
COMPRESSED_SUFFIXES = {".gz", ".zst", ".zstd"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
URL_FIELD = "url"
WEB_FIELDS = [URL_FIELD, "date", "title"]  # what a page read from HTML carries
# Licence and consent: the input's tags when configured, else each record's own fields.
TAG_FIELDS = ("license", "consent")
DEFAULT_ID_FIELD = "id"  # with id_field unset, a record's `id` is its id when it has one


def input_format(uri: str, configured: str) -> str:
    """The reader for a file: the configured one, or the one its extension names."""
    if configured != "auto":
        return configured
    suffixes = [s.lower() for s in PurePosixPath(uri).suffixes]
    while suffixes and suffixes[-1] in COMPRESSED_SUFFIXES:
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".parquet":
        return "parquet"
    if suffix == ".warc":
        return "warc"
    if suffix in HTML_SUFFIXES:
        return "html"
    return "text"


def source_name(uri: str, cfg: InputConfig) -> str:
    return cfg.source or PurePosixPath(uri).name.split(".")[0]


def reads_html(kind: str, cfg: InputConfig) -> bool:
    return kind in ("warc", "html") or (kind in ("jsonl", "parquet") and bool(cfg.html_field))


def output_schema(cfg: InputConfig, html: bool = False) -> pa.Schema:
    """Core columns, the url (where the input knows it: a document's address, by which it
    can be located and removed later), kept fields and the input's tags; HTML input adds
    date/title and the raw `html`."""
    names = dict.fromkeys([URL_FIELD, *cfg.keep_fields, *(WEB_FIELDS if html else [])])
    fields = [*CORE_SCHEMA, *((n, pa.string()) for n in names)]
    fields += [(name, pa.string()) for name in TAG_FIELDS]
    return pa.schema([*fields, ("html", pa.binary())] if html else fields)


class _Rows:
    """Accumulates rows of one file and cuts them into batches."""

    def __init__(self, uri: str, file_index: int, cfg: InputConfig, html: bool = False):
        self.uri, self.file_index, self.cfg = uri, file_index, cfg
        self.default_source = source_name(uri, cfg)
        self.schema = output_schema(cfg, html)
        self.extra_fields = [
            n for n in self.schema.names[len(CORE_SCHEMA) :] if n not in ("html", *TAG_FIELDS)
        ]
        self.count = 0
        self.text_bytes = 0
        self.columns: dict[str, list] = {name: [] for name in self.schema.names}

    def add(
        self,
        text: str,
        doc_id: str | None = None,
        source: str | None = None,
        extra: dict | None = None,
        reason: str | None = None,
        html: bytes | None = None,
    ) -> None:
        row = self.count
        self.count += 1
        columns = self.columns
        columns["uid"].append(make_uid(self.file_index, row))
        columns["id"].append(doc_id if doc_id is not None else f"{self.uri}#{row}")
        columns["source"].append(source or self.default_source)
        columns["text"].append("" if reason else text)
        columns["stage"].append(READ_STAGE if reason else None)
        columns["reason"].append(reason)
        for name in self.extra_fields:
            value = (extra or {}).get(name)
            columns[name].append(None if value is None else str(value))
        for name in TAG_FIELDS:
            columns[name].append(_tag(getattr(self.cfg, name), extra, name))
        if "html" in columns:
            columns["html"].append(None if reason else html)
        self.text_bytes += len(text) + len(html or b"")

    def reject_file(self, reason: str) -> None:
        self.add("", doc_id=self.uri, reason=reason)

    def full(self, batch_docs: int) -> bool:
        return self.count % batch_docs == 0 or self.text_bytes >= BATCH_TEXT_BYTES

    def flush(self) -> pa.Table | None:
        if not self.columns["uid"]:
            return None
        table = pa.table(self.columns, schema=self.schema)
        self.columns = {name: [] for name in self.schema.names}
        self.text_bytes = 0
        return table


def _tag(configured: str | None, record: dict | None, name: str) -> str | None:
    """The input's tag when configured, else the record's own `name` field, if a string."""
    if configured is not None:
        return configured
    value = (record or {}).get(name)
    return value if isinstance(value, str) and value else None


def _doc_id(value: object) -> str | None:
    """Ids are strings; integer ids are common enough to take as their decimal string."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _jsonl_row(line: bytes, rows: _Rows) -> None:
    cfg = rows.cfg
    if len(line) > cfg.max_doc_bytes:
        rows.add("", reason="too_large")
        return
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            rows.add("", reason="invalid_utf8")
            return
        rows.add("", reason="malformed_json")
        return
    if not isinstance(record, dict):
        rows.add("", reason="not_an_object")
        return
    _record_row(record, rows)


def _record_row(record: dict, rows: _Rows) -> None:
    """One record of a JSONL line or a Parquet row: the same reasons for the same faults."""
    cfg = rows.cfg
    text = record.get(cfg.text_field)
    raw_id = record.get(cfg.id_field or DEFAULT_ID_FIELD)
    doc_id = _doc_id(raw_id)
    source = record.get("source") if cfg.source is None else None
    source = source if isinstance(source, str) and source else None
    html = record.get(cfg.html_field) if cfg.html_field else None
    if isinstance(html, str):
        html = html.encode("utf-8", "surrogatepass")
    if cfg.id_field and doc_id is None:
        rows.add("", reason="missing_id" if raw_id is None else "bad_id")
    elif isinstance(html, bytes):
        rows.add("", doc_id=doc_id, source=source, extra=record, html=html[: cfg.max_page_bytes])
    elif text is None:
        rows.add("", doc_id=doc_id, source=source, reason="missing_text")
    elif not isinstance(text, str):
        rows.add("", doc_id=doc_id, source=source, reason="text_not_string")
    elif 4 * len(text) > cfg.max_doc_bytes and _utf8_size(text) > cfg.max_doc_bytes:
        rows.add("", doc_id=doc_id, source=source, reason="too_large")  # bytes, as a line's
    else:
        rows.add(text, doc_id=doc_id, source=source, extra=record)


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


UTF8_BOM = b"\xef\xbb\xbf"  # what Windows tools put before a file's first record


def _read_jsonl(data: Iterator[bytes], rows: _Rows, batch_docs: int) -> Iterator[pa.Table]:
    pending, first = b"", True
    for chunk in data:
        if first and chunk:
            chunk, first = chunk.removeprefix(UTF8_BOM), False
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.strip():
                _jsonl_row(line, rows)
                if rows.full(batch_docs):
                    yield rows.flush()
        if len(pending) > rows.cfg.max_doc_bytes:
            # A gigantic line is skipped as it streams by, never held whole in memory.
            rows.add("", reason="too_large")
            pending = b""
            for chunk in data:
                if b"\n" in chunk:
                    pending = chunk.split(b"\n", 1)[1]
                    break
    if pending.strip():
        _jsonl_row(pending, rows)


def _read_text(data: Iterator[bytes], rows: _Rows, batch_docs: int) -> Iterator[pa.Table]:
    parts, total = [], 0
    for chunk in data:
        parts.append(chunk)
        total += len(chunk)
        if total > rows.cfg.max_doc_bytes:
            rows.add("", doc_id=rows.uri, reason="too_large")
            return
    try:
        rows.add(b"".join(parts).decode("utf-8"), doc_id=rows.uri)
    except UnicodeDecodeError:
        rows.add("", doc_id=rows.uri, reason="invalid_utf8")
    yield from ()


def _read_parquet(uri: str, rows: _Rows, batch_docs: int) -> Iterator[pa.Table]:
    fs, path = filesystem(uri)
    cfg = rows.cfg
    parquet = pq.ParquetFile(fs.open_input_file(path))
    names = set(parquet.schema_arrow.names)
    fields = [cfg.text_field, cfg.id_field or DEFAULT_ID_FIELD, cfg.html_field, "source"]
    fields += [*rows.extra_fields, *TAG_FIELDS]
    wanted = list(dict.fromkeys(c for c in fields if c in names))
    for record_batch in parquet.iter_batches(batch_size=batch_docs, columns=wanted):
        for record in record_batch.to_pylist():
            _record_row(record, rows)
        yield rows.flush()


def _read_warc(data: Iterator[bytes], rows: _Rows, batch_docs: int) -> Iterator[pa.Table]:
    cfg = rows.cfg
    for item in pages(data, cfg.max_doc_bytes, cfg.max_page_bytes):
        if isinstance(item, Page):
            fields = {"url": item.url, "date": item.date}
            # id_field names a page field (url) or, for the JSONL of a mixed input, none:
            # then the record's own id. A page is never rejected for its id.
            doc_id = _doc_id(fields.get(cfg.id_field or "")) or _doc_id(item.record_id)
            rows.add("", doc_id=doc_id, extra=fields, html=item.html)
        else:
            rows.add("", reason=item.reason)
        if rows.full(batch_docs):
            yield rows.flush()


def _read_html(data: Iterator[bytes], rows: _Rows, batch_docs: int) -> Iterator[pa.Table]:
    """One page per file; bytes past max_page_bytes are never read."""
    parts, total = [], 0
    for chunk in data:
        parts.append(chunk)
        total += len(chunk)
        if total >= rows.cfg.max_page_bytes:
            break
    rows.add("", doc_id=rows.uri, html=b"".join(parts)[: rows.cfg.max_page_bytes])
    yield from ()


READERS = {"jsonl": _read_jsonl, "text": _read_text, "warc": _read_warc, "html": _read_html}


def _unusable(head: bytes) -> str | None:
    """A file-level reason when the first bytes already show the file is no text."""
    if not head.strip():
        return "empty_file"
    if b"\x00" in head[:8192]:
        return "binary_file"
    return None


def _chunks(uri: str) -> Iterator[bytes]:
    fs, path = filesystem(uri)
    with fs.open_input_stream(path, compression=None) as raw:
        yield from chunks(uri, raw)


def read_file(uri: str, file_index: int, cfg: InputConfig, batch_docs: int) -> Iterator[pa.Table]:
    """All documents of one input file as batches (see raypipe.batch)."""
    kind = input_format(uri, cfg.format)
    rows = _Rows(uri, file_index, cfg, html=reads_html(kind, cfg))
    try:
        if kind == "parquet":
            yield from _read_parquet(uri, rows, batch_docs)
        else:
            data = _chunks(uri)
            head = next(data, b"")
            # WARC records and HTML pages are bytes in any charset, NULs included.
            problem = _unusable(head) if kind in ("jsonl", "text") else None
            if problem or not head.strip():
                rows.reject_file(problem or "empty_file")
            else:
                yield from READERS[kind](itertools.chain([head], data), rows, batch_docs)
    except TruncatedInput:
        # The rows read before the break are kept; the rest of the file is one reject.
        rows.reject_file("truncated_file")
    except (OSError, ValueError, pa.ArrowException):
        rows.reject_file("unreadable_file")
    last = rows.flush()
    if last is not None:
        yield last
