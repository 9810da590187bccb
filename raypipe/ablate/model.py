"""The ablation model: a small GPT-2 trained on packed shards, scored in bits per byte.

Bits per byte = the held-out text's loss in nats per token x tokens / (ln 2 x UTF-8 bytes):
the loss per byte of text, so models with different tokenizers compare fairly.

Training reads the shards through `raypipe.loader` with document-masked attention: each
sequence's attention is block-diagonal over its documents (the loader's dense mask), its
positions restart at every document, and the loss skips padding and the first token of a
document that follows another inside a sequence.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from raypipe.ablate.options import ModelShape
from raypipe.loader import IGNORE, Loader
from raypipe.tokenizer import LoadedTokenizer

EVAL_BATCH = 16  # held-out windows scored per forward pass
CURVE_POINTS = 50  # training-loss points kept per run


def build_model(shape: ModelShape, vocab_size: int, seq_len: int, eos_id: int, seed: int):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=seq_len,
        n_embd=shape.d_model,
        n_layer=shape.layers,
        n_head=shape.heads,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        attn_implementation="sdpa",
    )
    return GPT2LMHeadModel(config)


def parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def device() -> str:
    """CUDA when there is a GPU, else the CPU (the default, and what the benchmarks use)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _tensor(array: np.ndarray, model):
    import torch

    return torch.from_numpy(array).to(model.device)


def _loss(model, batch: dict, reduction: str = "mean"):
    import torch.nn.functional as F

    mask = batch.get("attention_mask")
    logits = model(
        input_ids=_tensor(batch["input_ids"], model),
        position_ids=_tensor(batch["position_ids"], model),
        attention_mask=None if mask is None else _tensor(mask, model)[:, None],
    ).logits
    labels = _tensor(batch["labels"], model)
    return F.cross_entropy(
        logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE, reduction=reduction
    )


def _endless(loader: Loader) -> Iterator[dict]:
    while True:  # epoch after epoch: a variant smaller than the budget is repeated
        yield from loader


def train(output: str, tokens: int, shape: ModelShape, seed: int, loaded: LoadedTokenizer):
    """Train a fresh model on `tokens` positions of `output`'s shards; (model, record)."""
    import torch

    loader = Loader(
        output, batch_size=shape.batch_size, seed=seed, mask_boundary=True, attention_mask=True
    )
    steps = max(1, tokens // (shape.batch_size * loader.seq_len))
    model = build_model(shape, loaded.vocab_size, loader.seq_len, loaded.eos_id, seed)
    model.to(device())
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=shape.lr, betas=(0.9, 0.95), weight_decay=0.1
    )
    warmup = max(1, int(steps * shape.warmup))

    def rate(step: int) -> float:  # linear warmup, cosine decay to a tenth
        if step < warmup:
            return (step + 1) / warmup
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    every = max(1, steps // CURVE_POINTS)
    curve, started, seen, window = [], time.perf_counter(), 0, []
    model.train()
    for step, batch in zip(range(steps), _endless(loader), strict=False):
        loss = _loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        seen += batch["input_ids"].size
        window.append(loss.item())
        if (step + 1) % every == 0 or step + 1 == steps:
            curve.append((seen, sum(window) / len(window)))
            window = []
    record = {
        "steps": steps,
        "tokens": seen,
        "epochs": seen / max(1, loader.sequences * loader.seq_len),
        "parameters": parameters(model),
        "train_seconds": round(time.perf_counter() - started, 2),
        "curve": curve,
        "shape": shape.model_dump(),
    }
    return model, record


def _scored(nats: float, tokens: int, size: int) -> dict:
    return {
        "bits_per_byte": nats / (math.log(2) * size),
        "nats_per_token": nats / max(1, tokens),
        "heldout_tokens": tokens,
        "heldout_bytes": size,
    }


def _windows(texts: Iterable[str], loaded: LoadedTokenizer, seq_len: int):
    """The held-out texts as windows of up to seq_len + 1 token ids, and their UTF-8 bytes.

    Each text starts after an end-of-document token, as documents do in the shards, so its
    first token is scored too; windows after a text's first start without context.
    """
    texts = list(texts)
    windows = []
    for ids in loaded.encode_batch(texts):
        ids = [loaded.eos_id, *ids]
        windows += [ids[begin : begin + seq_len + 1] for begin in range(0, len(ids) - 1, seq_len)]
    return windows, sum(len(text.encode("utf-8")) for text in texts)


def bits_per_byte(model, texts: Iterable[str], loaded: LoadedTokenizer, seq_len: int) -> dict:
    """The model's bits per byte on `texts` (and the nats per token behind it)."""
    import torch
    import torch.nn.functional as F

    windows, size = _windows(texts, loaded, seq_len)
    if not size:
        raise ValueError("the held-out set holds no text")
    nats, scored = 0.0, 0
    model.eval()
    with torch.no_grad():
        for first in range(0, len(windows), EVAL_BATCH):
            batch = windows[first : first + EVAL_BATCH]
            grid = np.full((len(batch), max(len(w) for w in batch)), IGNORE, np.int64)
            for row, window in enumerate(batch):
                grid[row, : len(window)] = window
            inputs = _tensor(np.maximum(grid[:, :-1], 0), model)  # padding reads token 0
            targets = _tensor(grid[:, 1:], model)
            logits = model(input_ids=inputs).logits
            nats += F.cross_entropy(
                logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="sum"
            ).item()
            scored += int((targets != IGNORE).sum())
    return _scored(nats, scored, size)


def shard_bits_per_byte(model, output: str, loaded: LoadedTokenizer, batch_size: int = 8) -> dict:
    """The model's bits per byte on a native run's shards, over the documents' own tokens.

    Sequences are scored as training reads them (document-masked); end-of-document targets
    are left out, so the bytes are those of the documents' text, as for held-out files.
    """
    import torch

    nats, scored, size = 0.0, 0, 0
    model.eval()
    loader = Loader(output, batch_size=batch_size, mask_boundary=True, attention_mask=True)
    with torch.no_grad():
        for batch in loader:
            labels = np.where(batch["labels"] == loaded.eos_id, IGNORE, batch["labels"])
            batch = {**batch, "labels": labels}
            nats += _loss(model, batch, reduction="sum").item()
            scored += int((labels != IGNORE).sum())
            for row in labels:
                text = loaded.tokenizer.decode(row[row != IGNORE].tolist())
                size += len(text.encode("utf-8"))
    if not size:
        raise ValueError(f"{output} holds no tokens to score")
    return _scored(nats, scored, size)


def save(model, folder: str | Path) -> None:
    model.save_pretrained(str(folder))


def load(folder: str | Path):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(str(folder)).to(device())
