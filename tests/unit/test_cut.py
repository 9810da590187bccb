"""Percentile cuts: order-preserving keys and the exact k-th worst from two histograms."""

from __future__ import annotations

import numpy as np
import pytest

from raypipe.config import QualityConfig
from raypipe.cut import cuts, histogram, keys, kth_worst, score_of


def kth_worst_key(key: np.ndarray, k: int) -> int:
    high, rank = kth_worst(histogram(key, None), k)
    low, _ = kth_worst(histogram(key, high), rank)
    return high << 16 | low


@pytest.mark.parametrize("higher_is_worse", [True, False])
def test_keys_order_scores_worst_last_and_invert(higher_is_worse):
    scores = np.array([-3.5, -0.0, 0.0, 1e-30, 2.25, 2.2500002, 7.0, np.inf])
    key = keys(scores, higher_is_worse)
    order = np.argsort(key, kind="stable")
    expected = np.argsort(scores if higher_is_worse else -scores, kind="stable")
    assert [scores[i] for i in order] == [scores[i] for i in expected]
    for score, k in zip(scores.tolist(), key.tolist(), strict=True):
        assert score_of(k, higher_is_worse) == np.float32(score)


def test_the_kth_worst_is_exact_across_bins_and_ties():
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(3.0, 0.4, 100_000), np.full(50, 9.0)])
    key = keys(scores, higher_is_worse=True)
    ranked = np.sort(key)[::-1]
    for k in (1, 50, 51, 777, 20_000, len(key)):
        assert kth_worst_key(key, k) == ranked[k - 1]
    assert score_of(kth_worst_key(key, 50), True) == 9.0  # 50 tied at the top


def test_cuts_follow_the_options():
    assert cuts(QualityConfig()) == []
    cfg = QualityConfig(
        perplexity={"enabled": True, "model": "m.lm", "drop_worst": 0.2},
        classifier={"enabled": True, "model": "m.bin", "drop_worst": 0.1},
    )
    found = [(c.reason, c.column, c.share, c.higher_is_worse) for c in cuts(cfg)]
    assert found == [
        ("perplexity:drop_worst", "bits_per_byte", 0.2, True),
        ("classifier:drop_worst", "quality_score", 0.1, False),
    ]
    with pytest.raises(ValueError):
        QualityConfig(perplexity={"enabled": True, "model": "m.lm", "drop_worst": 1.0})
