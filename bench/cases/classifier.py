"""The fastText quality classifier against the byte n-gram perplexity filter, on the same
labelled documents: books and Brown corpus prose to keep, spam mails to drop.

Each document goes to the training or the test half by a hash of its id. The classifier
learns from both kinds of the training half (`raypipe train-classifier`); the perplexity
model from the kept kind only (`raypipe train-lm`: it has no use for negatives). Both are
scored on the test half: ROC AUC (threshold-free), and what each keeps of each test set at
its filter's default threshold. The unlabelled sources of the
mixed corpus (ham mail, reST and HTML manuals) show what else each would drop.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import iter_jsonl_zst, shared
from raypipe.config import ClassifierConfig, PerplexityConfig
from raypipe.quality.classifier import QualityModel, train
from raypipe.quality.perplexity import ByteLM

# every k-th document (full, quick)
BOOKS = ("bench/gutenberg_en_docs.jsonl.zst", (4, 24))
MIXED = ("bench/mixed_en_docs.jsonl.zst", (1, 4))
# the filters' defaults, higher = keep for both: P(keep), and minus bits per byte
CUTS = {
    "classifier": ClassifierConfig().min_score,
    "perplexity": -PerplexityConfig().max_bits_per_byte,
}


def kind(row: dict) -> str:
    source = row["source"].split("(")[0]
    if source == "spamassassin":
        return "spam (drop)" if row["id"].startswith("spam") else "ham mail"
    return {"gutenberg_uga": "books (keep)", "brown": "brown (keep)"}.get(source, source)


def in_test(row: dict) -> bool:
    return hashlib.sha1(row["id"].encode()).digest()[0] % 2 == 1


def documents(quick: bool) -> dict[tuple[str, bool], list[str]]:
    sets: dict[tuple[str, bool], list[str]] = defaultdict(list)
    for path, (every, every_quick) in (BOOKS, MIXED):
        step = every_quick if quick else every
        for i, row in enumerate(iter_jsonl_zst(shared(path))):
            if i % step == 0:
                sets[kind(row), in_test(row)].append(row["text"])
    return sets


def auc(keep: np.ndarray, drop: np.ndarray) -> float:
    """P(a random kept document scores above a random dropped one), ties half."""
    scores = np.concatenate([keep, drop])
    order = scores.argsort(kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores[np.diff(np.sort(scores), prepend=np.nan) == 0]):
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    return float(
        (ranks[: len(keep)].sum() - len(keep) * (len(keep) + 1) / 2) / (len(keep) * len(drop))
    )


def run(quick: bool) -> str:
    sets = documents(quick)
    keep_train = sets["books (keep)", False] + sets["brown (keep)", False]
    drop_train = sets["spam (drop)", False]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        train(keep_train, drop_train, Path(tmp) / "quality.bin")
        trained = {"classifier": time.perf_counter() - start}
        model = QualityModel(Path(tmp) / "quality.bin")
        start = time.perf_counter()
        lm = ByteLM.train(keep_train)
        trained["perplexity"] = time.perf_counter() - start
    scorers = {
        "classifier": model.score,
        "perplexity": lambda texts: -np.array([lm.bits_per_byte(t) or 0.0 for t in texts]),
    }
    kinds = sorted({k for k, _ in sets})
    rows = []
    for name, score in scorers.items():
        cut = CUTS[name]
        chars = sum(len(t) for k in kinds for t in sets[k, True])
        start = time.perf_counter()
        tested = {k: score(sets[k, True]) for k in kinds}
        seconds = time.perf_counter() - start
        keep = np.concatenate([tested["books (keep)"], tested["brown (keep)"]])
        kept = {k: (s >= cut).mean() if len(s) else float("nan") for k, s in tested.items()}
        rows.append((name, auc(keep, tested["spam (drop)"]), kept, trained[name], chars / seconds))
    sizes = {k: len(sets[k, True]) for k in kinds}
    lines = [
        "## Quality classifier vs perplexity filter",
        "",
        f"Labelled documents from every {BOOKS[1][1 if quick else 0]}th book part of "
        f"`{BOOKS[0]}` and every {MIXED[1][1 if quick else 0]}th document of `{MIXED[0]}`, "
        "split into training and test halves by a hash of the id. The classifier (`raypipe "
        "train-classifier` defaults) learns from the training half's books and Brown prose "
        "(keep) and its spam (drop); the perplexity model (`raypipe train-lm`, order 3) from "
        "the same prose only. Test half: ROC AUC of keep against spam, and the share of "
        "each test set kept at the filter's default threshold (`quality.classifier.min_score` "
        f"{CUTS['classifier']}, `quality.perplexity.max_bits_per_byte` {-CUTS['perplexity']})"
        ". Ham mail and the manuals are unlabelled: their column is what else a cut "
        "drops.",
        "",
        "| method | AUC keep vs spam | "
        + " | ".join(f"kept: {k} ({sizes[k]:,})" for k in kinds)
        + " | training s | scoring MB/s |",
        "|---|---:|" + "---:|" * len(kinds) + "---:|---:|",
    ]
    for name, area, kept, seconds, speed in rows:
        lines.append(
            f"| {name} | {area:.4f} | "
            + " | ".join(f"{kept[k]:.1%}" for k in kinds)
            + f" | {seconds:.1f} | {speed / 1e6:.1f} |"
        )
    return "\n".join(lines)
