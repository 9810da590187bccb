"""Memory: the peak memory of a whole `raypipe run` as its input grows 1x, 4x, 16x, and a
run of 2 GB inside a 4 GiB memory limit.

The figure is `../shared/tools/peak-memory`'s: the summed proportional set size (PSS) of
every process the run started (driver, raylet, GCS, every worker; shared object-store
pages counted once), sampled every half second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
import zstandard

from bench.common import CACHE, ROOT, iter_jsonl_zst, shared
from bench.runs import FILES

SOURCES = (
    "bench/gutenberg_en_100mb.jsonl.zst",
    "bench/gutenberg_en_docs.jsonl.zst",
    "bench/mixed_en_docs.jsonl.zst",
)
SIZES_MB = {True: (25, 100), False: (25, 100, 400)}
GROWTH_LIMIT = 1.2  # peak at 16x over the peak at 1x above this is memory growing with input
RECIPES = {
    # Every option's own default: normalize, the heuristic rules, exact dedup, tokenize, pack.
    "no recipe": {"recipe": None},
    # The default recipe: all of that, plus language ID, Gopher, C4 and FineWeb rules,
    # verified MinHash near dedup and PII masking (everything but extraction, on text).
    "production (default)": {},
}
LIMITED_MB, LIMIT_GIB = 2000, 4
PEAK_MEMORY = ROOT.parent / "shared" / "tools" / "peak-memory"


def write_corpus(mb: int, folder: Path) -> dict:
    """`mb` MB of text from the held-out books and documents, dealt into FILES files; past
    the end of the sources they start over, each pass's texts headed by its number so
    that exact dedup keeps them (near dedup removes them: they are near duplicates)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"part-{i:02d}.jsonl.zst" for i in range(FILES)]
    sinks = [zstandard.ZstdCompressor().stream_writer(p.open("wb")) for p in paths]
    documents = written = passes = 0
    while written < mb * 1e6:
        for source in SOURCES:
            for row in iter_jsonl_zst(shared(source)):
                text = row["text"] if not passes else f"Edition {passes}.\n\n{row['text']}"
                line = {"id": f"{passes}-{documents}", "text": text}
                sinks[documents % FILES].write(
                    json.dumps(line, ensure_ascii=False).encode() + b"\n"
                )
                documents += 1
                written += len(text.encode())
                if written >= mb * 1e6:
                    break
            if written >= mb * 1e6:
                break
        passes += 1
    for sink in sinks:
        sink.close()
    return {"documents": documents, "mb": written / 1e6}


def peak(corpus: Path, out: Path, recipe: dict, limit_gib: int | None = None) -> dict:
    """One `raypipe run` from scratch under peak-memory (inside a memory cgroup of
    `limit_gib`)."""
    shutil.rmtree(out, ignore_errors=True)
    config = {
        "input": {"paths": [str(corpus)], "id_field": "id"},
        "output": {"path": str(out)},
        "tokenizer": "gpt2",
        "ray": {"num_cpus": 2},
        **recipe,
    }
    cfg = out.with_suffix(".yaml")
    cfg.write_text(yaml.safe_dump(config))
    raypipe = str(Path(sys.executable).with_name("raypipe"))
    command = [sys.executable, str(PEAK_MEMORY), "--json", "--", raypipe, "run", str(cfg)]
    if limit_gib:
        group = limited_cgroup(limit_gib)
        command = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=4 * 3600)
    result = json.loads(done.stderr.strip().splitlines()[-1])
    manifest = json.loads((out / "manifest.json").read_text()) if done.returncode == 0 else {}
    result["shards"] = [s["sha256"] for s in manifest.get("shards", [])]
    result["documents_in"] = manifest.get("documents_in")
    result["tokens"] = manifest.get("tokens")
    return result


