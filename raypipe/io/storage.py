"""Local paths and s3:// URIs behind one small API, with atomic publication.

A file becomes visible only once complete: local files are written to a temporary name
and renamed; an S3 object only appears when its upload completes. Credentials come from
the standard AWS environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
AWS_PROFILE); the endpoint from AWS_ENDPOINT_URL (for S3-compatible stores). None of them
is ever printed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import tempfile
import uuid
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

PREFLIGHT_ATTEMPTS = 2


class StorageError(RuntimeError):
    """Storage that cannot be reached or read: stops a run with one clear message."""


def is_remote(uri: str) -> bool:
    return uri.startswith("s3://")


def _s3(attempts: int) -> pafs.S3FileSystem:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    options: dict = {
        "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        # Throttling (SlowDown) and transient errors are retried with backoff.
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=attempts),
    }
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        options.update(endpoint_override=parsed.netloc, scheme=parsed.scheme)
    return pafs.S3FileSystem(**{k: v for k, v in options.items() if v is not None})


def filesystem(uri: str, attempts: int = 10) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding `uri` and the path of `uri` inside it.

    Work inside a run retries patiently (throttling passes); the checks before a run
    starts use few attempts, so that unreachable storage is reported in seconds.
    """
    if is_remote(uri):
        return _s3(attempts), uri[len("s3://") :].rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(uri)


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *parts])


def _as_uri(template: str, path: str) -> str:
    return f"s3://{path}" if is_remote(template) else path


def expand(patterns: list[str]) -> list[tuple[str, int, int]]:
    """Sorted (uri, size, modified) of the files named by paths, folders (recursively) and
    globs; `modified` (ns since the epoch, 0 where unknown) tells a rewritten file from the
    one a checkpoint was made of, even when its size is the same.

    A pattern that names nothing is an error: a typo must not become an empty run.
    """
    found: dict[str, tuple[int, int]] = {}
    for pattern in patterns:
        fs, path = filesystem(pattern, attempts=PREFLIGHT_ATTEMPTS)
        if any(ch in path for ch in "*?["):
            base = path[: min(path.find(ch) for ch in "*?[" if ch in path)].rsplit("/", 1)[0]
            infos = [i for i in _list(fs, base or "/", pattern) if fnmatch.fnmatch(i.path, path)]
            if not infos:
                raise StorageError(f"input matches no file: {pattern}")
        else:
            info = _info(fs, path, pattern)
            if info.type == pafs.FileType.Directory:
                infos = _list(fs, path, pattern)
            elif info.type == pafs.FileType.File:
                infos = [info]
            else:
                raise StorageError(f"input not found: {pattern}")
        found.update((_as_uri(pattern, i.path), (i.size or 0, _modified(i))) for i in infos)
    if not found:
        raise StorageError(f"no input files under {', '.join(patterns)}")
    return [(uri, size, modified) for uri, (size, modified) in sorted(found.items())]


def _modified(info: pafs.FileInfo) -> int:
    return int(info.mtime.timestamp() * 1e9) if info.mtime is not None else 0


def _info(fs: pafs.FileSystem, path: str, uri: str) -> pafs.FileInfo:
    try:
        return fs.get_file_info(path)
    except OSError as error:
        raise StorageError(f"cannot reach {uri}: {error}") from None


def _list(fs: pafs.FileSystem, base: str, uri: str) -> list[pafs.FileInfo]:
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except OSError as error:
        raise StorageError(f"cannot list {uri}: {error}") from None
    hidden = ("/_", "/.")
    return [
        i
        for i in infos
        if i.type == pafs.FileType.File and not any(h in i.path[len(base) :] for h in hidden)
    ]


def exists(uri: str) -> bool:
    fs, path = filesystem(uri)
    return _info(fs, path, uri).type != pafs.FileType.NotFound


def read_bytes(uri: str) -> bytes:
    fs, path = filesystem(uri)
    with fs.open_input_stream(path, compression=None) as stream:
        return stream.read()


def write_atomic(uri: str, data: bytes) -> None:
    """Publish `data` at `uri` so that a reader sees all of it or nothing."""
    fs, path = filesystem(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    if is_remote(uri):
        with fs.open_output_stream(path) as out:
            out.write(data)
        return
    temporary = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def write_table(uri: str, table: pa.Table) -> None:
    """Publish `table` at `uri` as one Parquet file (zstd), atomically."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    write_atomic(uri, sink.getvalue().to_pybytes())


def read_table(uri: str, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file (its `columns`, else all), local or remote."""
    fs, path = filesystem(uri)
    with fs.open_input_file(path) as handle:
        return pq.read_table(handle, columns=columns)


def files(folder: str, suffix: str) -> list[str]:
    """Sorted URIs of the files under `folder` whose names end with `suffix` (none when
    the folder is missing); names starting with `_` or `.` are not listed."""
    fs, path = filesystem(folder)
    return sorted(
        _as_uri(folder, i.path) for i in _list(fs, path, folder) if i.path.endswith(suffix)
    )


def remove(uri: str) -> None:
    """Delete a file or a folder with everything in it; nothing there is fine."""
    fs, path = filesystem(uri)
    kind = _info(fs, path, uri).type
    if kind == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif kind == pafs.FileType.File:
        fs.delete_file(path)


def make_dirs(uri: str) -> None:
    fs, path = filesystem(uri, attempts=PREFLIGHT_ATTEMPTS)
    try:
        fs.create_dir(path, recursive=True)
    except OSError as error:
        raise StorageError(f"cannot write to {uri}: {error}") from None


class Spool:
    """A file built front to back on local disk, then published at `uri` whole.

    Local files grow under a temporary name beside `uri` and are renamed; for object
    storage the file grows in the local temporary folder and is uploaded in blocks, so
    memory stays at one block however large the file. The bytes may be patched in place
    before publishing (a header whose sizes are known only at the end).
    """

    BLOCK = 8 << 20

    def __init__(self, uri: str) -> None:
        self.uri = uri
        fs, path = filesystem(uri)
        if is_remote(uri):
            handle, self.path = tempfile.mkstemp(suffix=".spool")
            os.close(handle)
        else:
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            self.path = f"{path}.{uuid.uuid4().hex}.tmp"
        self.file = open(self.path, "w+b")  # noqa: SIM115 (closed by publish or discard)

    def publish(self) -> str:
        """Make the file visible at `uri`; returns the sha256 of its bytes."""
        digest = hashlib.sha256()
        self.file.flush()
        self.file.seek(0)
        try:
            if is_remote(self.uri):
                fs, path = filesystem(self.uri)
                with fs.open_output_stream(path) as out:
                    while block := self.file.read(self.BLOCK):
                        digest.update(block)
                        out.write(block)
            else:
                while block := self.file.read(self.BLOCK):
                    digest.update(block)
                os.fsync(self.file.fileno())
                os.replace(self.path, filesystem(self.uri)[1])
        finally:
            self.discard()
        return digest.hexdigest()

    def discard(self) -> None:
        self.file.close()
        if os.path.exists(self.path):
            os.remove(self.path)
