"""Content and consent: documents whose site opted out, whose URL is blocked, or whose
words are dense in a language's listed words.

Rules are checked in that order, so a document that is both opted out and blocked is
counted as opted out. Documents without a URL pass the URL rules. Lists are loaded once
per worker (raypipe.blocklists, raypipe.wordlists cache them by file).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raypipe.batch import alive_texts, reject
from raypipe.blocklists import load_domains, load_opt_out, load_substrings, split_url
from raypipe.config import ContentConfig
from raypipe.io import storage
from raypipe.wordlists import BUILTIN, load_word_list

URL_COLUMN = "url"
LANGUAGE_COLUMN = "language"  # written by the langid stage when it runs


def list_files(cfg: ContentConfig) -> list[str]:
    """Every list file the stage will read."""
    words = cfg.bad_words.lists.values() if cfg.bad_words.enabled else []
    return [
        *cfg.opt_out,
        *cfg.blocked_domains,
        *cfg.blocked_url_substrings,
        *(uri for uri in words if uri != BUILTIN),
    ]


def lists_in_use(configs: list[ContentConfig]) -> list[tuple[str, int, int]]:
    """(uri, size, modified) of the list files of a run, so that a changed list means a new cleaning
    fingerprint; missing files are one error before the run starts."""
    wanted = sorted({uri for cfg in configs if cfg.active for uri in list_files(cfg)})
    if missing := [uri for uri in wanted if not storage.exists(uri)]:
        raise storage.StorageError(f"content list files not found: {', '.join(missing)}")
    return storage.expand(wanted) if wanted else []


class Content:
    name = "content"

    def __init__(self, cfg: ContentConfig):
        self.cfg = cfg
        # Rules with an empty list are None: a URL is not even parsed for them.
        self.opt_out = load_opt_out(tuple(cfg.opt_out)) if cfg.opt_out else None
        self.domains = load_domains(tuple(cfg.blocked_domains)) if cfg.blocked_domains else None
        self.substrings = (
            load_substrings(tuple(cfg.blocked_url_substrings))
            if cfg.blocked_url_substrings
            else None
        )
        bad = cfg.bad_words
        self.word_lists = (
            {lang: load_word_list(lang, uri) for lang, uri in bad.lists.items()}
            if bad.enabled
            else {}
        )

    def url_reason(self, url: str | None) -> str | None:
        url = (url or "").strip()
        if not url:
            return None
        host, path = split_url(url)
        if self.opt_out is not None and self.opt_out.match(host, path):
            return "opt_out"
        if self.domains is not None and self.domains.match(host):
            return "url_filter:domain"
        if self.substrings is not None and self.substrings.match(url):
            return "url_filter:substring"
        return None

    def words_reason(self, text: str, language: str | None) -> str | None:
        words = self.word_lists.get(language or "")
        if words is not None and words.share(text) > self.cfg.bad_words.max_ratio:
            return "bad_words"
        return None

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows, texts = alive_texts(batch)
        if not len(rows):
            return batch
        taken = pa.array(rows)
        urls = (
            batch[URL_COLUMN].take(taken).to_pylist()
            if self.cfg.url_rules and URL_COLUMN in batch.column_names
            else [None] * len(rows)
        )
        languages = (
            batch[LANGUAGE_COLUMN].take(taken).to_pylist()
            if LANGUAGE_COLUMN in batch.column_names
            else [self.cfg.bad_words.language] * len(rows)
        )
        reasons = np.full(batch.num_rows, None, dtype=object)
        reasons[rows] = [
            self.url_reason(url) or self.words_reason(text, language)
            for url, text, language in zip(urls, texts, languages, strict=True)
        ]
        return reject(batch, np.ones(batch.num_rows, bool), self.name, reasons)