def limited_cgroup(gib: int) -> str:
    """A cgroup (v1 memory controller, else v2) below this process's own, holding at most
    `gib` GiB: the run's processes are put in it, and the kernel enforces the limit."""
    own = next(
        line.split(":", 2)[2].strip()
        for line in Path("/proc/self/cgroup").read_text().splitlines()
        if ":memory:" in line or line.startswith("0::")
    )
    for root, limit in (
        ("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
        ("/sys/fs/cgroup", "memory.max"),
    ):
        group = Path(root + own) / "raypipe-bench"
        if Path(root + own).exists():
            group.mkdir(exist_ok=True)
            (group / limit).write_text(str(gib << 30))
            return str(group)
    raise SystemExit("no memory cgroup to limit the run in")


def gib(value: float) -> str:
    return f"{value:.2f} GiB"


def plot(peaks: dict[str, list[tuple[int, float]]], width: int = 50) -> list[str]:
    """A bar per run, to scale: the peak against the input size, as a text plot."""
    top = max(value for runs in peaks.values() for _, value in runs)
    lines = ["```"]
    for name, runs in peaks.items():
        for mb, value in runs:
            bar = "#" * max(1, round(width * value / top))
            lines.append(f"{name:>8} {mb:>5} MB |{bar} {gib(value)}")
    return [*lines, "```"]


def run(quick: bool) -> str:
    scratch = CACHE / "memory"
    shutil.rmtree(scratch, ignore_errors=True)
    sizes = SIZES_MB[quick]
    corpora = {mb: write_corpus(mb, scratch / f"input-{mb}") for mb in sizes}
    lines = [
        "## Memory: a whole run's peak as the input grows",
        "",
        "Input: "
        + ", ".join(f"{mb} MB ({c['documents']:,} documents)" for mb, c in corpora.items())
        + " of text from "
        + ", ".join(f"`{s}`" for s in SOURCES)
        + " (repeated past their "
        "end, each pass headed by its number), dealt into 8 files. `raypipe run` with "
        "tokenizer gpt2, seq_len 2048, a local Ray of 2 CPUs; the whole run under "
        "`../shared/tools/peak-memory` (PSS of every process it started, every 0.5 s).",
        "",
        "| recipe | " + " | ".join(f"{mb} MB" for mb in sizes) + " | 16x over 1x |",
        "|---|" + "---:|" * (len(sizes) + 1),
    ]
    notes, peaks = [], {}
    for name, recipe in RECIPES.items():
        results = [
            peak(scratch / f"input-{mb}", scratch / f"out-{name}-{mb}", recipe) for mb in sizes
        ]
        peaks[name] = [(mb, r["peak_pss_gib"]) for mb, r in zip(sizes, results, strict=True)]
        growth = results[-1]["peak_pss_gib"] / results[0]["peak_pss_gib"]
        cells = " | ".join(f"{gib(r['peak_pss_gib'])} ({r['wall_s']:.0f} s)" for r in results)
        lines.append(f"| {name} | {cells} | {growth:.2f}x |")
        verdict = "flat" if growth <= GROWTH_LIMIT else "growing with the input (over 1.2x)"
        notes.append(
            f"- {name}: peak at {sizes[-1]} MB over {sizes[0]} MB **{growth:.2f}x** — {verdict}."
        )
    lines += ["", *notes, "", *plot(peaks)]
    if not quick:
        corpus = write_corpus(LIMITED_MB, scratch / "input-limited")
        light = RECIPES["no recipe"]
        free = peak(scratch / "input-limited", scratch / "out-free", light)
        held = peak(scratch / "input-limited", scratch / "out-limited", light, LIMIT_GIB)
        same = held["shards"] == free["shards"] and bool(held["shards"])
        lines += [
            "",
            f"### {LIMITED_MB / 1000:.0f} GB inside a {LIMIT_GIB} GiB memory limit",
            "",
            f"{corpus['documents']:,} documents, no recipe. The run's processes are put in a "
            f"memory cgroup (`memory.limit_in_bytes` = {LIMIT_GIB} GiB, cgroup v1 here) that the "
            "kernel enforces; the same input run without the limit is the reference.",
            "",
            "| run | exit | peak memory | wall | shards |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| {label} | {r['exit']} | {gib(r['peak_pss_gib'])} | {r['wall_s']:.0f} s | "
                f"{len(r['shards'])} |"
                for label, r in (("no limit", free), (f"{LIMIT_GIB} GiB limit", held))
            ),
            "",
            f"- Output under the limit {'byte-identical to' if same else 'DIFFERS from'} the "
            "unconstrained run (sha256 of every shard).",
        ]
    return "\n".join(lines)
