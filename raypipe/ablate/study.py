"""The ablation as a whole: variants -> runs -> trainings -> results (see the package doc)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import ray

from raypipe.ablate import model as lm
from raypipe.ablate.options import AblationConfig
from raypipe.ablate.report import render
from raypipe.ablate.variants import VARIANTS
from raypipe.ablate.vocab import input_texts, train_bpe
from raypipe.batch import alive_texts
from raypipe.config import ConfigError, InputConfig, PipelineConfig, load_config
from raypipe.io import storage
from raypipe.io.readers import read_file
from raypipe.pipeline import Pipeline
from raypipe.tokenizer import load_tokenizer

MIN_HELDOUT_BYTES = 10_000  # less held-out text than this cannot tell variants apart


def heldout_texts(paths: list[str], text_field: str) -> list[str]:
    cfg, texts = InputConfig(text_field=text_field), []
    for index, (uri, *_) in enumerate(storage.expand(paths)):
        for batch in read_file(uri, index, cfg, 1024):
            texts += alive_texts(batch)[1]
    if sum(len(text.encode("utf-8")) for text in texts) < MIN_HELDOUT_BYTES:
        raise ConfigError(f"the held-out set {paths} holds under {MIN_HELDOUT_BYTES:,} bytes")
    return texts


def evaluate_model(folder: str, heldout: list[str], text_field: str, seq_len: int) -> dict:
    """Bits per byte of a trained model on held-out files or on a native run's shards."""
    loaded = load_tokenizer(str(Path(folder, "tokenizer.json")), None)
    model = lm.load(folder)
    if len(heldout) == 1 and storage.exists(storage.join(heldout[0], "manifest.json")):
        return lm.shard_bits_per_byte(model, heldout[0], loaded)
    return lm.bits_per_byte(model, heldout_texts(heldout, text_field), loaded, seq_len)


class Ablation:
    """The variants of one config, built and trained under `opts.out`."""

    def __init__(
        self, config: str, overrides: list[str], opts: AblationConfig, log: Callable = print
    ):
        if storage.is_remote(opts.out):
            raise ConfigError("the ablation folder is local: the models are written there")
        self.config, self.overrides, self.opts, self.log = config, overrides, opts, log
        self.out = Path(opts.out).resolve()
        self.variant_config(opts.variants[0], None)  # a bad config fails before any work

    def variant_config(self, name: str, tokenizer: str | None) -> PipelineConfig:
        pinned = [
            f"output.path={self.out / 'variants' / name}",
            "output.format=native",
            f"pack.seq_len={self.opts.seq_len}",
        ]
        if tokenizer:
            pinned.append(f"tokenizer={tokenizer}")
        return load_config(self.config, [*self.overrides, *VARIANTS[name], *pinned])

    def tokenizer(self) -> str:
        """The tokenizer every variant uses: a BPE trained here, or the config's own."""
        if not self.opts.vocab_size:
            if not (own := self.variant_config(self.opts.variants[0], None).tokenizer):
                raise ConfigError("an ablation trains on token shards: set tokenizer")
            return own
        path = self.out / f"tokenizer-{self.opts.vocab_size}.json"
        if not path.exists():
            self.log(f"ablate: a {self.opts.vocab_size:,}-token BPE for every variant: {path}")
            cfg = self.variant_config("raw", None)
            files = Pipeline(cfg, log=lambda _: None).input_files()
            train_bpe(input_texts(files, cfg.extract), self.opts.vocab_size, path)
        return str(path)

    def run(self) -> dict:
        heldout = heldout_texts(self.opts.heldout, self.opts.heldout_field)
        tokenizer = self.tokenizer()
        runs = {}
        for name in self.opts.variants:
            self.log(f"ablate: variant {name} ({', '.join(VARIANTS[name]) or 'as configured'})")
            runs[name] = Pipeline(self.variant_config(name, tokenizer), log=self.log).run()
        records = self.train(runs, tokenizer, heldout)
        result = summarize(self.opts, runs, records)
        result["out"] = str(self.out)
        (self.out / "ablation.json").write_text(json.dumps(result, indent=2))
        (self.out / "report.html").write_text(render(result), encoding="utf-8")
        return result

    def train(self, runs: dict, tokenizer: str, heldout: list[str]) -> dict:
        """One Ray task per (variant, seed) not trained yet; every record, by (name, seed)."""
        opts, records, pending = self.opts, {}, {}
        digest = hashlib.sha256("\0".join(heldout).encode("utf-8")).hexdigest()
        texts = None
        train = ray.remote(num_cpus=opts.cpus_per_run, max_retries=1)(_train_one)
        for name in opts.variants:
            for seed in range(opts.seeds):
                folder = self.out / "models" / f"{name}-seed{seed}"
                key = _key(runs[name]["fingerprint"], seed, opts, digest)
                done = folder / "record.json"
                if done.exists() and (record := json.loads(done.read_text()))["key"] == key:
                    records[name, seed] = record
                    continue
                folder.mkdir(parents=True, exist_ok=True)
                texts = texts or ray.put(heldout)  # once, for every training task
                output = str(self.out / "variants" / name)
                ref = train.remote(output, tokenizer, opts, seed, texts, str(folder))
                pending[name, seed] = (key, done, ref)
        if pending:
            self.log(f"ablate: training {len(pending)} model(s), {opts.tokens:,} tokens each")
        for (name, seed), (key, done, ref) in pending.items():
            record = {**ray.get(ref), "key": key, "variant": name, "seed": seed}
            done.write_text(json.dumps(record))
            records[name, seed] = record
            self.log(f"ablate: {name} seed {seed}: {record['bits_per_byte']:.4f} bits per byte")
        return records


