"""A model-based quality classifier, as the datasets after FineWeb filter with (DCLM's
fastText `hq` classifier, FineWeb-Edu's educational-value classifier): a fastText model
trained on examples of text to keep (positive) and text to drop (negative). A document's
score is the model's probability that it is positive.

The perplexity filter (raypipe.quality.perplexity) learns only what good text looks like;
this one also learns what the text to drop looks like, which is what it needs to tell
fluent spam or boilerplate from prose.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import fasttext
import numpy as np

POSITIVE, NEGATIVE = "__label__keep", "__label__drop"
# fastText's hashed n-gram table (words and word pairs): its default of 2M rows makes a
# model of 2M x dim floats (800 MB at dim 100); 200k rows keep it near 50 MB at dim 64
# and cost little accuracy on a classifier of two labels.
BUCKET = 200_000
MAX_CHARS = 100_000  # of a document, read by the model (a book's first pages judge it)
# fastText makes one update per example line: a book as one line would count as much as a
# one-line spam. Training cuts documents into pieces of this many words, so that every
# part of the examples counts; a score still reads the whole document (its words' mean).
EXAMPLE_WORDS = 256


def one_line(text: str) -> str:
    """A document as fastText reads one example: one line, lower case, words split by
    single spaces."""
    return " ".join(text[:MAX_CHARS].lower().split())


def examples(label: str, texts: Iterable[str]) -> Iterator[str]:
    """fastText training lines: `label` and up to EXAMPLE_WORDS words of a document."""
    for text in texts:
        words = one_line(text).split(" ")
        for start in range(0, len(words), EXAMPLE_WORDS):
            yield f"{label} {' '.join(words[start : start + EXAMPLE_WORDS])}"


def train(
    positive: Iterable[str],
    negative: Iterable[str],
    out: str | Path,
    *,
    epoch: int = 10,
    lr: float = 0.5,
    dim: int = 64,
    word_ngrams: int = 2,
    seed: int = 0,
) -> dict[str, int]:
    """Train on the two sets (shuffled with `seed`; one thread, so the same inputs give the
    same model) and save the model to `out`. Returns the examples of each label.

    The defaults learn from a few hundred examples (fastText's own, 5 epochs at lr 0.1, leave
    such a model near 0.5 for everything); a set of millions needs fewer epochs."""
    lines = list(examples(POSITIVE, positive))
    counts = {"positive": len(lines)}
    lines += examples(NEGATIVE, negative)
    counts["negative"] = len(lines) - counts["positive"]
    if not counts["positive"] or not counts["negative"]:
        raise ValueError(f"a classifier needs examples of both kinds, got {counts}")
    random.Random(seed).shuffle(lines)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as data:
        data.write("\n".join(lines) + "\n")
        data.flush()
        model = fasttext.train_supervised(
            input=data.name,
            epoch=epoch,
            lr=lr,
            dim=dim,
            wordNgrams=word_ngrams,
            bucket=BUCKET,
            thread=1,
            seed=seed,
            verbose=0,
        )
    model.save_model(str(out))
    return counts


class QualityModel:
    """A trained classifier, loaded once per worker."""

    def __init__(self, path: str | Path):
        if not Path(path).is_file():
            raise ValueError(f"no classifier at {path}: train one with `raypipe train-classifier`")
        # The class directly: fasttext.load_model prints a deprecation warning per load.
        self.model = fasttext.FastText._FastText(model_path=str(path))
        if set(self.model.get_labels()) != {POSITIVE, NEGATIVE}:
            raise ValueError(f"{path} is not a model written by `raypipe train-classifier`")

    def score(self, texts: list[str]) -> np.ndarray:
        """P(positive) for each text, in one batched call."""
        if not texts:
            return np.zeros(0)
        labels, probs = self.model.predict([one_line(t) for t in texts], k=2)
        return np.array(
            [
                dict(zip(label, prob, strict=True)).get(POSITIVE, 0.0)
                for label, prob in zip(labels, probs, strict=True)
            ]
        )
