"""How much real prose of each language the heuristic filter drops (opt-in evaluation).

Documents are built from the lingua test sentences (../shared/data/eval/langid, 75
languages, 1000 sentences each): `--per-doc` consecutive sentences of one language make one
document, so every document is clean prose and every rejection is a loss. Prints a
markdown table of the rejection rate per language and reason, worst first.

    python -m scripts.eval_languages [--per-doc 10]
"""

from __future__ import annotations

import argparse
import collections
import io
import json

import zstandard

from bench.common import SHARED_DATA
from raypipe.config import HeuristicConfig
from raypipe.quality.heuristic import heuristic_reasons

SENTENCES = SHARED_DATA / "eval" / "langid" / "lingua_testdata.jsonl.zst"


def documents(per_doc: int) -> dict[str, list[str]]:
    by_language: dict[str, list[str]] = collections.defaultdict(list)
    with SENTENCES.open("rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw)):
            row = json.loads(line)
            if row["kind"] == "sentences":
                by_language[row["lang"]].append(row["text"])
    return {
        lang: [" ".join(s[i : i + per_doc]) for i in range(0, len(s) - per_doc + 1, per_doc)]
        for lang, s in by_language.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-doc", type=int, default=10)
    args = parser.parse_args()
    cfg = HeuristicConfig()
    rows = []
    for lang, docs in sorted(documents(args.per_doc).items()):
        reasons = collections.Counter(r for r in heuristic_reasons(docs, cfg) if r)
        rows.append((sum(reasons.values()) / len(docs), lang, len(docs), reasons))
    print(f"heuristic defaults, {args.per_doc} sentences per document\n")
    print("| language | documents | rejected | reasons |\n|---|---|---|---|")
    for rate, lang, n, reasons in sorted(rows, key=lambda r: (-r[0], r[1])):
        why = ", ".join(f"{k.split(':')[1]} {v}" for k, v in reasons.most_common())
        print(f"| {lang} | {n} | {rate:.1%} | {why} |")
    total = sum(r[2] for r in rows)
    lost = sum(r[0] * r[2] for r in rows)
    print(f"\nall languages: {lost / total:.1%} of {total} clean documents rejected")


if __name__ == "__main__":
    main()
