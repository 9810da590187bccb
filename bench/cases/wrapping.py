"""Hard-wrapped text and the line rules: the production recipe's quality stage with its
`unwrap` options (C4 and FineWeb judge the paragraphs of wrapped text) and without them
(their lines, as datatrove does); documents rejected per source, and by which rule."""

from __future__ import annotations

from collections import Counter, defaultdict

from bench.common import document_batch, iter_jsonl_zst, shared
from raypipe.config import build_config
from raypipe.quality.wrapping import hard_wrapped
from raypipe.stages.quality import Quality

# every k-th document (full, quick)
INPUTS = {"bench/mixed_en_docs.jsonl.zst": (5, 25), "bench/gutenberg_en_docs.jsonl.zst": (10, 50)}
LINES = {"quality.c4.unwrap": False, "quality.fineweb.unwrap": False}


def run(quick: bool) -> str:
    texts, sources, described = [], [], []
    for path, (every, every_quick) in INPUTS.items():
        step = every_quick if quick else every
        described.append(f"every {step}th document of `{path}`")
        for i, row in enumerate(iter_jsonl_zst(shared(path))):
            if i % step == 0:
                texts.append(row["text"])
                sources.append(row["source"].split("(")[0])
    judged = {}
    for view, overrides in (("paragraphs", {}), ("lines", LINES)):
        cfg = build_config({"input": {"paths": ["unused"]}}, overrides)  # production recipe
        stage = Quality(cfg.quality)
        judged[view] = stage(document_batch(texts))["reason"].to_pylist()
    stats: dict[str, Counter] = defaultdict(Counter)
    for i, source in enumerate(sources):
        counts = stats[source]
        counts["documents"] += 1
        counts["wrapped"] += hard_wrapped(texts[i].split("\n"))
        for view in judged:
            counts[view] += judged[view][i] is not None
        by_lines, by_paragraphs = judged["lines"][i], judged["paragraphs"][i]
        if by_lines and not by_paragraphs:
            counts[f"kept now: {by_lines}"] += 1
        if by_paragraphs and not by_lines:
            counts[f"rejected now: {by_paragraphs}"] += 1
    rows = [
        "## Hard-wrapped text and the line rules",
        "",
        f"The production recipe's quality rules on {' and '.join(described)} (no language "
        "ID here, so every rule sees every document): documents rejected when C4 and FineWeb "
        "judge lines, as datatrove does (`quality.c4.unwrap` and `quality.fineweb.unwrap` "
        "false), and when they judge the paragraphs of hard-wrapped text (true, the recipe's "
        "values).",
        "",
        "| source | documents | hard-wrapped | rejected, lines | rejected, paragraphs "
        "| kept now (reason by lines) | rejected now (reason by paragraphs) |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for source, counts in sorted(stats.items()):
        n = counts["documents"]
        kept, rejected = (
            ", ".join(
                f"{key.removeprefix(prefix)} {value}"
                for key, value in counts.most_common()
                if key.startswith(prefix)
            )
            for prefix in ("kept now: ", "rejected now: ")
        )
        rows.append(
            f"| {source} | {n:,} | {counts['wrapped']:,} | {counts['lines']:,} "
            f"({counts['lines'] / n:.1%}) | {counts['paragraphs']:,} "
            f"({counts['paragraphs'] / n:.1%}) | {kept} | {rejected} |"
        )
    return "\n".join(rows)
