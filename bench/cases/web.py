"""Web input: extraction speed and quality, WARC robustness, language-ID accuracy and speed.

Everything runs on one core. Extraction speed: the `extract` stage on Arrow batches vs the
library called directly on the same page bytes, and datatrove's Trafilatura extractor (the
FineWeb step) in the peers' environment. Quality: the stage's output scored against the
gold of trafilatura's evaluation set, Mozilla Readability's test pages and the Scrapinghub
article-extraction benchmark. Language ID: the `langid` stage vs fastText's own batched
`predict` on the same texts, and accuracy on the Lingua test data.
"""

from __future__ import annotations

import gzip
import json
import pickle
import re
import statistics
import tarfile
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import zstandard

from bench.common import (
    REPEATS,
    Measurement,
    iter_jsonl_zst,
    measure,
    ratio_table,
    run_peer,
    shared,
)
from bench.profile import profile_script
from raypipe.batch import CORE_SCHEMA
from raypipe.config import ExtractConfig, InputConfig, LangidConfig
from raypipe.io.readers import read_file
from raypipe.stages.extract import Extract
from raypipe.stages.langid import Langid, load_model

BATCH = 256  # ray.batch_docs default: the batch size the stages see in a run
TOKEN = re.compile(r"\w+")


def untar(name: str) -> dict[str, bytes]:
    """Members of an eval/html/*.tar.zst, by path inside the archive."""
    files = {}
    with open(shared(f"eval/html/{name}"), "rb") as raw:
        stream = zstandard.ZstdDecompressor().stream_reader(raw)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                if member.isfile():
                    files[member.name] = tar.extractfile(member).read()
    return files


def page_batch(pages: list[bytes]) -> pa.Table:
    n = len(pages)
    columns = {
        "uid": list(range(n)),
        "id": [str(i) for i in range(n)],
        "source": ["bench"] * n,
        "text": [""] * n,
        "stage": pa.nulls(n, pa.string()),
        "reason": pa.nulls(n, pa.string()),
        "title": pa.nulls(n, pa.string()),
        "html": pa.array(pages, pa.binary()),
    }
    return pa.table(
        columns, schema=pa.schema([*CORE_SCHEMA, ("title", pa.string()), ("html", pa.binary())])
    )


def stage_texts(engine: str, pages: list[bytes]) -> list[str]:
    stage = Extract(ExtractConfig(engine=engine))
    texts: list[str] = []
    for start in range(0, len(pages), BATCH):
        texts += stage(page_batch(pages[start : start + BATCH]))["text"].to_pylist()
    return texts


# -- extraction speed ------------------------------------------------------------------
DATATROVE = """
import json, sys, time
from datatrove.data import Document
from datatrove.pipeline.extractors import Trafilatura
args = json.load(sys.stdin)
pages = [p for p in json.load(open(args["pages"]))]
extractor = Trafilatura(timeout=args["timeout"])
def once():
    docs = (Document(text=p, id=str(i)) for i, p in enumerate(pages))
    return sum(1 for _ in extractor.run(docs))
once()
seconds = []
for _ in range(args["repeats"]):
    start = time.perf_counter(); kept = once(); seconds.append(time.perf_counter() - start)
print(json.dumps({"seconds": seconds, "kept": kept}))
"""


def _raw_resiliparse(pages: list[bytes]) -> None:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    for page in pages:
        extract_plain_text(
            bytes_to_str(page, detect_encoding(page)),
            main_content=True,
            preserve_formatting=True,
            list_bullets=False,
            alt_texts=False,
        )


def _raw_trafilatura(pages: list[bytes]) -> None:
    import trafilatura

    for page in pages:
        trafilatura.extract(page, include_comments=False, include_tables=True)


