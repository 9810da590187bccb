"""HTML to the text a reader sees: main content only, no navigation, menus, footers or ads.

Acts only on rows that carry raw `html` bytes (WARC, HTML files, an input.html_field);
other rows pass untouched. The page's charset is detected when its bytes are not UTF-8.
The `html` column is dropped once the text is out, so checkpoints hold text only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree

from raypipe.batch import alive, reject, scatter, set_column
from raypipe.config import ExtractConfig

EMPTY = "extract:empty"


def decode_html(data: bytes) -> str:
    """Page bytes as text: UTF-8 when they are, else the charset the page declares or shows."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        encoding = detect_encoding(data, from_html_meta=True)
        return bytes_to_str(data, encoding)


def resiliparse_text(html: str) -> tuple[str, str | None]:
    tree = HTMLTree.parse(html)
    text = extract_plain_text(
        tree, main_content=True, preserve_formatting=True, list_bullets=False, alt_texts=False
    )
    return text, tree.title or None


def trafilatura_text(html: str) -> tuple[str, str | None]:
    import trafilatura  # imported only when chosen: it takes ~1 s to load

    text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
    # Parsing for the title alone is cheap next to trafilatura's extraction.
    return text, HTMLTree.parse(html).title or None


ENGINES: dict[str, Callable[[str], tuple[str, str | None]]] = {
    "resiliparse": resiliparse_text,
    "trafilatura": trafilatura_text,
}


class Extract:
    name = "extract"

    def __init__(self, cfg: ExtractConfig):
        self.extract = ENGINES[cfg.engine]

    def __call__(self, batch: pa.Table) -> pa.Table:
        if "html" not in batch.column_names:
            return batch
        has_html = pc.is_valid(batch["html"]).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(alive(batch) & has_html)
        if len(rows):
            pages = batch["html"].take(pa.array(rows)).to_pylist()
            texts, titles = zip(*(self.extract(decode_html(page)) for page in pages), strict=True)
            normalized = pc.utf8_normalize(pa.array(texts, pa.string()), form="NFC")
            batch = set_column(batch, "text", scatter(batch, rows, normalized.to_pylist(), "text"))
            found = np.full(batch.num_rows, None, dtype=object)
            found[rows] = titles
            # A title the input already had (e.g. a Parquet column) wins over the page's own.
            title = pc.coalesce(batch["title"], pa.array(found, pa.string()))
            batch = set_column(batch, "title", title)
            empty = np.zeros(batch.num_rows, bool)
            blank = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(normalized)), 0)
            empty[rows] = blank.to_numpy(zero_copy_only=False)
            batch = reject(batch, empty, self.name, EMPTY)
        return batch.drop_columns(["html"])
