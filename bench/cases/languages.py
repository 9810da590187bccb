"""How much clean prose of each language the default quality rules drop.

Documents are built from the lingua test sentences (../shared/data/eval/langid, 75
languages, 1000 sentences each): PER_DOC consecutive sentences of one language make one
document, so every document is clean prose and every rejection is a loss. The goal: no
language's rejection rate more than 10 points above English's."""

from __future__ import annotations

import collections
import io
import json

import zstandard

from bench.common import shared
from raypipe.config import HeuristicConfig
from raypipe.quality.heuristic import heuristic_reasons

SENTENCES = "eval/langid/lingua_testdata.jsonl.zst"
PER_DOC = 10
MARGIN = 0.10  # rejection rate allowed above English's


def documents(per_doc: int) -> dict[str, list[str]]:
    by_language: dict[str, list[str]] = collections.defaultdict(list)
    with shared(SENTENCES).open("rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw)):
            row = json.loads(line)
            if row["kind"] == "sentences":
                by_language[row["lang"]].append(row["text"])
    return {
        lang: [" ".join(s[i : i + per_doc]) for i in range(0, len(s) - per_doc + 1, per_doc)]
        for lang, s in by_language.items()
    }


def run(quick: bool) -> str:
    cfg = HeuristicConfig()
    rows = []
    for lang, docs in sorted(documents(PER_DOC).items()):
        reasons = collections.Counter(r for r in heuristic_reasons(docs, cfg) if r)
        rows.append((sum(reasons.values()) / len(docs), lang, len(docs), reasons))
    english = next(rate for rate, lang, *_ in rows if lang == "en")
    over = [lang for rate, lang, *_ in rows if rate > english + MARGIN]
    total = sum(n for _, _, n, _ in rows)
    lost = sum(rate * n for rate, _, n, _ in rows)
    lines = [
        "## Languages: clean prose the default quality rules reject",
        "",
        f"Heuristic defaults on {total} documents of {PER_DOC} lingua sentences in "
        f"{len(rows)} languages: {lost / total:.2%} rejected; English {english:.1%}; "
        f"languages more than {MARGIN:.0%} above English: {', '.join(over) or 'none'}.",
        "",
        "| language | documents | rejected | reasons |",
        "|---|---|---|---|",
    ]
    for rate, lang, n, reasons in sorted(rows, key=lambda r: (-r[0], r[1])):
        why = ", ".join(f"{k.split(':')[1]} {v}" for k, v in reasons.most_common())
        lines.append(f"| {lang} | {n} | {rate:.1%} | {why} |")
    return "\n".join(lines) + "\n"