def extraction_speed(pages: list[bytes]) -> tuple[str, str]:
    megabytes = sum(map(len, pages)) / 1e6
    n = len(pages)
    rows = []
    for engine, raw in (("resiliparse", _raw_resiliparse), ("trafilatura", _raw_trafilatura)):
        rows.append(measure(f"{engine} (library)", n, lambda r=raw: r(pages)))
        rows.append(
            measure(
                f"raypipe extract, {engine}",
                n,
                lambda e=engine: stage_texts(e, pages),
                note="decode, extract, title, NFC, Arrow in/out",
            )
        )
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump([p.decode("utf-8", "replace") for p in pages], handle)
    timeout = 60.0  # FineWeb keeps datatrove's 1 s; a loaded machine would time pages out
    peer = run_peer(
        DATATROVE, {"pages": handle.name, "repeats": REPEATS, "timeout": timeout}, cpus=1
    )
    Path(handle.name).unlink()
    note = f"run() with its per-page sandbox; {peer['kept']} of {n} pages kept"
    rows.append(Measurement("datatrove Trafilatura", n, peer["seconds"], note))
    tables = [
        ratio_table("pages/s", rows[:2], "resiliparse (library)"),
        ratio_table("pages/s", rows[2:], "trafilatura (library)"),
    ]
    # The library rows are ceilings (the stage does more); datatrove is the peer.
    tables += slower_than("trafilatura", rows[3], rows[4], pages)
    note = f"{n} pages of trafilatura's evaluation set, {megabytes:.1f} MB of HTML"
    return "\n\n".join(tables), note


# The stage alone, for its profile where a peer extracts faster.
PROFILED_STAGE = """
import json, pickle, sys
from bench.cases.web import stage_texts
p = json.load(sys.stdin)
pages = pickle.loads(open(p["pages"], "rb").read())
for _ in range(p["repeats"]):
    stage_texts(p["engine"], pages)
"""


def slower_than(engine: str, ours: Measurement, peer: Measurement, pages: list[bytes]) -> list[str]:
    """A plain statement and the stage's profile where the peer extracts faster."""
    if peer.rate <= ours.rate:
        return []
    with tempfile.NamedTemporaryFile(suffix=".pickle") as handle:
        handle.write(pickle.dumps(pages))
        handle.flush()
        payload = {"pages": handle.name, "engine": engine, "repeats": REPEATS}
        profile = profile_script(PROFILED_STAGE, payload, cpus=1)
    return [
        f"**raypipe's extract stage with {engine} is slower here**: {ours.rate:,.2f} pages/s "
        f"against {peer.system} {peer.rate:,.2f}. Profile of the stage on these pages "
        "(py-spy, 1 core):",
        profile,
    ]


# -- extraction quality ----------------------------------------------------------------
def shingles(text: str, n: int = 4) -> Counter:
    tokens = TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)))


def shingle_scores(gold: list[str], predicted: list[str]) -> tuple[float, float, float]:
    """The Scrapinghub benchmark's measure: 4-word shingles, per-page normalized, averaged."""
    precisions, recalls = [], []
    for true, pred in zip(gold, predicted, strict=True):
        t, p = shingles(true), shingles(pred)
        tp = sum((t & p).values())
        fp, fn = sum(p.values()) - tp, sum(t.values()) - tp
        if fp == fn == 0:
            precisions.append(1.0)
            recalls.append(1.0)
            continue
        if tp + fp:
            precisions.append(tp / (tp + fp))
        if tp + fn:
            recalls.append(tp / (tp + fn))
    precision, recall = statistics.mean(precisions), statistics.mean(recalls)
    return precision, recall, 2 * precision * recall / (precision + recall)


def word_scores(gold: list[str], predicted: list[str]) -> tuple[float, float, float]:
    """Bag-of-words precision/recall over all pages (micro average)."""
    tp = fp = fn = 0
    for true, pred in zip(gold, predicted, strict=True):
        t, p = Counter(TOKEN.findall(true.lower())), Counter(TOKEN.findall(pred.lower()))
        hit = sum((t & p).values())
        tp, fp, fn = tp + hit, fp + sum(p.values()) - hit, fn + sum(t.values()) - hit
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return precision, recall, 2 * precision * recall / (precision + recall)


