"""Document batches for stage tests: the columns a reader gives (the core ones and a null
`url`), every document alive."""

import pyarrow as pa

from raypipe.batch import CORE_SCHEMA


def document_batch(
    texts: list[str],
    first_uid: int = 0,
    source: str = "test",
    id_prefix: str = "d",
    languages: list[str | None] | None = None,
) -> pa.Table:
    n = len(texts)
    table = pa.table(
        {
            "uid": pa.array(range(first_uid, first_uid + n), pa.int64()),
            "id": [f"{id_prefix}{first_uid + i}" for i in range(n)],
            "source": [source] * n,
            "text": texts,
            "stage": pa.nulls(n, pa.string()),
            "reason": pa.nulls(n, pa.string()),
        },
        schema=CORE_SCHEMA,
    ).append_column("url", pa.nulls(n, pa.string()))
    return table if languages is None else table.append_column("language", pa.array(languages))


def document_keys(n: int) -> dict[str, list]:
    """The id, source and url columns of `n` documents, as shards' documents tables get them."""
    return {
        "id": [f"d{i}" for i in range(n)],
        "source": ["test"] * n,
        "url": [f"https://example.org/{i}" if i % 2 else None for i in range(n)],
    }
