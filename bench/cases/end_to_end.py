"""End to end: `raypipe run` (normalize, heuristic quality, exact dedup, tokenize, pack)
beside the equivalent datatrove pipeline, on the same files and the same two cores."""

from __future__ import annotations

import shutil

from bench.common import CACHE, Measurement, ratio_table, run_peer, run_script, shared
from bench.profile import profile_script
from bench.runs import FILES, RAYPIPE_RUN, write_slice
from raypipe.tokenizer import load_tokenizer

INPUT = "bench/gutenberg_en_docs.jsonl.zst"
# Full: the whole file (~100 MB of text), then a small input, where start-up weighs most.
SLICES_MB = {True: (2,), False: (100, 2)}
CPUS = 2
REPEATS = 3
PEER = "datatrove"
RAYPIPE = "raypipe run"

WORK = (
    "Work: normalize (raypipe's rules) -> the three heuristic quality rules -> exact "
    "dedup (global) -> GPT-2 tokenize with EOS, one tokenizer.json for both (raypipe "
    "encodes it with tiktoken, datatrove with HF tokenizers: the same ids, compared "
    "below through the token counts). raypipe "
    "also packs fixed-length sequences into native shards and writes the rejects ledger, "
    "report and manifest; datatrove writes its cleaned documents (as raypipe writes its "
    "checkpoint), dedups in its three stages (signatures, find, filter) and leaves one "
    "shuffled token file per task (no packing, no merge step). datatrove has no HTML "
    "cleaning or these quality rules, so they run as a formatter and a filter step "
    "written the datatrove way (Python, per document)."
)

# datatrove's own steps where it has them (reader, exact dedup in its three stages,
# DocumentTokenizer); raypipe's cleaning and its three quality rules written the datatrove
# way (a formatter and a filter step, per document, in Python) so both keep the same
# documents. Stage 1 writes the cleaned documents, like raypipe's checkpoint.
DATATROVE = r"""
import json, os, re, sys, tempfile, time, unicodedata
from pathlib import Path
p = json.load(sys.stdin)
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import (
    ExactDedupConfig, ExactDedupFilter, ExactDedupSignature, ExactFindDedups,
)
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.formatters.base import BaseFormatter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.tokens import DocumentTokenizer
from datatrove.pipeline.writers import JsonlWriter

# datatrove runs steps in forkserver processes that do not see this script's globals:
# each step carries what it needs.
class Normalize(BaseFormatter):
    name = "normalize (raypipe's rules)"

    def format(self, text):
        import re, unicodedata
        blocks = "p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|header|footer|pre|blockquote"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        for pattern, replacement in (
            (r"(?is)<(?:script|style|noscript)\b.*?</(?:script|style|noscript)\s*>", ""),
            (r"(?s)<!--.*?-->", ""),
            (rf"(?i)</?(?:{blocks})\b[^<>]*>", "\n"),
            (r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>", ""),
        ):
            text = re.sub(pattern, replacement, text)
        for entity, char in (("&nbsp;", " "), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'),
                             ("&#39;", "'"), ("&apos;", "'"), ("&amp;", "&")):
            text = text.replace(entity, char)
        text = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]", "", text)
        text = re.sub("[ \t\u00a0\u3000]+", " ", text)
        text = re.sub(" ?\n ?", "\n", text)
        text = re.sub("\n{3,}", "\n\n", text).strip()
        return unicodedata.normalize("NFC", text)

class Heuristics(BaseFilter):
    name = "raypipe's three heuristic rules"

    def filter(self, doc):
        import re
        words = re.findall(r"\S+", doc.text)
        if len(words) < 50 or sum(w.isupper() for w in words) / len(words) > 0.5:
            return False
        visible = len(doc.text) - sum(ch.isspace() for ch in doc.text)
        return not visible or len(re.findall(r"[^\w\s]|_", doc.text)) / visible <= 0.3

def content(doc) -> str:
    return doc.text

def run():
    work = Path(tempfile.mkdtemp(dir=p["scratch"]))
    config = ExactDedupConfig(content_getter=content)
    tasks = p["files"]
    common = {"workers": p["cpus"], "skip_completed": False}
    LocalPipelineExecutor(
        [
            JsonlReader(p["input"], glob_pattern="*.jsonl.zst", id_key="id"),
            Normalize(),
            Heuristics(),
            JsonlWriter(str(work / "clean")),
            ExactDedupSignature(str(work / "sigs"), config=config),
        ],
        tasks=tasks, logging_dir=str(work / "logs1"), **common,
    ).run()
    LocalPipelineExecutor(
        [ExactFindDedups(str(work / "sigs"), str(work / "dups"), config=config)],
        tasks=1, logging_dir=str(work / "logs2"), **common,
    ).run()
    LocalPipelineExecutor(
        [
            JsonlReader(str(work / "clean")),
            ExactDedupFilter(str(work / "dups"), config=config),
            DocumentTokenizer(str(work / "tokens"), tokenizer_name_or_path=p["tokenizer"],
                              eos_token="<|endoftext|>"),
        ],
        tasks=tasks, logging_dir=str(work / "logs3"), **common,
    ).run()
    tokens = sum(f.stat().st_size for f in (work / "tokens").rglob("*.ds")) // 2
    return tokens

tokens = run()  # warm-up
seconds = []
for _ in range(p["repeats"]):
    started = time.perf_counter()
    run()
    seconds.append(time.perf_counter() - started)
import datatrove
print(json.dumps({"seconds": seconds, "tokens": tokens,
                  "version": getattr(datatrove, "__version__", "")}))
"""