def snippet_scores(cases: list[dict], predicted: list[str]) -> tuple[float, float, float]:
    """trafilatura's own measure: `with` snippets found, `without` snippets absent."""
    tp = fp = fn = tn = 0
    for case, text in zip(cases, predicted, strict=True):
        for snippet in case.get("with", []):
            tp, fn = (tp + 1, fn) if snippet in text else (tp, fn + 1)
        for snippet in case.get("without", []):
            fp, tn = (fp + 1, tn) if snippet in text else (fp, tn + 1)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return precision, recall, 2 * precision * recall / (precision + recall)


def aeb_set(limit: int | None) -> tuple[list[bytes], list[str]]:
    files = untar("scrapinghub_aeb.tar.zst")
    truth = json.loads(files["scrapinghub_aeb/ground-truth.json"])
    keys = sorted(truth)[:limit]
    pages = [gzip.decompress(files[f"scrapinghub_aeb/html/{key}.html.gz"]) for key in keys]
    return pages, [truth[key]["articleBody"] for key in keys]


def readability_set(limit: int | None) -> tuple[list[bytes], list[str]]:
    from resiliparse.extract.html2text import extract_plain_text

    files = untar("readability_testpages.tar.zst")
    cases = sorted({name.split("/")[3] for name in files if name.count("/") == 4})[:limit]
    root = "readability_testpages/test/test-pages"
    pages = [files[f"{root}/{case}/source.html"] for case in cases]
    gold = [
        extract_plain_text(files[f"{root}/{case}/expected.html"].decode("utf-8", "replace"))
        for case in cases
    ]
    return pages, gold


def trafilatura_set(limit: int | None) -> tuple[list[bytes], list[dict]]:
    files = untar("trafilatura_eval.tar.zst")
    evaldata = json.loads(files["trafilatura_eval/tests/evaldata.json"])
    pages, cases = [], []
    for case in evaldata.values():
        for folder in ("eval", "cache"):
            page = files.get(f"trafilatura_eval/tests/{folder}/{case['file']}")
            if page is not None:
                pages.append(page)
                cases.append(case)
                break
    return pages[:limit], cases[:limit]


def quality(limit: int | None) -> tuple[str, list[bytes]]:
    lines = [
        "| set (pages) | measure | engine | precision | recall | F1 | published for comparison |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    aeb_pages, aeb_gold = aeb_set(limit)
    rd_pages, rd_gold = readability_set(limit)
    tf_pages, tf_cases = trafilatura_set(limit)
    published = {
        "aeb": "readability-lxml F1 0.922, newspaper 0.912, dragnet 0.907, boilerpipe 0.860, "
        "html-text (all text) 0.665 (benchmark README)",
        "trafilatura": "trafilatura 1.2.2 P 0.914 R 0.904 F 0.909; readability-lxml 0.891 / "
        "0.729 / 0.801 (750 pages, trafilatura docs 2022)",
        "readability": "none: the expected output is Readability.js's own",
    }
    for engine in ("resiliparse", "trafilatura"):
        sets: list[tuple[str, str, Callable, list, list[bytes]]] = [
            (
                f"Scrapinghub AEB ({len(aeb_pages)})",
                "4-word shingles (AEB)",
                shingle_scores,
                aeb_gold,
                aeb_pages,
            ),
            (f"Scrapinghub AEB ({len(aeb_pages)})", "words", word_scores, aeb_gold, aeb_pages),
            (f"Readability tests ({len(rd_pages)})", "words", word_scores, rd_gold, rd_pages),
            (
                f"trafilatura eval ({len(tf_pages)})",
                "snippets (trafilatura)",
                snippet_scores,
                tf_cases,
                tf_pages,
            ),
        ]
        for name, measure_name, score, gold, pages in sets:
            p, r, f = score(gold, stage_texts(engine, pages))
            key = "aeb" if "AEB" in name else "readability" if "Readab" in name else "trafilatura"
            lines.append(
                f"| {name} | {measure_name} | {engine} | {p:.3f} | {r:.3f} | {f:.3f} | "
                f"{published[key] if engine == 'resiliparse' else ''} |"
            )
    return "\n".join(lines), tf_pages


# -- WARC robustness -------------------------------------------------------------------
def warc_samples() -> str:
    root = shared("eval/html/warc_samples")
    lines = ["| file | pages | rejects |", "|---|---:|---|"]
    total_pages = total_rejects = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "LICENSE" not in p.name):
        cfg = InputConfig(paths=[str(path)], format="warc")
        batches = [Extract(ExtractConfig())(b) for b in read_file(str(path), 0, cfg, BATCH)]
        reasons = Counter(r for b in batches for r in b["reason"].drop_null().to_pylist())
        pages = sum(b.num_rows for b in batches) - sum(reasons.values())
        total_pages += pages
        total_rejects += sum(reasons.values())
        shown = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "-"
        lines.append(f"| {path.relative_to(root)} | {pages} | {shown} |")
    lines.append(f"| **all {len(lines) - 2} files** | **{total_pages}** | **{total_rejects}** |")
    return "\n".join(lines)


