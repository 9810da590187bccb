"""Scaling: raypipe's whole run on 1 and 2 CPUs and on 1x, 4x and 16x the input, with the
peak memory of the driver (which must not grow with the input) and of Ray's processes."""

from __future__ import annotations

import shutil

from bench.common import CACHE, Measurement, run_script, shared, slow_repeats
from bench.runs import FILES, RAYPIPE_RUN, write_slice

INPUT = "bench/gutenberg_en_docs.jsonl.zst"
BASE_MB = {True: 0.25, False: 6}
# A quick run leaves out 4x: each configuration pays for its own Ray's start.
SIZES = {True: (1, 16), False: (1, 4, 16)}
CPUS = (2, 1)
# A configuration still running after this is reported as unfinished, and the larger
# inputs are not tried on that many CPUs.
RUN_TIMEOUT = {True: 15 * 60, False: 60 * 60}
DRIVER_GROWTH_LIMIT = 1.25  # driver peak at 16x over 1x above this is memory growing with input


def run(quick: bool) -> str:
    scratch = CACHE / "scaling"
    shutil.rmtree(scratch, ignore_errors=True)
    lines = [
        "| CPUs | input | documents | MB/s median | min | max | documents/s | driver peak RSS "
        "| Ray processes peak RSS | largest process peak |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    results, stalled = {}, {}
    corpora = {
        size: write_slice(
            shared(INPUT), 0, int(size * BASE_MB[quick] * 1e6), scratch / f"input-{size}x"
        )
        for size in SIZES[quick]
    }
    for cpus, size in ((cpus, size) for cpus in CPUS for size in SIZES[quick]):
        corpus, folder = corpora[size], scratch / f"input-{size}x"
        label = f"{size}x ({corpus['mb']:.1f} MB)"
        if cpus in stalled:
            lines.append(
                f"| {cpus} | {label} | {corpus['documents']:,} | not run: "
                f"{stalled[cpus]} |" + " |" * 6
            )
            continue
        payload = {
            "input": str(folder),
            "out": str(scratch / f"out-{size}x-{cpus}"),
            "cpus": cpus,
            # Each configuration on its own Ray: a quick run times one cold run of each.
            "repeats": slow_repeats(quick),
            "warm_up": not quick,
            "set": {"recipe": None},  # the light work, comparable with earlier figures
        }
        try:
            out = run_script(RAYPIPE_RUN, payload, cpus=cpus, timeout=RUN_TIMEOUT[quick])
        except TimeoutError:
            stalled[cpus] = f"{cpus} CPU(s) did not finish {label} in {RUN_TIMEOUT[quick]} s"
            lines.append(
                f"| {cpus} | {label} | {corpus['documents']:,} | "
                f"**did not finish in {RUN_TIMEOUT[quick]} s** |" + " |" * 6
            )
            continue
        finally:
            shutil.rmtree(payload["out"], ignore_errors=True)
        mb, low, high = Measurement("", corpus["mb"], out["seconds"]).rates
        docs = Measurement("", corpus["documents"], out["seconds"]).rate
        results[size, cpus] = (mb, out["driver_peak_mb"])
        lines.append(
            f"| {cpus} | {label} | {corpus['documents']:,} | "
            f"{mb:.2f} | {low:.2f} | {high:.2f} | {docs:,.1f} | "
            f"{out['driver_peak_mb']:,.0f} MB | {out['workers_peak_mb']:,.0f} MB | "
            f"{out['worker_peak_mb']:,.0f} MB |"
        )
    shutil.rmtree(scratch, ignore_errors=True)
    return "\n\n".join(
        [
            "## Scaling: CPUs and input size (raypipe run)",
            "Input: the first "
            + ", ".join(f"{size * BASE_MB[quick]:g} MB ({size}x)" for size in SIZES[quick])
            + f" of text of `{INPUT}`, each dealt into {FILES} "
            ".jsonl.zst files. The whole run (normalize, quality, exact dedup, tokenize, pack, "
            "ledger, report, manifest) on a local Ray (2 logical CPUs, at most CPUs actors "
            "per stage), the driver "
            f"and all of Ray pinned to that many cores; rates over {slow_repeats(quick)} run(s)"
            + ("" if quick else " after a warm-up run")
            + " (Ray's start not included). Peak RSS: the driver's own high-water mark; "
            "all of Ray's processes (raylet, GCS, workers) summed at the worst sample "
            "(every 0.25 s); the largest single process's high-water mark. RSS counts the "
            "object-store pages a process maps.",
            "\n".join(lines),
            "\n".join(findings(results, stalled, SIZES[quick])),
        ]
    )


def findings(results: dict, stalled: dict, sizes: tuple[int, ...]) -> list[str]:
    big, small = max(sizes), min(sizes)
    lines = [
        f"- **{reason}**: raypipe is stuck or far slower there." for reason in stalled.values()
    ]
    if (big, 2) in results and (big, 1) in results:
        speedup = results[big, 2][0] / results[big, 1][0]
        lines.append(f"- 2 CPUs vs 1 on the {big}x input: **{speedup:.2f}x** the throughput.")
    for cpus in CPUS:
        if (big, cpus) in results and (small, cpus) in results:
            growth = results[big, cpus][1] / results[small, cpus][1]
            verdict = (
                "flat: the driver does not hold the corpus."
                if growth <= DRIVER_GROWTH_LIMIT
                else f"**it grows with the input** (above {DRIVER_GROWTH_LIMIT}x)."
            )
            lines.append(
                f"- Driver peak RSS on {cpus} CPU(s), {big}x over {small}x input: "
                f"**{growth:.2f}x** — {verdict}"
            )
    return lines
