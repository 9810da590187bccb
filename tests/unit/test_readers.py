import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from raypipe.config import InputConfig
from raypipe.io.readers import input_format, read_file


def read(path, **options) -> pa.Table:
    cfg = InputConfig(paths=[str(path)], **options)
    return pa.concat_tables(list(read_file(str(path), 3, cfg, batch_docs=4)))


def reasons(table: pa.Table) -> list:
    return table["reason"].to_pylist()


def test_format_from_extension():
    assert input_format("a/b.jsonl.zst", "auto") == "jsonl"
    assert input_format("s3://b/c.parquet", "auto") == "parquet"
    assert input_format("notes.txt.gz", "auto") == "text"
    assert input_format("x.json", "text") == "text"


def test_jsonl_rows_ids_and_uids(tmp_path):
    path = tmp_path / "docs.jsonl.gz"
    rows = [{"id": f"d{i}", "text": f"text {i}", "url": f"https://e.org/{i}"} for i in range(10)]
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    table = read(path, id_field="id")
    assert table["id"].to_pylist() == [r["id"] for r in rows]
    assert table["text"].to_pylist() == [r["text"] for r in rows]
    assert table["url"].to_pylist() == [r["url"] for r in rows]
    assert table["uid"].to_pylist() == [(3 << 32) | i for i in range(10)]
    assert table["source"].to_pylist() == ["docs"] * 10
    assert reasons(table) == [None] * 10


def test_bad_lines_become_rejects(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"id": "a", "text": "fine"}\n'
        b"{not json\n"
        b'\xff\xfe{"id": "b"}\n'
        b"[1, 2]\n"
        b'{"id": 7, "text": "integer ids are taken as strings"}\n'
        b'{"id": ["x"], "text": "list id"}\n'
        b'{"id": "c"}\n'
        b'{"id": "d", "text": 42}\n'
        b'{"text": "no id"}\n'
    )
    table = read(path, id_field="id")
    assert reasons(table) == [
        None,
        "malformed_json",
        "invalid_utf8",
        "not_an_object",
        None,
        "bad_id",
        "missing_text",
        "text_not_string",
        "missing_id",
    ]
    assert table["id"][4].as_py() == "7"
    assert table.filter(pa.compute.is_valid(table["reason"]))["text"].to_pylist() == [""] * 7


def test_a_utf8_bom_does_not_cost_the_first_document(tmp_path):
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n')
    table = read(path, id_field="id")
    assert reasons(table) == [None, None]
    assert table["text"].to_pylist() == ["first", "second"]


def test_file_level_rejects(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 40)
    for path, reason in [
        (empty, "empty_file"),
        (binary, "binary_file"),
        (tmp_path / "missing.jsonl", "unreadable_file"),
    ]:
        table = read(path)
        assert reasons(table) == [reason]
        assert table["id"].to_pylist() == [str(path)]


def test_truncated_zstd_keeps_rows_before_the_break(tmp_path):
    text = "".join(json.dumps({"text": f"document number {i} " * 50}) + "\n" for i in range(3000))
    whole = zstandard.ZstdCompressor().compress(text.encode())
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[: len(whole) // 2])
    table = read(path)
    assert reasons(table)[-1] == "truncated_file"
    kept = table["text"].to_pylist()[:-1]
    assert len(kept) > 100
    assert kept == [json.loads(line)["text"] for line in text.splitlines()[: len(kept)]]


def test_gigantic_line_is_skipped_not_held(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text(
        json.dumps({"text": "x" * 3_000_000}) + "\n" + json.dumps({"text": "ok"}) + "\n"
    )
    table = read(path, max_doc_bytes=1_000_000)
    assert reasons(table) == ["too_large", None]
    assert table["text"].to_pylist() == ["", "ok"]


def test_text_files_are_one_document(tmp_path):
    path = tmp_path / "note.txt"
    path.write_text("Ünïcode text stays.\n")
    table = read(path)
    assert table["text"].to_pylist() == ["Ünïcode text stays.\n"]
    assert table["id"].to_pylist() == [str(path)]
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9".encode("latin-1"))
    assert reasons(read(latin1)) == ["invalid_utf8"]


def test_parquet_input(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"doc": ["a b", "c d"], "key": ["k1", "k2"]}), path)
    table = read(path, text_field="doc", id_field="key")
    assert table["id"].to_pylist() == ["k1", "k2"]
    assert table["text"].to_pylist() == ["a b", "c d"]


def test_jsonl_and_parquet_give_the_same_reasons_for_the_same_records(tmp_path):
    import pyarrow.parquet as pq

    records = [
        {"id": "a", "text": "fine", "n": 1},
        {"id": "b", "text": None, "n": 2},
        {"id": None, "text": "no id", "n": 3},
        {"id": "c", "text": "é" * 40, "n": 4},  # 40 characters, 80 bytes: too large
    ]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "docs.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    tables = [read(p, id_field="id", max_doc_bytes=64) for p in (jsonl, parquet)]
    expected = [None, "missing_text", "missing_id", "too_large"]
    assert [reasons(t) for t in tables] == [expected, expected]
    assert tables[0]["source"].to_pylist() == tables[1]["source"].to_pylist()


def test_a_record_id_field_is_the_default_id_and_tags_come_from_each_record(tmp_path):
    path = tmp_path / "tagged.jsonl"
    rows = [
        {"id": "a1", "text": "one", "license": "cc-by-4.0", "consent": "explicit"},
        {"id": 7, "text": "two", "license": "cc0"},
        {"text": "three"},  # no id: where it was read
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read(path)
    assert table["id"].to_pylist() == ["a1", "7", f"{path}#2"]
    assert table["license"].to_pylist() == ["cc-by-4.0", "cc0", None]
    assert table["consent"].to_pylist() == ["explicit", None, None]
    assert reasons(table) == [None] * 3
    # A configured tag is the input's, for every record.
    assert read(path, license="odc-by")["license"].to_pylist() == ["odc-by"] * 3
    pq.write_table(pa.Table.from_pylist([rows[0], {**rows[1], "id": "b2"}]), tmp_path / "t.parquet")
    parquet = read(tmp_path / "t.parquet")
    assert parquet["id"].to_pylist() == ["a1", "b2"]
    assert parquet["license"].to_pylist() == ["cc-by-4.0", "cc0"]