# -- language ID -----------------------------------------------------------------------
# Lingua names Norwegian Bokmål `nb`; lid.176 calls it `no`.
LINGUA_TO_FASTTEXT = {"nb": "no"}


def langid_accuracy(rows: list[dict]) -> tuple[str, list[str]]:
    model = load_model(None)
    flat = [" ".join(row["text"].split()) for row in rows]
    labels, _ = model.predict(flat, k=1)
    hits: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row, label in zip(rows, labels, strict=True):
        want = LINGUA_TO_FASTTEXT.get(row["lang"], row["lang"])
        cell = hits[(row["lang"], row["kind"])]
        cell[0] += label[0] == f"__label__{want}"
        cell[1] += 1
    kinds = ["sentences", "word-pairs", "single-words"]
    languages = sorted({lang for lang, _ in hits})
    lines = [
        "| kind | documents | accuracy (micro) | mean over languages |",
        "|---|---:|---:|---:|",
    ]
    for kind in kinds:
        cells = [hits[(lang, kind)] for lang in languages if hits[(lang, kind)][1]]
        right, total = sum(c[0] for c in cells), sum(c[1] for c in cells)
        macro = statistics.mean(c[0] / c[1] for c in cells)
        lines.append(f"| {kind} | {total:,} | {right / total:.3f} | {macro:.3f} |")

    def accuracy(lang: str, kind: str) -> float:
        right, total = hits[(lang, kind)]
        return right / total if total else float("nan")

    known = {label.removeprefix("__label__") for label in model.labels}
    missing = [lang for lang in languages if LINGUA_TO_FASTTEXT.get(lang, lang) not in known]
    weakest = sorted(languages, key=lambda lang: accuracy(lang, "sentences"))
    lines += [
        "",
        "Per language (accuracy on sentences / word pairs / single words), weakest first:",
        "",
        "| language | sentences | word pairs | single words |",
        "|---|---:|---:|---:|",
    ]
    for lang in weakest:
        values = " | ".join(f"{accuracy(lang, kind):.3f}" for kind in kinds)
        lines.append(f"| {lang} | {values} |")
    lines += ["", f"Not among lid.176's labels, so never right: {', '.join(missing) or 'none'}."]
    return "\n".join(lines), [lang for lang in weakest if lang not in missing][:8]