def run(quick: bool) -> str:
    sections = [
        "## End to end: raypipe vs datatrove",
        f"{CPUS} cores for each: raypipe on a local Ray with num_cpus={CPUS}, datatrove's "
        f"LocalPipelineExecutor with {CPUS} workers and one task per file.",
        WORK,
    ]
    for slice_mb in SLICES_MB[quick]:
        sections += compare(slice_mb)
    return "\n\n".join(sections)


def compare(slice_mb: int) -> list[str]:
    """Both systems on the first `slice_mb` MB: the description, tables, findings and,
    where raypipe is slower, its profile."""
    scratch = CACHE / "end_to_end"
    shutil.rmtree(scratch, ignore_errors=True)
    corpus = write_slice(shared(INPUT), 0, slice_mb * 1_000_000, scratch / "input")
    tokenizer = scratch / "gpt2.tokenizer.json"
    load_tokenizer("gpt2").tokenizer.save(str(tokenizer))
    raypipe_payload = {
        "input": str(scratch / "input"),
        "out": str(scratch / "raypipe"),
        "cpus": CPUS,
        "repeats": REPEATS,
        # The light work both run (no recipe), and datatrove has no language ID step here.
        "set": {"recipe": None, "tokenizer": str(tokenizer), "langid": {"enabled": False}},
    }
    ours = run_script(RAYPIPE_RUN, raypipe_payload, cpus=CPUS)
    peer = run_peer(
        DATATROVE,
        {
            "input": str(scratch / "input"),
            "scratch": str(scratch),
            "files": FILES,
            "cpus": CPUS,
            "repeats": REPEATS,
            "tokenizer": str(tokenizer),
        },
        cpus=CPUS,
    )
    tables = []
    for unit, work in (("documents/s", corpus["documents"]), ("MB/s", corpus["mb"])):
        rows = [
            Measurement(RAYPIPE, work, ours["seconds"], note=f"{ours['tokens']:,} tokens out"),
            Measurement(PEER, work, peer["seconds"], note=f"{peer['tokens']:,} tokens out"),
        ]
        tables.append(ratio_table(unit, rows, PEER))
    ratio = Measurement("", 1, ours["seconds"]).rate / Measurement("", 1, peer["seconds"]).rate
    sections = [
        f"### {corpus['mb']:.0f} MB ({corpus['documents']:,} documents)",
        f"Input: the first {slice_mb} MB of text of `{INPUT}` ({corpus['documents']:,} "
        f"documents, {corpus['mb']:.1f} MB), dealt into {FILES} `.jsonl.zst` files that both "
        "systems read.",
        *tables,
        f"- Time per run: raypipe {min(ours['seconds']):.1f}–{max(ours['seconds']):.1f} s, "
        f"datatrove {min(peer['seconds']):.1f}–{max(peer['seconds']):.1f} s. Starting the "
        f"local Ray took {ours['ray_start']:.1f} s once, outside the timed runs. raypipe's "
        "steps in its last run (manifest `step_seconds`): "
        + ", ".join(f"{step} {took:.1f} s" for step, took in ours["step_seconds"].items())
        + ".\n"
        f"- Documents: {ours['documents_in']:,} in, {ours['documents_out']:,} out of raypipe. "
        f"Tokens out: raypipe {ours['tokens']:,}, datatrove {peer['tokens']:,} "
        + (
            "(identical)."
            if ours["tokens"] == peer["tokens"]
            else "(**different**: the two pipelines did not keep exactly the same text)."
        )
        + f"\n- Peak RSS: raypipe's driver {ours['driver_peak_mb']:,.0f} MB; all Ray "
        f"processes together {ours['workers_peak_mb']:,.0f} MB.\n"
        f"- raypipe runs at **{ratio:.2f}x** datatrove's speed"
        + (
            "."
            if ratio >= 1
            else f": **raypipe is slower here** on {slice_mb} MB — see the profile below."
        ),
    ]
    if ratio < 1:
        sections += [
            f"#### Profile: one raypipe run on {slice_mb} MB, Ray's start included "
            "(py-spy, every process)",
            profile_script(
                RAYPIPE_RUN,
                {**raypipe_payload, "out": str(scratch / "profiled"), "repeats": 0},
                cpus=CPUS,
            ),
        ]
    shutil.rmtree(scratch, ignore_errors=True)
    return sections
