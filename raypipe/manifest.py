"""The run's record: report.json and report.html, then manifest.json (last: the commit)."""

from __future__ import annotations

import json
from typing import Any

from raypipe import mix
from raypipe.config import PipelineConfig
from raypipe.io import storage
from raypipe.report.html import render
from raypipe.report.stats import dataset_report
from raypipe.report.tags import tag_counts
from raypipe.tokenizer import load_tokenizer
from raypipe.writers import FORMATS

SHARD_KEYS = ("path", "sequences", "tokens", "documents", "sha256")


def _sources(cleaned: dict, drops: dict, outcome: dict) -> dict[str, dict]:
    """Per source: documents in, after cleaning, and what the mixture wrote."""
    rows = {}
    for name, c in sorted(cleaned["sources"].items()):
        rows[name] = {
            "documents_in": c["documents"],
            "documents_cleaned": c["kept"],
            "chars_cleaned": c["kept_chars"],
            **outcome.get(name, {}),
        }
    return rows


def build_manifest(
    cfg: PipelineConfig,
    cleaned: dict,
    drops: dict,
    tokenized: dict | None,
    plan: dict,
    mixture: list[mix.Source],
    shards: list[dict],
    run_fp: str,
    files: int,
    near: dict | None = None,
) -> dict:
    """Write report.json, then manifest.json; return the manifest."""
    out = cfg.output.path
    outcome = mix.outcome(tokenized, plan, mixture) if tokenized is not None else {}
    not_sampled = sum(r["documents_kept"] - r["documents_out"] for r in outcome.values())
    rejected = {**cleaned["rejected"], **drops}
    by_stage = {**cleaned["rejected_by_stage"], "dedup": sum(drops.values())}
    if not_sampled:
        rejected["not_sampled"] = not_sampled
        by_stage["mix"] = not_sampled
    manifest: dict[str, Any] = {
        "fingerprint": run_fp,
        "files": files,
        "documents_in": cleaned["documents"],
        "documents_out": cleaned["kept"] - sum(drops.values()) - not_sampled,
        "rejected": rejected,
        "rejected_by_stage": by_stage,
        "masked": cleaned["counters"].get("pii", {}),
        "counters": cleaned["counters"],
        "sources": _sources(cleaned, drops, outcome),
        "config": cfg.model_dump(mode="json"),
        "rejects": "rejects/",
    }
    report: dict[str, Any] = {
        "languages": cleaned["languages"],
        "length_bins": cleaned["length_bins"],
        "masked": manifest["masked"],
        "sources": manifest["sources"],
    }
    if near is not None:  # cluster sizes and the share of documents removed
        manifest["near_duplicates"] = report["near_duplicates"] = near
    manifest["tags"] = report["tags"] = tag_counts(manifest["sources"], mixture)
    if cfg.tokenizer:
        loaded = load_tokenizer(cfg.tokenizer, cfg.eos_token)
        report.update(dataset_report(shards, loaded.vocab_size, cfg.pack.seq_len))
        for item in report["top_tokens"]:
            item["token"] = loaded.tokenizer.id_to_token(item["id"])
        if FORMATS[cfg.output.format].packed:
            report["pack_strategy"] = cfg.pack.strategy
        else:  # megatron: one sequence per whole document, packed by Megatron at training time
            report.update(pack_strategy=None, sequence_utilization=None, split_documents=None)
        manifest.update(
            documents_written=report["documents"],
            tokens=report["tokens"],
            sequences=report["sequences"],
            seq_len=cfg.pack.seq_len,
            dtype=loaded.dtype,
            vocab_size=loaded.vocab_size,
            eos_id=loaded.eos_id,
            tokenizer_sha256=loaded.sha256,
            tokenizer_engine=loaded.engine,
            shards=[{k: e[k] for k in SHARD_KEYS} for e in shards],
        )
    else:
        manifest["documents"] = "documents/"
    storage.write_atomic(storage.join(out, "report.json"), json.dumps(report, indent=2).encode())
    storage.write_atomic(storage.join(out, "report.html"), render(manifest, report).encode())
    storage.write_atomic(
        storage.join(out, "manifest.json"), json.dumps(manifest, indent=2).encode()
    )
    return manifest
