import pyarrow as pa

from raypipe.config import NormalizeConfig
from raypipe.stages.normalize import normalize_text


def clean(text: str, **options) -> str:
    return normalize_text(pa.array([text]), NormalizeConfig(**options))[0].as_py()


def test_html_is_stripped_and_entities_decoded():
    html = "<html><head><style>p{}</style></head><p>Caf&eacute; &amp; <b>bar</b></p><p>next</p>"
    assert clean(html) == "Caf&eacute; & bar\n\nnext"


def test_comparisons_are_not_tags():
    assert clean("if a < b and c > d: pass") == "if a < b and c > d: pass"


def test_non_ascii_is_kept_and_composed():
    decomposed = "Cafe\u0301 naïve 中文 العربية"
    assert clean(decomposed) == "Café naïve 中文 العربية"


def test_whitespace_and_control_characters():
    assert clean("a\x00b  \t c\r\n\r\n\r\n\r\nd   \n") == "ab c\n\nd"


def test_urls_removed_only_when_asked():
    text = "see https://example.org/x?y=1 and www.example.com now"
    assert clean(text) == text
    assert clean(text, remove_urls=True) == "see and now"


def test_disabled_html_stripping_keeps_markup():
    assert clean("<b>x</b>", strip_html=False) == "<b>x</b>"
