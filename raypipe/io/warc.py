"""WARC files to web pages: HTTP responses carrying HTML, each with its URL and crawl date.

Records are framed here, on the decompressed byte stream, and parsed by fastwarc one at a
time. Framing ourselves is what lets a broken record become one reject while the rest of
the file is still read: fastwarc's own iterator stops at the first malformed header and
reads a truncated file as if it were complete. After a malformed record the reader skips
to the next line that starts a WARC record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from fastwarc.warc import WarcRecord

RECORD_START = b"WARC/"  # 1.0 and 1.1, and 0.18 (ClueWeb09)
HEADER_END = b"\r\n\r\n"
MAX_HEADER_BYTES = 64 << 10  # a WARC header block larger than this is not a header
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")
_WARC_TYPE = re.compile(rb"(?im)^warc-type:[ \t]*(\S+)")
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True)
class Page:
    """One HTML response: raw body bytes (never decoded here) and where it came from."""

    url: str | None
    date: str | None
    record_id: str | None  # WARC-Record-ID, e.g. <urn:uuid:...>: the page's id in the run
    html: bytes
    offset: int  # of the record in the decompressed stream: a stable id within the file


@dataclass(frozen=True)
class BrokenRecord:
    reason: str  # warc_malformed_record | warc_truncated_record | too_large
    offset: int


class _Stream:
    """A window over decompressed chunks that only ever holds what a record needs.

    `pos` moves through `buffer` instead of slicing it, so stepping over many small
    records costs nothing per record; the buffer is compacted only when a chunk is added.
    """

    def __init__(self, chunks: Iterator[bytes]):
        self.chunks, self.buffer, self.pos, self.base = chunks, b"", 0, 0

    @property
    def offset(self) -> int:
        """Position in the decompressed stream of the next unread byte."""
        return self.base + self.pos

    def available(self) -> int:
        return len(self.buffer) - self.pos

    def more(self) -> bool:
        chunk = next(self.chunks, None)
        if chunk is None:
            return False
        self.base += self.pos
        self.buffer, self.pos = self.buffer[self.pos :] + chunk, 0
        return True

    def fill(self, size: int) -> bool:
        """Make at least `size` bytes available; False when the stream ends first."""
        while self.available() < size:
            if not self.more():
                return False
        return True

    def peek(self, size: int) -> bytes:
        return self.buffer[self.pos : self.pos + size]

    def drop(self, size: int) -> None:
        """Step over `size` bytes, reading (not keeping) those not yet buffered."""
        while self.available() < size:
            size -= self.available()
            self.base += len(self.buffer)
            self.buffer, self.pos = b"", 0
            if not self.more():
                return
        self.pos += size

    def find(self, needle: bytes, start: int = 0, limit: int | None = None) -> int:
        """Index of `needle` after the read position, reading more as needed; -1 if absent."""
        while True:
            index = self.buffer.find(needle, self.pos + start)
            if index >= 0:
                return index - self.pos
            start = max(start, self.available() - len(needle) + 1)
            if (limit is not None and self.available() > limit) or not self.more():
                return -1

    def skip_blank_lines(self) -> None:
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in b"\r\n":
                self.pos += 1
            if self.available() or not self.more():
                return


def _resync(stream: _Stream) -> bool:
    """Skip to the next line that starts a record; False at the end of the stream."""
    index = stream.find(b"\n" + RECORD_START)
    if index < 0:
        return False
    stream.drop(index + 1)
    return True


def _http(record_bytes: bytes) -> WarcRecord:
    """The record with its HTTP headers parsed and its body decoded.

    Some crawlers (ClueWeb09) stored bodies already decompressed under their original
    Content-Encoding header; such a body is taken as it is.
    """
    record = WarcRecord.from_bytes(record_bytes)
    try:
        # quirks_mode: ClueWeb09 and other crawlers end HTTP header lines with LF only.
        record.parse_http(auto_decode="all", quirks_mode=True)
    except OSError:
        record = WarcRecord.from_bytes(record_bytes)
        record.parse_http(auto_decode="transfer", quirks_mode=True)
    return record


def _page(record_bytes: bytes, offset: int, max_page_bytes: int) -> Page | None:
    """The HTML page in a response record, or None for anything else (not an error)."""
    record = _http(record_bytes)
    content_type = (record.http_content_type or "").lower()
    if not content_type.startswith(HTML_TYPES):
        return None
    html = record.reader.read(max_page_bytes)
    try:
        date = record.record_date
    except ValueError:
        date = None
    return Page(
        url=record.headers.get("WARC-Target-URI"),
        date=date.isoformat() if date else record.headers.get("WARC-Date"),
        record_id=record.headers.get("WARC-Record-ID"),
        html=html,
        offset=offset,
    )


def pages(
    chunks: Iterator[bytes], max_record_bytes: int, max_page_bytes: int
) -> Iterator[Page | BrokenRecord]:
    """HTML pages of a WARC stream, and a BrokenRecord for each record that cannot be read.

    Only response records are pages; requests, metadata and non-HTML responses are skipped
    silently. A page body longer than `max_page_bytes` is cut there (parsers take the
    prefix of an HTML document); a record longer than `max_record_bytes` is passed over
    without being held in memory.
    """
    stream = _Stream(chunks)
    while True:
        stream.skip_blank_lines()  # records are separated by CRLF CRLF
        if not stream.available():
            return
        offset = stream.offset
        stream.fill(len(RECORD_START))
        head_end = stream.find(HEADER_END, limit=MAX_HEADER_BYTES)
        head = stream.peek(head_end) if head_end >= 0 else b""
        length = _CONTENT_LENGTH.search(head)
        if not head.startswith(RECORD_START) or length is None:
            ended = (
                head_end < 0
                and stream.available() <= MAX_HEADER_BYTES
                and stream.peek(len(RECORD_START)) == RECORD_START
            )
            reason = "warc_truncated_record" if ended else "warc_malformed_record"
            yield BrokenRecord(reason, offset)
            if ended or not _resync(stream):
                return
            continue
        kind = _WARC_TYPE.search(head)
        is_response = kind is not None and kind.group(1).lower() == b"response"
        size = head_end + len(HEADER_END) + int(length.group(1))
        if size > max_record_bytes:
            stream.drop(size)
            if is_response:
                yield BrokenRecord("too_large", offset)
            continue
        complete = stream.fill(size)
        record_bytes = stream.peek(size)
        stream.drop(size)
        if not complete:
            if is_response:
                yield BrokenRecord("warc_truncated_record", offset)
            return
        if not is_response:
            continue
        try:
            page = _page(record_bytes, offset, max_page_bytes)
        except (OSError, ValueError):
            yield BrokenRecord("warc_malformed_record", offset)
            continue
        if page is not None:
            yield page
