"""A real training loop on packed shards: the loader, the document mask and the model."""

import json

import pytest

from raypipe.ablate import model as lm
from raypipe.ablate.options import ModelShape
from raypipe.ablate.vocab import input_texts, train_bpe
from raypipe.config import ExtractConfig, InputConfig
from raypipe.tokenizer import load_tokenizer
from raypipe.workers import InputFile
from tests.integration.test_pipeline import run

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_training_on_the_shards_lowers_the_loss(local_ray, mini_corpus, tmp_path):
    files = [InputFile(str(mini_corpus), 0, 0, InputConfig(id_field="id"))]
    bpe = train_bpe(input_texts(files, ExtractConfig()), 1024, tmp_path / "bpe.json")
    out = tmp_path / "run"
    manifest = run(mini_corpus, out, tokenizer=str(bpe), **{"pack.seq_len": 64})
    loaded = load_tokenizer(str(bpe), None)
    shape = ModelShape(d_model=64, heads=2, batch_size=8, lr=1e-2)
    budget = 60 * shape.batch_size * 64
    model, record = lm.train(str(out), budget, shape, seed=0, loaded=loaded)
    assert record["steps"] == 60 and record["tokens"] == budget
    assert record["epochs"] == pytest.approx(budget / (manifest["sequences"] * 64))
    losses = [loss for _, loss in record["curve"]]
    assert losses[0] > 6.5  # about ln(1024): a fresh model guesses
    assert losses[-1] < losses[0] - 0.7, losses
    texts = [json.loads(line)["text"] for line in mini_corpus.read_text().splitlines()[:5]]
    scored = lm.bits_per_byte(model, texts, loaded, 64)
    untrained = lm.build_model(shape, loaded.vocab_size, 64, loaded.eos_id, seed=0)
    assert scored["bits_per_byte"] < lm.bits_per_byte(untrained, texts, loaded, 64)["bits_per_byte"]
