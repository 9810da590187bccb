"""The perplexity filter: a byte n-gram model trained on half of the bundled sample books
scores the other half's prose better than keyword spam and navigation boilerplate."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import zstandard
from typer.testing import CliRunner

from raypipe.batch import CORE_SCHEMA
from raypipe.cli import app
from raypipe.config import QualityConfig
from raypipe.quality.perplexity import ByteLM
from raypipe.stages.quality import Quality

BOOKS = Path(__file__).parents[2] / "examples" / "sample" / "gutenberg.jsonl.zst"
KEYWORDS = "cheap viagra online buy now best price discount pills free shipping casino poker"
BOILERPLATE = "Home | About Us | Contact | Privacy Policy | Terms of Use | Sitemap | Login"


def books() -> list[str]:
    with open(BOOKS, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        return [json.loads(line)["text"] for line in io.TextIOWrapper(stream, encoding="utf-8")]


@pytest.fixture(scope="module")
def halves() -> tuple[ByteLM, list[str]]:
    texts = books()
    return ByteLM.train(texts[::2]), [t[2000:5000] for t in texts[1::2][:10]]


def test_held_out_prose_scores_better_than_spam_and_boilerplate(halves):
    lm, held_out = halves
    prose = [lm.bits_per_byte(text) for text in held_out]
    assert max(prose) < lm.bits_per_byte(KEYWORDS) < lm.bits_per_byte(BOILERPLATE)


def test_model_is_a_distribution():
    lm = ByteLM.train(["abracadabra", "banana"], order=2)
    table = np.exp2(lm.log2p.astype(np.float64)).reshape(256, 256)
    assert np.allclose(table.sum(1), 1, atol=1e-5)  # every context sums to one
    assert lm.bits_per_byte("") is None
    assert lm.bits_per_byte("abra") < lm.bits_per_byte("zzzz")


def test_train_lm_command_and_stage(tmp_path, halves):
    _, held_out = halves
    reference = tmp_path / "ref.jsonl"
    reference.write_text("".join(json.dumps({"text": t}) + "\n" for t in books()[::2]))
    model = tmp_path / "books.lm"
    result = CliRunner().invoke(
        app, ["train-lm", str(reference), "--out", str(model), "--order", "2"]
    )
    assert result.exit_code == 0, result.output

    cut = ByteLM.load(model).bits_per_byte(KEYWORDS)  # keywords just pass, boilerplate does not
    cfg = QualityConfig(
        heuristic={"enabled": False},
        perplexity={"enabled": True, "model": str(model), "max_bits_per_byte": cut},
    )
    texts = [held_out[0], KEYWORDS, BOILERPLATE]
    batch = pa.table(
        {
            "uid": pa.array([0, 1, 2], pa.int64()),
            "id": ["a", "b", "c"],
            "source": ["t"] * 3,
            "text": texts,
            "stage": pa.nulls(3, pa.string()),
            "reason": pa.nulls(3, pa.string()),
        },
        schema=CORE_SCHEMA,
    )
    out = Quality(cfg)(batch)
    assert out["reason"].to_pylist() == [None, None, "perplexity:bits_per_byte"]
    scores = out["bits_per_byte"].to_pylist()
    assert scores[0] < scores[1] < scores[2]
    assert scores[1] == pytest.approx(cut)
    assert not any(math.isnan(s) for s in scores)


def test_perplexity_needs_a_model(tmp_path):
    with pytest.raises(ValueError, match="train-lm"):
        QualityConfig(perplexity={"enabled": True})
    bad = tmp_path / "not-a-model"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="not a model"):
        ByteLM.load(bad)
