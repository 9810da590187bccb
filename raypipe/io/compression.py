"""Transparent .gz/.zst decompression that tells a truncated file from a complete one.

Library stream readers either stop silently at a truncated end (python zstandard) or
drop the last good chunk when raising (pyarrow). Feeding decompression objects by hand
keeps every byte before the break and reports the break itself.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

import zstandard

RAW_CHUNK = 1 << 20


class TruncatedInput(ValueError):
    """The compressed stream ended before its last frame was complete."""


def _decompressor(uri: str) -> Callable[[], object] | None:
    name = uri.lower()
    if name.endswith((".zst", ".zstd")):
        return lambda: zstandard.ZstdDecompressor().decompressobj()
    if name.endswith(".gz"):
        return lambda: zlib.decompressobj(zlib.MAX_WBITS | 32)
    return None


def chunks(uri: str, raw: BinaryIO) -> Iterator[bytes]:
    """Decompressed bytes of `raw` (named `uri`) in chunks; TruncatedInput at a broken end."""
    make = _decompressor(uri)
    if make is None:
        while chunk := raw.read(RAW_CHUNK):
            yield chunk
        return
    state, pending = make(), False
    while chunk := raw.read(RAW_CHUNK):
        while chunk:
            try:
                out = state.decompress(chunk)
            except (zlib.error, zstandard.ZstdError) as error:
                raise TruncatedInput(f"corrupt compressed data: {error}") from None
            pending = not state.eof
            if out:
                yield out
            chunk = state.unused_data if state.eof else b""
            if state.eof:
                state = make()  # concatenated frames / gzip members
    if pending:
        raise TruncatedInput("compressed stream ends mid-frame")
