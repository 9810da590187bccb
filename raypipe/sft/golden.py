"""Distance of each example from a small golden set, in length and format: the examples
furthest from what the user holds up as excellent are the first to read."""

from __future__ import annotations

import numpy as np

from raypipe.sft.rules import FENCE, word_count
from raypipe.sft.schema import Example
from raypipe.sft.style import BULLET, HEADER, NUMBERED

FEATURES = (
    "answer words (log)",
    "prompt words (log)",
    "answer lines (log)",
    "list",
    "headers",
    "code",
)
# A spread floor keeps a feature the golden set never varies on from dominating every distance.
_MIN_SPREAD = 0.25


def features(example: Example) -> np.ndarray:
    answer = "\n\n".join(example.answers)
    prompt = "\n\n".join(example.prompts)
    return np.array(
        [
            np.log1p(word_count(answer)),
            np.log1p(word_count(prompt)),
            np.log1p(answer.count("\n") + 1),
            float(bool(BULLET.search(answer) or NUMBERED.search(answer))),
            float(bool(HEADER.search(answer))),
            float(bool(FENCE.search(answer))),
        ]
    )


def distances(examples: list[Example], golden: list[Example]) -> np.ndarray:
    """Root-mean-square z-score of each example's features against the golden set."""
    if not golden:
        raise ValueError("the golden set is empty")
    reference = np.stack([features(g) for g in golden])
    centre = reference.mean(axis=0)
    spread = np.maximum(reference.std(axis=0), _MIN_SPREAD)
    values = np.stack([features(e) for e in examples]) if examples else np.empty((0, len(FEATURES)))
    return np.sqrt((((values - centre) / spread) ** 2).mean(axis=1))
