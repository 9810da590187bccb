"""The quality classifier: fastText trained on half of the bundled sample's books (keep) and
spam mails (drop) tells the other half apart, the CLI writes the model the stage loads, and
the same inputs and seed give the same model."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest
import zstandard
from typer.testing import CliRunner

from raypipe.batch import CORE_SCHEMA
from raypipe.cli import app
from raypipe.config import QualityConfig
from raypipe.quality.classifier import QualityModel, train
from raypipe.stages.langid import bundled_model
from raypipe.stages.quality import Quality

SAMPLE = Path(__file__).parents[2] / "examples" / "sample"


def records(name: str) -> list[dict]:
    with open(SAMPLE / name, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
        return [json.loads(line) for line in io.TextIOWrapper(z, encoding="utf-8")]


@pytest.fixture(scope="module")
def sets() -> dict[str, list[str]]:
    books = [r["text"] for r in records("gutenberg.jsonl.zst")]
    spam = [r["text"] for r in records("spamassassin.jsonl.zst") if r["label"] == "spam"]
    return {"books": books, "spam": spam}


@pytest.fixture(scope="module")
def model(sets, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("classifier") / "books-vs-spam.bin"
    train(sets["books"][::2], sets["spam"][::2], path)
    return path


def test_held_out_books_and_spam_are_told_apart(model, sets):
    scorer = QualityModel(model)
    books, spam = scorer.score(sets["books"][1::2]), scorer.score(sets["spam"][1::2])
    assert (books >= 0.5).mean() >= 0.95, books
    assert (spam < 0.5).mean() >= 0.9, spam
    assert books.min() > 0 and spam.max() < 1  # probabilities, not labels


def test_the_same_examples_and_seed_give_the_same_model(model, sets, tmp_path):
    again = tmp_path / "again.bin"
    train(sets["books"][::2], sets["spam"][::2], again)
    assert again.read_bytes() == model.read_bytes()


def test_train_classifier_command_and_stage(sets, tmp_path):
    for name, texts in (("keep", sets["books"][::2]), ("drop", sets["spam"][::2])):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t}) + "\n" for t in texts)
        )
    path = tmp_path / "quality.bin"
    args = ["train-classifier", "--positive", str(tmp_path / "keep.jsonl")]
    args += ["--negative", str(tmp_path / "drop.jsonl"), "--out", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "263 positive, 91 negative examples" in result.output

    cfg = QualityConfig(
        heuristic={"enabled": False}, classifier={"enabled": True, "model": str(path)}
    )
    texts = [sets["books"][1], sets["spam"][1], sets["books"][3]]
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
    assert out["reason"].to_pylist() == [None, "classifier:quality_score", None]
    scores = out["quality_score"].to_pylist()
    assert scores[1] < 0.5 <= min(scores[0], scores[2])


def test_a_classifier_needs_a_model_of_its_own_kind(sets, tmp_path):
    with pytest.raises(ValueError, match="train-classifier"):
        QualityConfig(classifier={"enabled": True})
    with pytest.raises(ValueError, match="no classifier at"):
        QualityModel(tmp_path / "missing.bin")
    with pytest.raises(ValueError, match="not a model written by"):
        QualityModel(bundled_model())  # a fastText model, but lid.176's 176 languages
    with pytest.raises(ValueError, match="both kinds"):
        train(sets["books"], [], tmp_path / "one-sided.bin")
