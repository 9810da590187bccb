"""The classic cleaning, vectorized with Arrow's compiled string kernels.

Never strips accents or non-Latin scripts: only markup, control characters and
whitespace runs change (and URLs when asked).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from raypipe.batch import set_column
from raypipe.config import NormalizeConfig

# RE2 patterns (Arrow's regex engine): linear time on any input, no backtracking blowups.
_SCRIPT_STYLE = r"(?is)<(?:script|style|noscript)\b.*?</(?:script|style|noscript)\s*>"
_COMMENT = r"(?s)<!--.*?-->"
_BLOCKS = "p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|header|footer|pre|blockquote"
_BLOCK_TAG = rf"(?i)</?(?:{_BLOCKS})\b[^<>]*>"
_TAG = r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"
_ENTITIES = {"&nbsp;": " ", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&apos;": "'"}
_URL = r"(?i)\b(?:https?://|www\.)[^\s<>\"']+"
_CONTROL = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]"
_SPACES = "[ \t\u00a0\u3000]+"


def _strip_html(text: pa.Array) -> pa.Array:
    for pattern in (_SCRIPT_STYLE, _COMMENT):
        text = pc.replace_substring_regex(text, pattern, "")
    # Block-level tags end a paragraph; inline tags vanish without a trace.
    text = pc.replace_substring_regex(text, _BLOCK_TAG, "\n")
    text = pc.replace_substring_regex(text, _TAG, "")
    for entity, char in _ENTITIES.items():
        text = pc.replace_substring(text, entity, char)
    return pc.replace_substring(text, "&amp;", "&")  # last, so "&amp;lt;" stays "&lt;"


def normalize_text(text: pa.Array, cfg: NormalizeConfig) -> pa.Array:
    """Cleaned texts: markup, URLs (optional), control characters, whitespace runs."""
    text = pc.replace_substring(text, "\r\n", "\n")
    text = pc.replace_substring(text, "\r", "\n")
    if cfg.strip_html:
        text = _strip_html(text)
    if cfg.remove_urls:
        text = pc.replace_substring_regex(text, _URL, "")
    text = pc.replace_substring_regex(text, _CONTROL, "")
    text = pc.replace_substring_regex(text, _SPACES, " ")
    text = pc.replace_substring_regex(text, " ?\n ?", "\n")
    text = pc.replace_substring_regex(text, "\n{3,}", "\n\n")
    text = pc.utf8_trim_whitespace(text)
    if cfg.nfc:
        text = pc.utf8_normalize(text, form="NFC")
    return text


class Normalize:
    name = "normalize"

    def __init__(self, cfg: NormalizeConfig):
        self.cfg = cfg

    def __call__(self, batch: pa.Table) -> pa.Table:
        # Rejected rows hold "", so the kernels can run over the whole column.
        return set_column(batch, "text", normalize_text(batch["text"], self.cfg))
