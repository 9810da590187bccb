"""How much clean prose of each language the default recipe's document stages drop.

Documents are built from the lingua test sentences (../shared/data/eval/langid, 75
languages, 1000 sentences each): PER_DOC consecutive sentences of one language make one
document, so every document is clean prose and every rejection is a loss. They go through
the default recipe's normalize, langid and quality stages as a run builds them (PII and
dedup change no prose into a rejection here), and, beside it, through the same recipe with a
language filter that keeps every language above the score threshold (`langid.languages:
["*"]`), the choice docs/recipes.md argues against. The goal: no language's rejection rate
more than 10 points above English's."""

from __future__ import annotations

import collections
import io
import json

import pyarrow as pa
import zstandard

from bench.common import shared
from raypipe.config import DEFAULT_RECIPE, build_config
from raypipe.pipeline import document_stages

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


JUDGING = ("normalize", "langid", "quality")
ANY_LANGUAGE = ['langid.languages=["*"]']


def reasons_per_language(docs: dict[str, list[str]], overrides: list[str]) -> dict:
    cfg = build_config({"input": {"paths": ["lingua"]}}, overrides)
    stages = [p.build() for p in document_stages(cfg) if p.name in JUDGING]
    out = {}
    for lang, texts in docs.items():
        n = len(texts)
        batch = pa.table(
            {
                "uid": pa.array(range(n), pa.int64()),
                "id": [str(i) for i in range(n)],
                "source": ["lingua"] * n,
                "text": texts,
                "stage": pa.nulls(n, pa.string()),
                "reason": pa.nulls(n, pa.string()),
            }
        )
        for stage in stages:
            batch = stage(batch)
        pairs = zip(batch["stage"].to_pylist(), batch["reason"].to_pylist(), strict=True)
        out[lang] = collections.Counter(f"{st}:{why}" for st, why in pairs if why)
    return out


def run(quick: bool) -> str:
    docs = documents(PER_DOC)
    default = reasons_per_language(docs, [])
    filtered = reasons_per_language(docs, ANY_LANGUAGE)
    rows = sorted(
        (sum(default[lang].values()) / len(texts), lang, len(texts)) for lang, texts in docs.items()
    )
    english = next(rate for rate, lang, _ in rows if lang == "en")
    over = [lang for rate, lang, _ in rows if rate > english + MARGIN]
    total = sum(len(texts) for texts in docs.values())
    lost = sum(sum(c.values()) for c in default.values())
    lost_filtered = sum(sum(c.values()) for c in filtered.values())
    lines = [
        "## Languages: clean prose the default recipe rejects",
        "",
        f"Recipe `{DEFAULT_RECIPE}` (normalize, langid, quality) on {total} documents of "
        f"{PER_DOC} lingua sentences in {len(rows)} languages: {lost / total:.2%} rejected; "
        f"English {english:.1%}; languages more than {MARGIN:.0%} above English: "
        f'{", ".join(over) or "none"}. With `langid.languages: ["*"]` (reject below the '
        f"0.65 score): {lost_filtered / total:.2%} rejected.",
        "",
        '| language | documents | rejected | reasons | rejected with `["*"]` |',
        "|---|---|---|---|---|",
    ]
    for rate, lang, n in sorted(rows, key=lambda r: (-r[0], r[1])):
        why = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in default[lang].most_common())
        lines.append(
            f"| {lang} | {n} | {rate:.1%} | {why} | {sum(filtered[lang].values()) / n:.1%} |"
        )
    return "\n".join(lines) + "\n"
