"""Hard-wrapped text: FineWeb's rules judging lines (datatrove) or, with
`quality.fineweb.unwrap`, the paragraphs of wrapped text; documents rejected per source."""

from __future__ import annotations

from collections import Counter, defaultdict

from bench.common import iter_jsonl_zst, shared
from raypipe.config import FineWebConfig
from raypipe.quality.fineweb import fineweb_reason
from raypipe.quality.wrapping import hard_wrapped

# every k-th document (full, quick)
INPUTS = {"bench/mixed_en_docs.jsonl.zst": (5, 25), "bench/gutenberg_en_docs.jsonl.zst": (10, 50)}


def run(quick: bool) -> str:
    lines, paragraphs = FineWebConfig(enabled=True), FineWebConfig(enabled=True, unwrap=True)
    stats: dict[str, Counter] = defaultdict(Counter)
    described = []
    for path, (every, every_quick) in INPUTS.items():
        step = every_quick if quick else every
        described.append(f"every {step}th document of `{path}`")
        for i, row in enumerate(iter_jsonl_zst(shared(path))):
            if i % step:
                continue
            text, counts = row["text"], stats[row["source"].split("(")[0]]
            counts["documents"] += 1
            counts["wrapped"] += hard_wrapped(text.split("\n"))
            counts["lines"] += fineweb_reason(text, text.split(), lines) is not None
            counts["paragraphs"] += fineweb_reason(text, text.split(), paragraphs) is not None
    rows = [
        "## Hard-wrapped text and FineWeb's line rules",
        "",
        f"FineWeb's rules (fineweb-2 edition, raypipe's defaults) on {' and '.join(described)}: "
        "documents rejected when the rules judge lines (as datatrove does) and when they judge "
        "the paragraphs of hard-wrapped text (`quality.fineweb.unwrap: true`, set by the "
        "production recipe).",
        "",
        "| source | documents | hard-wrapped | rejected, lines | rejected, paragraphs |",
        "|---|---:|---:|---:|---:|",
    ]
    for source, counts in sorted(stats.items()):
        n = counts["documents"]
        rows.append(
            f"| {source} | {n:,} | {counts['wrapped']:,} | {counts['lines']:,} "
            f"({counts['lines'] / n:.1%}) | {counts['paragraphs']:,} "
            f"({counts['paragraphs'] / n:.1%}) |"
        )
    return "\n".join(rows)
