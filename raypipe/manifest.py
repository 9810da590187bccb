"""The run's record: report.json and report.html, then manifest.json (last: the commit)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from raypipe import mix
from raypipe.accounting import CleanTally, NearTally, SourceTokens
from raypipe.config import PipelineConfig
from raypipe.cut import stage_of
from raypipe.io import storage
from raypipe.report.html import render
from raypipe.report.stats import dataset_report, warnings
from raypipe.report.tags import tag_counts
from raypipe.tokenizer import LoadedTokenizer, load_tokenizer
from raypipe.writers import FORMATS

SHARD_KEYS = ("path", "sequences", "tokens", "documents", "sha256")


def _sources(cleaned: CleanTally, outcome: dict) -> dict[str, dict]:
    """Per source: documents in, after cleaning, and what the mixture wrote."""
    rows = {}
    for name, c in sorted(cleaned.sources.items()):
        rows[name] = {
            "documents_in": c.documents,
            "documents_cleaned": c.kept,
            "chars_cleaned": c.kept_chars,
            **outcome.get(name, {}),
        }
    return rows


@dataclass(frozen=True)
class Outcome:
    """What the phases of a run produced, from which its record is written."""

    fingerprint: str
    files: int  # input files read
    cleaned: CleanTally  # phase 1's merged tally
    drops: dict[str, int]  # documents removed in phase 2 (dedup, percentile cuts), by reason
    near: NearTally | None = None  # when near dedup ran
    tokenized: dict[str, SourceTokens] | None = None  # when a tokenizer is set
    plan: dict = field(default_factory=dict)  # the mixture plan (raypipe.mix.plan)
    shards: list[dict] = field(default_factory=list)  # published shard entries
    cuts: dict[str, dict] = field(default_factory=dict)  # percentile cuts: scored, cut score


def token_report(shards: list[dict], loaded: LoadedTokenizer, seq_len: int, packed: bool) -> dict:
    """The token dataset's statistics from its shards' own, top tokens named, and the
    figures outside their usual ranges (`warnings`)."""
    report = dataset_report(shards, loaded.vocab_size, seq_len)
    for item in report["top_tokens"]:
        item["token"] = loaded.tokenizer.id_to_token(item["id"])
    if not packed:  # megatron: one sequence per whole document, packed by Megatron at training
        report.update(sequence_utilization=None, split_documents=None)
    report["warnings"] = warnings(report)
    return report


def build_manifest(cfg: PipelineConfig, mixture: list[mix.Source], run: Outcome) -> dict:
    """Write report.json, then manifest.json; return the manifest."""
    out = cfg.output.path
    outcome = mix.outcome(run.tokenized, run.plan, mixture) if run.tokenized is not None else {}
    not_sampled = sum(r["documents_kept"] - r["documents_out"] for r in outcome.values())
    rejected = {**run.cleaned.rejected, **run.drops}
    by_stage = dict(run.cleaned.rejected_by_stage)
    for reason, count in run.drops.items():
        by_stage[stage_of(reason)] = by_stage.get(stage_of(reason), 0) + count
    if not_sampled:
        rejected["not_sampled"] = not_sampled
        by_stage["mix"] = not_sampled
    manifest: dict[str, Any] = {
        "fingerprint": run.fingerprint,
        "files": run.files,
        "documents_in": run.cleaned.documents,
        "documents_out": run.cleaned.kept - sum(run.drops.values()) - not_sampled,
        "rejected": rejected,
        "rejected_by_stage": by_stage,
        "masked": run.cleaned.counters.get("pii", {}),
        "counters": run.cleaned.counters,
        "sources": _sources(run.cleaned, outcome),
        "config": cfg.model_dump(mode="json"),
        "rejects": "rejects/",
    }
    if run.cuts:
        manifest["percentile_cuts"] = run.cuts
    report: dict[str, Any] = {
        "languages": run.cleaned.languages,
        "rejected_by_language": run.cleaned.rejected_by_language,
        "length_bins": run.cleaned.length_bins,
        "masked": manifest["masked"],
        "sources": manifest["sources"],
    }
    if run.near is not None:  # cluster sizes and the share of documents removed
        manifest["near_duplicates"] = report["near_duplicates"] = asdict(run.near)
    manifest["tags"] = report["tags"] = tag_counts(manifest["sources"], mixture)
    if cfg.tokenizer:
        loaded = load_tokenizer(cfg.tokenizer, cfg.eos_token)
        packed = FORMATS[cfg.output.format].packed
        report.update(token_report(run.shards, loaded, cfg.pack.seq_len, packed))
        report["pack_strategy"] = cfg.pack.strategy if packed else None
        manifest["warnings"] = report["warnings"]
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
            shards=[{k: e[k] for k in SHARD_KEYS} for e in run.shards],
        )
        if index := FORMATS[cfg.output.format].index:
            index(out, run.shards)
    else:
        manifest["documents"] = "documents/"
    storage.write_atomic(storage.join(out, "report.json"), json.dumps(report, indent=2).encode())
    storage.write_atomic(storage.join(out, "report.html"), render(manifest, report).encode())
    storage.write_atomic(
        storage.join(out, "manifest.json"), json.dumps(manifest, indent=2).encode()
    )
    return manifest
