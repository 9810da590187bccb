"""Quality filters: documents that are not prose a model should learn from.

Rules run in the order of FineWeb's recipe: heuristic, gopher_repetition, gopher_quality,
c4, fineweb, perplexity; the first rule a document fails names its reason. c4 also removes
the lines that are not sentences, and the rules after it see the cleaned page. With
perplexity on, every document that reaches it gets its score in the column `bits_per_byte`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raypipe.batch import alive_texts, reject, scatter, set_column
from raypipe.config import QualityConfig
from raypipe.quality.c4 import clean_page
from raypipe.quality.fineweb import fineweb_reason
from raypipe.quality.gopher import quality_reason, repetition_reason
from raypipe.quality.heuristic import heuristic_reasons
from raypipe.quality.perplexity import ByteLM
from raypipe.quality.words import splitter


class Quality:
    name = "quality"

    def __init__(self, cfg: QualityConfig):
        self.cfg = cfg
        self.word_rules = [
            rule
            for rule in (cfg.gopher_repetition, cfg.gopher_quality, cfg.c4, cfg.fineweb)
            if rule.enabled
        ]
        # loads spaCy's tokenizer rules once per worker, only when a rule counts words
        self.split = splitter() if self.word_rules else None
        self.lm = ByteLM.load(cfg.perplexity.model) if cfg.perplexity.enabled else None

    def judge(self, text: str, language: str | None) -> tuple[str | None, str]:
        """(reason or None, the text as the word-counting rules leave it)."""
        cfg = self.cfg
        words: list[str] | None = None
        for rule in self.word_rules:
            if language is not None and rule.languages and language not in rule.languages:
                continue
            if rule is cfg.c4:
                reason, cleaned = clean_page(text, self.split, rule)
                if cleaned != text:
                    text, words = cleaned, None
            else:
                words = self.split(text) if words is None else words
                if rule is cfg.gopher_repetition:
                    reason = repetition_reason(text, words, rule)
                elif rule is cfg.gopher_quality:
                    reason = quality_reason(text, words, rule)
                else:
                    reason = fineweb_reason(text, words, rule)
            if reason:
                return reason, text
        return None, text

    def perplexity(self, text: str) -> tuple[str | None, float | None]:
        score = self.lm.bits_per_byte(text)
        too_high = score is not None and score > self.cfg.perplexity.max_bits_per_byte
        return ("perplexity:bits_per_byte" if too_high else None), score

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows, texts = alive_texts(batch)
        if not (self.cfg.heuristic.enabled or self.word_rules or self.lm):
            return batch
        languages = (
            batch["language"].take(pa.array(rows)).to_pylist()
            if "language" in batch.column_names
            else [None] * len(rows)
        )
        reasons = np.full(batch.num_rows, None, dtype=object)
        scores = np.full(batch.num_rows, np.nan)
        changed_rows, changed_texts = [], []
        heuristic = (
            heuristic_reasons(texts, self.cfg.heuristic)
            if self.cfg.heuristic.enabled
            else [None] * len(texts)
        )
        for row, text, language, reason in zip(
            rows.tolist(), texts, languages, heuristic, strict=True
        ):
            reasons[row], kept = (reason, text) if reason else self.judge(text, language)
            if self.lm and reasons[row] is None:
                reasons[row], scores[row] = self.perplexity(kept)
            if kept != text:
                changed_rows.append(row)
                changed_texts.append(kept)
        if self.lm:
            batch = set_column(batch, "bits_per_byte", pa.array(scores, from_pandas=True))
        if changed_rows:
            batch = set_column(
                batch, "text", scatter(batch, np.array(changed_rows), changed_texts, "text")
            )
        return reject(batch, np.ones(batch.num_rows, bool), self.name, reasons)