def _key(fingerprint: str, seed: int, opts: AblationConfig, heldout: str) -> str:
    """What a trained model depends on: its variant's run, its seed, the training, the
    held-out text."""
    parts = [fingerprint, str(seed), str(opts.tokens), opts.model.model_dump_json(), heldout]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _train_one(
    output: str, tokenizer: str, opts: AblationConfig, seed: int, heldout: list[str], folder: str
) -> dict:
    import torch
    from transformers.utils import logging

    torch.set_num_threads(opts.cpus_per_run)
    logging.disable_progress_bar()  # a bar per saved model is noise in the job's log
    loaded = load_tokenizer(tokenizer, None)
    model, record = lm.train(output, opts.tokens, opts.model, seed, loaded)
    record.update(lm.bits_per_byte(model, heldout, loaded, opts.seq_len))
    lm.save(model, folder)
    Path(folder, "tokenizer.json").write_text(loaded.tokenizer.to_str(), encoding="utf-8")
    return record


def summarize(opts: AblationConfig, runs: dict, records: dict) -> dict:
    """Per variant: its run's counts and the mean and spread of bits per byte over seeds."""
    table = {}
    for name in opts.variants:
        seeds = [records[name, seed] for seed in range(opts.seeds)]
        bpb = np.array([r["bits_per_byte"] for r in seeds])
        manifest = runs[name]
        table[name] = {
            "overrides": VARIANTS[name],
            "documents_in": manifest["documents_in"],
            "documents_out": manifest["documents_out"],
            "rejected": manifest["rejected"],
            "tokens_in_shards": sum(shard["tokens"] for shard in manifest["shards"]),
            "epochs": float(np.mean([r["epochs"] for r in seeds])),
            "bits_per_byte": float(bpb.mean()),
            "std": float(bpb.std(ddof=1)) if len(bpb) > 1 else 0.0,
            "per_seed": bpb.tolist(),
            "curve": np.mean([[loss for _, loss in r["curve"]] for r in seeds], 0).tolist(),
            "curve_tokens": [tokens for tokens, _ in seeds[0]["curve"]],
            "parameters": seeds[0]["parameters"],
            "train_seconds": float(np.mean([r["train_seconds"] for r in seeds])),
        }
    for reference in ("raw", "recipe"):
        if reference not in table:
            continue
        ref = table[reference]
        for other, row in table.items():
            if other == reference:
                continue
            gap = row["bits_per_byte"] - ref["bits_per_byte"]
            # beyond noise: the gap exceeds twice the standard error of the two means
            noise = 2 * np.hypot(row["std"], ref["std"]) / np.sqrt(opts.seeds)
            beyond = bool(abs(gap) > noise) if opts.seeds > 1 else None
            row[f"vs_{reference}"] = {"gap": gap, "beyond_noise": beyond}
    return {**opts.model_dump(), "variants": table}
