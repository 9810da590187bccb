"""Reading web input: WARC records, HTML files, and an html field in JSONL/Parquet."""

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from raypipe.config import InputConfig
from raypipe.io.readers import input_format, read_file
from raypipe.io.warc import Page, pages

WEB = Path(__file__).parents[1] / "fixtures" / "web"
URLS = [
    "https://garden.example/tomatoes",
    "https://backen.example/sauerteig",
    None,  # the damaged record
    "https://montagne.example/randonnee",
    "https://gorod.example/progulka",
    "https://cocina.example/gazpacho",
]


def read(path, **options) -> pa.Table:
    cfg = InputConfig(paths=[str(path)], **options)
    return pa.concat_tables(list(read_file(str(path), 1, cfg, batch_docs=2)))


def test_web_formats_from_extension():
    assert input_format("crawl/CC-MAIN-0001.warc.gz", "auto") == "warc"
    assert input_format("a.warc", "auto") == "warc"
    assert input_format("site/index.html", "auto") == "html"
    assert input_format("site/index.HTM", "auto") == "html"


def test_warc_reads_html_responses_only_and_rejects_the_damaged_record():
    table = read(WEB / "pages.warc.gz")
    # warcinfo, request and the PNG response are not documents; the damaged record is one.
    assert table["url"].to_pylist() == URLS
    assert table["reason"].to_pylist() == [None, None, "warc_malformed_record", None, None, None]
    assert set(table["stage"].drop_null().to_pylist()) == {"read"}
    assert table["date"].to_pylist()[0] == "2026-03-01T12:00:00+00:00"
    html = table["html"].to_pylist()
    assert html[2] is None
    assert b"Growing tomatoes" in html[0]
    assert "Прогулка".encode("windows-1251") in html[4]  # bytes as served, decoded later
    assert b"gazpacho" in html[5]  # Content-Encoding: gzip undone
    assert table.schema.field("html").type == pa.binary()


def test_truncated_warc_keeps_the_records_before_the_break():
    table = read(WEB / "truncated.warc")
    assert table["url"].to_pylist() == [*URLS[:4], None]
    assert table["reason"].to_pylist() == [
        None,
        None,
        "warc_malformed_record",
        None,
        "warc_truncated_record",
    ]


def test_truncated_gzip_warc_keeps_pages_and_rejects_the_file(tmp_path):
    data = (WEB / "pages.warc.gz").read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    table = read(cut)
    assert table["url"].to_pylist()[:2] == URLS[:2]
    assert table["reason"].to_pylist()[-1] == "truncated_file"


def test_framing_does_not_depend_on_chunk_boundaries():
    data = gzip.decompress((WEB / "pages.warc.gz").read_bytes())

    def run(size: int) -> list:
        chunks = (data[i : i + size] for i in range(0, len(data), size))
        return [(type(p).__name__, p.offset) for p in pages(chunks, 10_000_000, 1 << 20)]

    whole = run(len(data))
    assert len(whole) == 6
    for size in (1, 7, 100, 4096):
        assert run(size) == whole


def test_page_cap_and_record_cap():
    data = gzip.decompress((WEB / "pages.warc.gz").read_bytes())
    capped = [p for p in pages(iter([data]), 10_000_000, 300) if isinstance(p, Page)]
    assert [len(p.html) for p in capped] == [300] * 5
    # Too large to hold is decided before the record is read: the PNG response counts too.
    small = [p.reason for p in pages(iter([data]), 200, 1 << 20)]
    assert small.count("too_large") == 6 and "warc_malformed_record" in small


def test_html_file_is_one_page(tmp_path):
    table = read(WEB / "page.html")
    assert table["id"].to_pylist() == [str(WEB / "page.html")]
    assert table["html"].to_pylist()[0].startswith(b"<!doctype html>")
    assert read(WEB / "page.html", max_page_bytes=1024)["html"][0].as_py() is not None
    big = tmp_path / "big.html"
    big.write_bytes(b"<p>" + b"x" * 5000)
    assert len(read(big, max_page_bytes=1024)["html"][0].as_py()) == 1024


def test_html_field_in_jsonl_and_parquet(tmp_path):
    rows = [
        {"id": "a", "html": "<p>Hallo Welt</p>", "url": "https://a.example/", "text": None},
        {"id": "b", "html": None, "url": None, "text": "plain text row"},
    ]
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "pages.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    for path in (jsonl, parquet):
        table = read(path, id_field="id", html_field="html")
        assert table["html"].to_pylist() == [b"<p>Hallo Welt</p>", None]
        assert table["text"].to_pylist() == ["", "plain text row"]
        assert table["url"].to_pylist() == ["https://a.example/", None]
    assert "html" not in read(jsonl, id_field="id").column_names


def test_every_line_of_a_corrupt_warc_is_accounted_for(tmp_path):
    junk = tmp_path / "junk.warc"
    junk.write_bytes(b"not a warc file at all\n" * 10)
    assert read(junk)["reason"].to_pylist() == ["warc_malformed_record"]
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(gzip.compress(b""))
    assert read(empty)["reason"].to_pylist() == ["empty_file"]


def test_a_warc_page_is_known_by_its_record_id_or_by_the_field_named():
    table = read(WEB / "pages.warc.gz")
    ids = table["id"].to_pylist()
    kept = [i for i, reason in zip(ids, table["reason"].to_pylist(), strict=True) if not reason]
    assert all(i.startswith("<urn:uuid:") and i.endswith(">") for i in kept), kept
    assert len(set(kept)) == len(kept)
    by_url = read(WEB / "pages.warc.gz", id_field="url")
    assert [i for i, u in zip(by_url["id"].to_pylist(), URLS, strict=True) if u] == [
        u for u in URLS if u
    ]
