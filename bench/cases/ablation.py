"""Ablation: does the default recipe give better training data than the raw input?

The same GPT-2 (~0.4M parameters, a 4,096-token BPE trained on the input) is trained on each
variant at equal tokens, 3 seeds each, and scored in bits per byte on held-out English prose
(Gutenberg books that are not in the input). `raypipe ablate` does all of it; this case
builds the input and the held-out set from ../shared/data and reports its table.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from bench.common import CACHE, iter_jsonl_zst, shared

MIXED, BOOKS = "bench/mixed_en_docs.jsonl.zst", "bench/gutenberg_en_docs.jsonl.zst"
# (every k-th document of the mixed corpus, of the books' documents): a few MB of mail,
# markup, manuals, prose and books, as a crawl mixes them
EVERY = {"full": (16, 40), "quick": (40, 100)}
TOKENS = {"full": 800_000, "quick": 200_000}
SEEDS = {"full": 3, "quick": 2}
VARIANTS = "raw,recipe,no-quality,no-dedup"
HELDOUT_BOOKS = 8  # one book in this many is held out whole (by the hash of its id)
HELDOUT_BYTES = 400_000


def _held_out(doc_id: str) -> bool:
    book = doc_id.split("#", 1)[0]
    return int(hashlib.sha1(book.encode()).hexdigest(), 16) % HELDOUT_BOOKS == 0


def build_inputs(mode: str) -> tuple[str, str, dict]:
    folder = CACHE / f"ablation-{mode}"
    (folder / "input").mkdir(parents=True, exist_ok=True)
    every_mixed, every_book = EVERY[mode]
    sizes = {"mixed": 0, "books": 0, "heldout": 0}
    with open(folder / "input" / "mixed.jsonl", "w") as out:
        for i, row in enumerate(iter_jsonl_zst(shared(MIXED))):
            if i % every_mixed == 0:
                out.write(json.dumps({"id": row["id"], "text": row["text"]}) + "\n")
                sizes["mixed"] += len(row["text"])
    with (
        open(folder / "input" / "books.jsonl", "w") as out,
        open(folder / "heldout.jsonl", "w") as heldout,
    ):
        for i, row in enumerate(iter_jsonl_zst(shared(BOOKS))):
            if _held_out(row["id"]):
                if sizes["heldout"] < HELDOUT_BYTES and i % 5 == 0:
                    heldout.write(json.dumps({"text": row["text"]}) + "\n")
                    sizes["heldout"] += len(row["text"])
            elif i % every_book == 0:
                out.write(json.dumps({"id": row["id"], "text": row["text"]}) + "\n")
                sizes["books"] += len(row["text"])
    config = folder / "ablation.yaml"
    config.write_text(
        f"input: {{paths: [{folder / 'input'}], id_field: id}}\n"
        f"output: {{path: {folder / 'unused'}}}\n"
    )
    return str(config), str(folder / "heldout.jsonl"), sizes


def run(quick: bool) -> str:
    mode = "quick" if quick else "full"
    config, heldout, sizes = build_inputs(mode)
    out = CACHE / f"ablation-{mode}" / "out"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    command = [
        "raypipe",
        "ablate",
        config,
        "--heldout",
        heldout,
        "--out",
        str(out),
        "--variants",
        VARIANTS,
        "--tokens",
        str(TOKENS[mode]),
        "--seeds",
        str(SEEDS[mode]),
    ]
    started = time.time()
    raypipe = Path(sys.executable).parent / "raypipe"  # the command a user runs
    subprocess.run([str(raypipe), *command[1:]], check=True)
    seconds = time.time() - started
    result = json.loads((out / "ablation.json").read_text())
    return section(result, sizes, seconds, shlex.join(command))


def section(result: dict, sizes: dict, seconds: float, command: str) -> str:
    rows = result["variants"]
    lines = [
        "## Ablation: the recipe's data against the raw input, by training",
        "",
        f"Input: {sizes['mixed'] / 1e6:.1f} MB of `{MIXED}` (mail, kernel and Python docs, "
        f"PostgreSQL manual, Brown) and {sizes['books'] / 1e6:.1f} MB of `{BOOKS}`; held out: "
        f"{sizes['heldout'] / 1e6:.2f} MB of Gutenberg books not in the input. "
        f"{result['seeds']} seeds per variant, {result['tokens']:,} training tokens each, a "
        f"GPT-2 of {next(iter(rows.values()))['parameters']:,} parameters, sequences of "
        f"{result['seq_len']}. The whole ablation took {seconds / 60:.1f} min.",
        "",
        "| variant | documents kept | tokens in shards | epochs | bits per byte | ± std "
        "| vs raw | vs recipe |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        gaps = []
        for reference in ("raw", "recipe"):
            gap = row.get(f"vs_{reference}")
            gaps.append(
                ""
                if gap is None
                else f"{gap['gap']:+.4f}{'' if gap['beyond_noise'] else ' (noise)'}"
            )
        lines.append(
            f"| {name} | {row['documents_out']:,} / {row['documents_in']:,} | "
            f"{row['tokens_in_shards']:,} | {row['epochs']:.2f} | {row['bits_per_byte']:.4f} | "
            f"{row['std']:.4f} | {' | '.join(gaps)} |"
        )
    lines += ["", f"Command: `{command}` (the case builds the input: `bench/cases/ablation.py`)."]
    return "\n".join(lines)
