"""Per-document stages. Each is a callable class built once per worker from its config
section, taking and returning a document batch (see raypipe.batch): it looks only at alive
rows, rejects with a named reason, and may add columns. Stage logic never imports Ray."""

from typing import Protocol

import pyarrow as pa


class Stage(Protocol):
    name: str

    def __call__(self, batch: pa.Table) -> pa.Table: ...
