"""PII masking: e-mails, phone numbers, IPs, card numbers, SSNs, IBANs and (optionally)
names are replaced in place, and each document counts what was masked, per entity, in
`pii_<entity>` counter columns that the run's accounting sums into the manifest."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from raypipe.batch import alive_texts, counter_column, scatter, set_column
from raypipe.config import ConfigError, PiiConfig
from raypipe.pii.detect import Detector
from raypipe.pii.mask import AllowList, Masker, placeholder, pseudonym, tag


def replacer(cfg: PiiConfig):
    if cfg.style == "tag":
        return tag
    if cfg.style == "placeholder":
        return placeholder
    salt = os.environ.get(cfg.salt_env, "")
    if not salt:
        raise ConfigError(
            f"pii.style hash needs a secret salt in the environment variable {cfg.salt_env}"
        )
    return pseudonym(salt.encode())


class Pii:
    name = "pii"

    def __init__(self, cfg: PiiConfig):
        self.entities = list(cfg.thresholds())
        self.masker = Masker(replacer(cfg), AllowList(cfg.allow))
        self.detector = Detector(cfg.thresholds())

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows, texts = alive_texts(batch)
        counts = {e: np.zeros(batch.num_rows, np.int32) for e in self.entities}
        if len(rows):
            masked = []
            for row, text, spans in zip(rows, texts, self.detector(texts), strict=True):
                text, found = self.masker(text, spans)
                masked.append(text)
                for entity, n in found.items():
                    counts[entity][row] = n
            batch = set_column(batch, "text", scatter(batch, rows, masked, "text"))
        for entity, column in counts.items():
            batch = set_column(batch, counter_column("pii", entity.lower()), pa.array(column))
        return batch
