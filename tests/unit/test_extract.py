"""The extract stage: main content out of real pages, in any charset, NFC."""

import unicodedata
from pathlib import Path

import pyarrow as pa
import pytest

from raypipe.config import ExtractConfig, InputConfig
from raypipe.io.readers import read_file
from raypipe.stages.extract import Extract, decode_html

WEB = Path(__file__).parents[1] / "fixtures" / "web"
ENGINES = ["resiliparse", "trafilatura"]


def extracted(path: Path, engine: str) -> pa.Table:
    cfg = InputConfig(paths=[str(path)])
    batch = pa.concat_tables(list(read_file(str(path), 0, cfg, batch_docs=64)))
    return Extract(ExtractConfig(engine=engine))(batch)


@pytest.mark.parametrize("engine", ENGINES)
def test_main_content_without_navigation_or_footer(engine):
    table = extracted(WEB / "pages.warc.gz", engine)
    assert "html" not in table.column_names
    texts = table["text"].to_pylist()
    english, german = texts[0], texts[1]
    assert "six hours of direct sunlight" in english
    assert "Pinch out the side shoots" in english
    assert "About us" not in english and "All rights reserved" not in english
    assert "Kühlschrank" in german
    assert table["title"].to_pylist()[0] == "Growing tomatoes on a balcony"
    assert table["reason"].to_pylist() == [None, None, "warc_malformed_record", None, None, None]


@pytest.mark.parametrize("engine", ENGINES)
def test_charsets_are_detected(engine):
    russian = extracted(WEB / "pages.warc.gz", engine)["text"][4].as_py()
    assert "Старый город лучше всего осматривать пешком" in russian  # windows-1251 bytes
    latin1 = extracted(WEB / "page.html", engine)["text"][0].as_py()  # no charset declared
    assert "crème brûlée" in latin1


def test_decode_prefers_utf8_and_falls_back_to_the_declared_charset():
    assert decode_html("naïve".encode()) == "naïve"
    page = "<meta charset='koi8-r'><p>Привет, мир</p>"
    assert "Привет, мир" in decode_html(page.encode("koi8-r"))


def test_output_is_nfc_and_rows_without_html_pass_untouched():
    decomposed = "Cafe\u0301 au lait is a pleasant drink served in the morning in Paris."
    batch = pa.table(
        {
            "uid": [0, 1, 2],
            "id": ["a", "b", "c"],
            "source": ["s"] * 3,
            "text": ["", "already text", ""],
            "stage": pa.nulls(3, pa.string()),
            "reason": pa.nulls(3, pa.string()),
            "title": pa.nulls(3, pa.string()),
            "html": pa.array(
                [f"<html><body><p>{decomposed}</p></body></html>".encode(), None, b"<html></html>"],
                pa.binary(),
            ),
        }
    )
    out = Extract(ExtractConfig())(batch)
    text = out["text"][0].as_py()
    assert "Café" in text and text == unicodedata.normalize("NFC", text)
    assert out["text"][1].as_py() == "already text"
    assert out["reason"].to_pylist() == [None, None, "extract:empty"]
    assert out["stage"][2].as_py() == "extract"


def test_batches_without_html_are_returned_as_they_are():
    batch = pa.table({"text": ["x"], "reason": pa.nulls(1, pa.string())})
    assert Extract(ExtractConfig())(batch) is batch
