"""The ablation's parts without Ray: the model's masking, bits per byte, variants, options."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from raypipe.ablate import model as lm
from raypipe.ablate.options import ModelShape, ablation_config
from raypipe.ablate.variants import REJECTING, VARIANTS
from raypipe.ablate.vocab import EOS, train_bpe
from raypipe.config import ConfigError, load_config
from raypipe.loader import batch_fields
from raypipe.tokenizer import load_tokenizer

DEMO = Path(__file__).parents[2] / "examples" / "demo.yaml"
TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Ünïcode text costs more bytes than characters: naïve café, 東京, ✓.",
    "A third document, long enough to be cut into more than one window of tokens. " * 6,
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = train_bpe(iter(TEXTS * 20), 600, tmp_path_factory.mktemp("bpe") / "tokenizer.json")
    return load_tokenizer(str(path), None)


def test_the_trained_bpe_has_the_bytes_merges_and_an_end_of_document_token(tokenizer):
    # the bytes, the token, and as many merges as the little text allows up to the size asked
    assert 257 + 50 < tokenizer.vocab_size <= 600
    assert tokenizer.tokenizer.id_to_token(tokenizer.eos_id) == EOS
    ids = tokenizer.encode_batch([TEXTS[1]])[0]
    assert tokenizer.tokenizer.decode(ids) == TEXTS[1]


def test_a_document_in_a_packed_sequence_sees_only_itself():
    model = lm.build_model(ModelShape(), 300, 32, 0, seed=0).eval()
    ids = np.random.default_rng(0).integers(1, 300, (1, 32))
    batch = batch_fields(ids, np.array([0, 12]), np.array([12, 32]), True, True)

    def logits(input_ids):
        return model(
            input_ids=torch.from_numpy(input_ids),
            position_ids=torch.from_numpy(batch["position_ids"]),
            attention_mask=torch.from_numpy(batch["attention_mask"])[:, None],
        ).logits[0]

    with torch.no_grad():
        packed = logits(ids)
        other = ids.copy()
        other[0, :12] = 7  # change the first document only
        changed = logits(other)
        alone = model(input_ids=torch.from_numpy(ids[:, 12:])).logits[0]
    assert torch.allclose(packed[12:], changed[12:], atol=1e-5)
    assert not torch.allclose(packed[:12], changed[:12], atol=1e-3)
    assert torch.allclose(packed[12:], alone, atol=1e-4)  # as if it were alone


def test_bits_per_byte_is_the_held_out_loss_per_byte(tokenizer):
    seq_len = 16
    model = lm.build_model(ModelShape(d_model=32), tokenizer.vocab_size, seq_len, 0, 0).eval()
    nats = 0.0
    with torch.no_grad():  # one window at a time, without the batching under test
        for ids in tokenizer.encode_batch(TEXTS):
            ids = [tokenizer.eos_id, *ids]
            for begin in range(0, len(ids) - 1, seq_len):
                window = torch.tensor([ids[begin : begin + seq_len + 1]])
                out = model(input_ids=window[:, :-1]).logits[0]
                nats += F.cross_entropy(out, window[0, 1:], reduction="sum").item()
    size = sum(len(text.encode("utf-8")) for text in TEXTS)
    scored = lm.bits_per_byte(model, TEXTS, tokenizer, seq_len)
    assert scored["heldout_bytes"] == size > sum(len(text) for text in TEXTS)
    assert scored["bits_per_byte"] == pytest.approx(nats / (math.log(2) * size), rel=1e-5)
    # every token of every text is scored once
    assert scored["heldout_tokens"] == sum(map(len, tokenizer.encode_batch(TEXTS)))


def test_every_variant_is_a_valid_config_and_turns_its_stage_off():
    for overrides in VARIANTS.values():
        load_config(DEMO, overrides)  # no unknown key, no invalid value
    raw = load_config(DEMO, VARIANTS["raw"])
    assert not raw.langid.enabled and not raw.quality.enabled
    assert not raw.dedup.exact.enabled and not raw.dedup.near.enabled
    assert set(VARIANTS["raw"]) == {o for overrides in REJECTING.values() for o in overrides}
    recipe = load_config(DEMO, VARIANTS["recipe"])
    assert recipe.quality.enabled and recipe.dedup.near.enabled  # the production recipe
    assert not load_config(DEMO, VARIANTS["no-near"]).dedup.near.enabled


def test_options_name_what_is_wrong():
    base = {"heldout": ["h.jsonl"], "out": "ablation"}
    assert ablation_config(**base).variants == ["raw", "recipe", "no-quality", "no-dedup"]
    for bad, words in (
        ({"variants": ["raw", "no-such"]}, "unknown variant"),
        ({"variants": ["raw", "raw"]}, "named twice"),
        ({"model": {"d_model": 100, "heads": 3}}, "must divide"),
        ({"vocab_size": 300}, "at least 512"),
        ({"tokens": 10}, "tokens"),
    ):
        with pytest.raises(ConfigError, match=words):
            ablation_config(**base, **bad)
