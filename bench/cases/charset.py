"""The lesson's character-set language heuristic beside fastText: on clean prose of 75
languages (the lingua test sentences, 10 to a document), how many documents of each each
finds not English (`langid.charset_check`, the share of a document's letters that are
ASCII, at 0.9; fastText lid.176 with the default threshold). Every non-English document
one keeps is a document an English-only run would train on."""

from __future__ import annotations

from collections import Counter

from bench.cases.languages import PER_DOC, documents
from bench.common import document_batch
from raypipe.config import LangidConfig
from raypipe.stages.langid import Langid

CHECK = 0.9


def run(quick: bool) -> str:
    docs = documents(PER_DOC)
    stage = Langid(LangidConfig(charset_check=CHECK))
    found: dict[str, Counter] = {}
    for lang, texts in sorted(docs.items()):
        texts = texts[:: 10 if quick else 1]
        out = stage(document_batch(texts))
        counts = Counter(documents=len(texts))
        for counter in ("charset_not_en", "fasttext_not_en"):
            counts[counter] = sum(out[f"langid_{counter}"].to_pylist())
        found[lang] = counts
    english = found.pop("en")
    others = sum(found.values(), Counter())
    latin_missed = sorted(
        (lang for lang, c in found.items() if c["charset_not_en"] < c["documents"] / 2),
        key=lambda lang: found[lang]["charset_not_en"] / found[lang]["documents"],
    )
    rows = [
        "## Character-set heuristic vs fastText",
        "",
        f"Clean prose from the lingua test sentences, {PER_DOC} to a document "
        f"({'every 10th document, ' if quick else ''}{len(found) + 1} languages). A document is "
        f"not English to the heuristic when under {CHECK:.0%} of its letters are ASCII "
        "(`langid.charset_check`), to fastText when lid.176 names another language or English "
        "under the threshold. Either count is what an English-only run would remove.",
        "",
        "| documents | found not English: character set | found not English: fastText |",
        "|---|---:|---:|",
        f"| English ({english['documents']:,}) | {english['charset_not_en']:,} | "
        f"{english['fasttext_not_en']:,} |",
        f"| the other {len(found)} languages ({others['documents']:,}) | "
        f"{others['charset_not_en']:,} ({others['charset_not_en'] / others['documents']:.1%}) | "
        f"{others['fasttext_not_en']:,} ({others['fasttext_not_en'] / others['documents']:.1%}) |",
        "",
        f"Languages the heuristic takes for English in most documents ({len(latin_missed)}): "
        + ", ".join(
            f"{lang} {1 - found[lang]['charset_not_en'] / found[lang]['documents']:.0%}"
            for lang in latin_missed
        )
        + ".",
    ]
    return "\n".join(rows)