def langid_speed(texts: list[str], label: str) -> str:
    stage = Langid(LangidConfig())
    model = stage.model
    n = len(texts)
    tables = []
    for start in range(0, n, BATCH):
        part = texts[start : start + BATCH]
        k = len(part)
        tables.append(
            pa.table(
                {
                    "uid": list(range(k)),
                    "id": [""] * k,
                    "source": [""] * k,
                    "text": part,
                    "stage": pa.nulls(k, pa.string()),
                    "reason": pa.nulls(k, pa.string()),
                },
                schema=CORE_SCHEMA,
            )
        )
    flat = [" ".join(t.splitlines()) for t in texts]
    rows = [
        measure(
            "fastText predict (library)",
            n,
            lambda: model.predict(flat, k=1),
            note="texts flattened beforehand, one call",
        ),
        measure(
            "raypipe langid",
            n,
            lambda: [stage(t) for t in tables],
            note=f"batches of {BATCH}: flatten, predict, annotate",
        ),
    ]
    return f"{label}:\n\n" + ratio_table("documents/s", rows, "fastText predict (library)")


def langid_section(quick: bool) -> tuple[str, list[str]]:
    rows = list(iter_jsonl_zst(shared("eval/langid/lingua_testdata.jsonl.zst")))
    if quick:
        rows = rows[::20]
    accuracy, weakest = langid_accuracy(rows)
    sentences = [r["text"] for r in rows if r["kind"] == "sentences"]
    books = [
        r["text"]
        for r in iter_jsonl_zst(
            shared("bench/gutenberg_en_docs.jsonl.zst"),
            limit_bytes=2_000_000 if quick else 20_000_000,
        )
    ]
    speed = "\n\n".join(
        [
            langid_speed(
                sentences,
                f"{len(sentences):,} Lingua sentences (short: the per-document overhead dominates)",
            ),
            langid_speed(books, f"{len(books):,} Gutenberg documents of 2–20 KB"),
        ]
    )
    return speed + "\n\n" + accuracy, weakest


def run(quick: bool) -> str:
    limit = 40 if quick else None
    quality_table, tf_pages = quality(limit)
    speed_pages = tf_pages[: 40 if quick else 300]
    speed_tables, speed_note = extraction_speed(speed_pages)
    langid, weakest = langid_section(quick)
    return f"""## Web input: extraction, WARC reading, language ID

### Extraction speed (one core)

{speed_tables}

Input: {speed_note}. Library rows call the library on the page bytes directly (resiliparse
with its own charset detection and the same options as the stage; trafilatura with the
stage's options). The stage row adds UTF-8 check or charset detection, the page title, NFC
and the Arrow batch in and out. datatrove runs trafilatura with `favor_precision` and
`deduplicate` in a sandboxed subprocess per page, as in FineWeb.

### Extraction quality

{quality_table}

The `extract` stage's own output is scored. AEB: the Scrapinghub benchmark's measure
(4-word shingles, averaged per page) and plain word overlap. Readability: word overlap with
the text of Readability.js's expected output. trafilatura eval: the share of `with`
snippets found (recall) and of found snippets that are not `without` boilerplate
(precision), the measure of trafilatura's own evaluation (its published table used 750 of
these pages with an older trafilatura).

### WARC files, including the malformed ones (`eval/html/warc_samples/`)

{warc_samples()}

Every file is read with `input.format: warc`; none stops the run. `.arc`, `.lz4`, WAT and
WET files are not WARC response records of HTML: they give rejects or no pages. ClueWeb09's
LF-only HTTP headers and stale `Content-Encoding` are read.

### Language ID (lid.176.ftz, bundled)

{langid}

Weakest languages lid.176 knows, on sentences: {", ".join(weakest)}.
Labels and scores of the stage equal
fastText's `predict` on the same flattened text (tests/unit/test_langid.py checks every
document). Lingua test data: Leipzig corpora lines; `nb` is scored as lid.176's `no`.
{"Quick run: every 20th row." if quick else ""}
"""
