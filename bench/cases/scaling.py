"""Scaling: raypipe's whole run on 1 and 2 CPUs and on 1x, 4x and 16x the input, with the
peak memory of the driver (which must not grow with the input) and of Ray's processes."""

from __future__ import annotations

import shutil

from bench.common import CACHE, REPEATS, Measurement, run_script, shared
from bench.runs import FILES, RAYPIPE_RUN, write_slice

INPUT = "bench/gutenberg_en_docs.jsonl.zst"
BASE_MB = {True: 0.25, False: 6}
SIZES = (1, 4, 16)
CPUS = (1, 2)
# Six whole runs of Ray per repeat: a quick run times one after the warm-up.
RUNS = {True: 1, False: REPEATS}
DRIVER_GROWTH_LIMIT = 1.25  # driver peak at 16x over 1x above this is memory growing with input


def run(quick: bool) -> str:
    scratch = CACHE / "scaling"
    shutil.rmtree(scratch, ignore_errors=True)
    lines = [
        "| CPUs | input | documents | MB/s median | min | max | documents/s | driver peak RSS "
        "| Ray processes peak RSS | largest process peak |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    results = {}
    for size in SIZES:
        folder = scratch / f"input-{size}x"
        corpus = write_slice(shared(INPUT), 0, int(size * BASE_MB[quick] * 1e6), folder)
        for cpus in CPUS:
            out = run_script(
                RAYPIPE_RUN,
                {
                    "input": str(folder),
                    "out": str(scratch / f"out-{size}x-{cpus}"),
                    "cpus": cpus,
                    "repeats": RUNS[quick],
                    "set": {},
                },
                cpus=cpus,
            )
            shutil.rmtree(scratch / f"out-{size}x-{cpus}", ignore_errors=True)
            mb, low, high = Measurement("", corpus["mb"], out["seconds"]).rates
            docs = Measurement("", corpus["documents"], out["seconds"]).rate
            results[size, cpus] = (mb, out["driver_peak_mb"])
            lines.append(
                f"| {cpus} | {size}x ({corpus['mb']:.1f} MB) | {corpus['documents']:,} | "
                f"{mb:.2f} | {low:.2f} | {high:.2f} | {docs:,.1f} | "
                f"{out['driver_peak_mb']:,.0f} MB | {out['workers_peak_mb']:,.0f} MB | "
                f"{out['worker_peak_mb']:,.0f} MB |"
            )
    shutil.rmtree(scratch, ignore_errors=True)
    big, small = max(SIZES), min(SIZES)
    speedup = results[big, 2][0] / results[big, 1][0]
    growth = max(results[big, c][1] / results[small, c][1] for c in CPUS)
    findings = [
        f"- 2 CPUs vs 1 on the {big}x input: **{speedup:.2f}x** the throughput.",
        f"- Driver peak RSS at {big}x over {small}x: **{growth:.2f}x** "
        + (
            "— flat: the driver does not hold the corpus."
            if growth <= DRIVER_GROWTH_LIMIT
            else f"— **it grows with the input** (above {DRIVER_GROWTH_LIMIT}x)."
        ),
    ]
    return "\n\n".join(
        [
            "## Scaling: CPUs and input size (raypipe run)",
            f"Input: the first {BASE_MB[quick]} MB (1x), {4 * BASE_MB[quick]} MB (4x) and "
            f"{16 * BASE_MB[quick]} MB (16x) of text of `{INPUT}`, each dealt into {FILES} "
            ".jsonl.zst files. The whole run (normalize, quality, exact dedup, tokenize, pack, "
            "ledger, report, manifest) on a local Ray started with num_cpus = CPUs, the driver "
            f"and all of Ray pinned to that many cores; rates over {RUNS[quick]} run(s) after a "
            "warm-up. Peak RSS: the driver's own high-water mark; all of Ray's processes "
            "(raylet, GCS, workers) summed at the worst sample (every 0.25 s); the largest "
            "single process's high-water mark. RSS counts object-store pages a process maps.",
            "\n".join(lines),
            "\n".join(findings),
        ]
    )
