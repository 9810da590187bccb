"""Mixtures: named sources, their target shares of output tokens, their epochs.

A source's epochs e = k + f mean every document is written k times, plus once more for
the documents whose seeded draw falls under a threshold chosen so that those documents
hold a fraction f of the source's tokens. The threshold is read off a histogram of
tokens by draw (TOKEN_BINS bins), so shares are met to within one bin's tokens, and the
choice depends only on (uid, seed): the same mixture on every rerun. Each copy of a
document gets its own shard and position, so repeats are spread through the output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from raypipe.accounting import SourceTokens
from raypipe.config import ConfigError, InputConfig, PipelineConfig, build_config
from raypipe.shuffle import mix64

TOKEN_BINS = 1024
_BIN_SHIFT = np.uint64(64 - 10)  # log2(TOKEN_BINS)
_DRAW_SALT = 0xD1CE


@dataclass(frozen=True)
class Source:
    """A source as the run sees it: its input options, stage options and mixing target."""

    name: str | None  # None: one unnamed input, named per file
    input: InputConfig
    stages: PipelineConfig
    share: float | None = None
    epochs: float | None = None
    max_epochs: float = math.inf


def sources(cfg: PipelineConfig) -> list[Source]:
    """The sources of a run; without `sources`, the single `input`."""
    if not cfg.sources:
        return [Source(cfg.input.source, cfg.input, cfg)]
    base = cfg.model_dump(mode="json", exclude={"sources"})
    resolved = []
    for source in cfg.sources:
        options = {**base, "input": {**base["input"], **source.input}}
        options["input"].update(paths=source.paths, source=source.name)
        stages = build_config(options, source.stages)
        resolved.append(
            Source(
                source.name, stages.input, stages, source.share, source.epochs, source.max_epochs
            )
        )
    return resolved


def plan_epochs(tokens: dict[str, int], mixture: list[Source]) -> dict[str, float]:
    """Epochs per source that meet the shares, or a ConfigError saying why they cannot.

    Sources with epochs (default 1) fix their token count; sources with a share fill
    their share of the total. When every source has a share, the total is the largest
    one no source needs more than max_epochs for.
    """
    named = [s for s in mixture if s.name is not None]
    if not any(s.share is not None for s in named):
        return {s.name: s.epochs or 1.0 for s in named}
    for s in named:
        if tokens.get(s.name, 0) == 0:
            raise ConfigError(f"sources.{s.name}: no tokens left after cleaning to mix")
    shared = [s for s in named if s.share is not None]
    fixed = [s for s in named if s.share is None]
    total_share = sum(s.share for s in shared)
    if fixed:
        if total_share >= 1:
            raise ConfigError("sources: shares sum to 1 or more but some sources set epochs")
        fixed_tokens = sum((s.epochs or 1.0) * tokens[s.name] for s in fixed)
        total = fixed_tokens / (1 - total_share)
    else:
        if not math.isclose(total_share, 1.0, abs_tol=1e-6):
            raise ConfigError(f"sources: shares sum to {total_share:g}, not 1")
        total = min(tokens[s.name] * s.max_epochs / s.share for s in shared)
    epochs = {s.name: s.epochs or 1.0 for s in fixed}
    for s in shared:
        needed = s.share * total / tokens[s.name]
        if needed > s.max_epochs * (1 + 1e-9):
            raise ConfigError(
                f"sources.{s.name}: share {s.share:g} needs {needed:.2f} epochs of its "
                f"{tokens[s.name]:,} tokens, more than max_epochs {s.max_epochs:g}"
            )
        epochs[s.name] = needed
    return epochs


def draw_bins(uids: np.ndarray, seed: int) -> np.ndarray:
    """Each document's seeded draw, as a histogram bin in [0, TOKEN_BINS)."""
    return (mix64(uids, seed + _DRAW_SALT) >> _BIN_SHIFT).astype(np.int64)


def histogram(uids: np.ndarray, weights: np.ndarray, seed: int) -> list[int]:
    """Sum of `weights` (tokens, or 1 per document) per draw bin."""
    sums = np.bincount(draw_bins(uids, seed), weights=weights, minlength=TOKEN_BINS)
    return sums.astype(np.int64).tolist()


def extra_copy_bins(histogram: list[int], fraction: float) -> int:
    """How many low draw bins hold the closest to `fraction` of the source's tokens."""
    cumulative = np.concatenate([[0], np.cumsum(histogram)])
    target = fraction * cumulative[-1]
    return int(np.argmin(np.abs(cumulative - target)))


def copies(bins: np.ndarray, epochs: float, cut: int) -> np.ndarray:
    """Times each document is written: whole epochs, plus one below the cut."""
    return np.full(len(bins), math.floor(epochs), np.int64) + (bins < cut)


def copy_keys(uids: np.ndarray, copy_index: np.ndarray, seed: int) -> np.ndarray:
    """A distinct, seeded identity per written copy (shard and position derive from it)."""
    with np.errstate(over="ignore"):
        return mix64(mix64(uids, seed) + copy_index.astype(np.uint64), seed)


def plan(kept: dict[str, SourceTokens], mixture: list[Source]) -> dict[str, tuple[float, int]]:
    """(epochs, extra-copy cut) per source whose documents are not written exactly once."""
    epochs = plan_epochs({name: s.tokens for name, s in kept.items()}, mixture)
    return {
        name: (e, extra_copy_bins(kept[name].token_bins, e - math.floor(e)))
        for name, e in epochs.items()
        if e != 1.0 and name in kept
    }


def outcome(
    kept: dict[str, SourceTokens], chosen: dict[str, tuple[float, int]], mixture: list[Source]
) -> dict[str, dict]:
    """Per source: documents and tokens kept by cleaning, and written by the mixture."""
    targets = {s.name: s.share for s in mixture}
    rows = {}
    for name, s in sorted(kept.items()):
        epochs, cut = chosen.get(name, (1.0, 0))
        whole = math.floor(epochs)
        rows[name] = {
            "documents_kept": s.documents,
            "tokens_kept": s.tokens,
            "documents_out": s.documents if whole else sum(s.doc_bins[:cut]),
            "documents_written": whole * s.documents + sum(s.doc_bins[:cut]),
            "tokens_out": whole * s.tokens + sum(s.token_bins[:cut]),
            "target_share": targets.get(name),
        }
    total = sum(r["tokens_out"] for r in rows.values()) or 1
    for r in rows.values():
        r["share"] = r["tokens_out"] / total
        r["epochs"] = r["tokens_out"] / r["tokens_kept"] if r["tokens_kept"] else 0.0
    return rows
