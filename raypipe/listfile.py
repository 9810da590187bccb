"""User-supplied list files: plain text, one entry a line, `#` starts a comment.

Lists live in local files or s3:// objects (optionally .gz or .zst) and are read whole:
they are loaded once per worker, never per batch.
"""

from __future__ import annotations

import io

from raypipe.config import ConfigError
from raypipe.io import storage
from raypipe.io.compression import TruncatedInput, chunks


def read_text(uri: str) -> str:
    try:
        data = b"".join(chunks(uri, io.BytesIO(storage.read_bytes(uri))))
        return data.decode("utf-8")
    except FileNotFoundError:
        raise storage.StorageError(f"list file not found: {uri}") from None
    except (OSError, TruncatedInput) as error:
        raise storage.StorageError(f"cannot read list file {uri}: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"list file {uri} is not UTF-8 text (byte {error.start})") from None


def without_comment(line: str) -> str:
    """The entry of a line: a `#` opens a comment at the start of a line or after a space;
    inside an entry (a URL fragment) it is part of the entry."""
    if "#" in line:
        line = "" if line.lstrip().startswith("#") else line.split(" #", 1)[0]
        line = line.split("\t#", 1)[0]
    return line.strip()


def numbered(text: str) -> list[tuple[int, str]]:
    """(line number, entry) of every line with an entry."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if line := without_comment(line):
            found.append((number, line))
    return found


def entries(uri: str) -> list[tuple[int, str]]:
    return numbered(read_text(uri))


def malformed(uri: str, number: int, line: str, expected: str) -> ConfigError:
    return ConfigError(f"{uri}:{number}: expected {expected}, got {line!r}")
