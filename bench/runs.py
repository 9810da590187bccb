"""Whole raypipe runs for the end-to-end and scaling cases: one input, sliced into files,
run through `Pipeline.run` on a local Ray, timed, with the peak memory of every process."""

from __future__ import annotations

import io
import json
from pathlib import Path

import zstandard

from bench.common import iter_jsonl_zst

# Input files per slice: every system gets the same files, and both raypipe (one read
# task per file) and datatrove (one task per file) need several to use two cores.
FILES = 8


def write_slice(source: Path, skip_bytes: int, limit_bytes: int, folder: Path) -> dict:
    """The documents after the first `skip_bytes` of text of `source`, up to `limit_bytes`
    of text, dealt round-robin into FILES .jsonl.zst files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    sinks = [io.BytesIO() for _ in range(FILES)]
    documents = text_bytes = seen = 0
    for row in iter_jsonl_zst(source):
        size = len(row["text"].encode())
        seen += size
        if seen <= skip_bytes:
            continue
        sinks[documents % FILES].write(json.dumps(row, ensure_ascii=False).encode() + b"\n")
        documents += 1
        text_bytes += size
        if text_bytes >= limit_bytes:
            break
    for index, sink in enumerate(sinks):
        (folder / f"part-{index:02d}.jsonl.zst").write_bytes(zstandard.compress(sink.getvalue()))
    return {"documents": documents, "mb": text_bytes / 1e6}


# Starts a local Ray, runs raypipe `repeats` times (after one untimed warm-up run unless
# warm_up is false) and samples the resident memory of the driver and of every process
# under it (Ray's workers) from /proc. Payload: input, out, cpus, repeats, warm_up, set
# (config overrides).
RAYPIPE_RUN = """
import json, os, sys, threading, time
from pathlib import Path
p = json.load(sys.stdin)

def rss_kb(pid, field="VmRSS"):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0

def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found

peak = {"workers_kb": 0, "worker_kb": 0}
stop = threading.Event()
def sample():
    while not stop.is_set():
        pids = descendants(os.getpid())
        peak["workers_kb"] = max(peak["workers_kb"], sum(rss_kb(pid) for pid in pids))
        peak["worker_kb"] = max([peak["worker_kb"], *(rss_kb(pid, "VmHWM") for pid in pids)])
        stop.wait(0.25)  # an Event wait, which the profile counts as waiting, not working

from raypipe.pipeline import Pipeline
from raypipe.config import PipelineConfig
from raypipe.runtime import connect
config = {
    "input": {"paths": [p["input"]], "id_field": "id"},
    # The process is pinned to p["cpus"] cores; Ray still gets 2 logical CPUs (raypipe's
    # minimum: stage actors beside read tasks) and at most p["cpus"] actors per stage.
    "ray": {"num_cpus": max(2, p["cpus"]), "max_actors": p["cpus"]},
    "tokenizer": "gpt2",
    **p["set"],
}
started = time.perf_counter()
cfg = PipelineConfig.model_validate({**config, "output": {"path": p["out"] + "/warm-up"}})
for attempt in range(3):  # on a busy machine Ray's node start can pass its fixed 30 s
    try:
        connect(cfg.ray, cfg.storage)
        break
    except Exception:
        import ray
        ray.shutdown()
        if attempt == 2:
            raise
ray_start = time.perf_counter() - started
threading.Thread(target=sample, daemon=True).start()
if p.get("warm_up", True):
    manifest = Pipeline(cfg, log=lambda *_: None).run()
seconds = []
for repeat in range(p["repeats"]):
    cfg = PipelineConfig.model_validate({**config, "output": {"path": f"{p['out']}/{repeat}"}})
    started = time.perf_counter()
    manifest = Pipeline(cfg, log=lambda *_: None).run()
    seconds.append(time.perf_counter() - started)
stop.set()
print(json.dumps({
    "seconds": seconds,
    "ray_start": ray_start,
    "documents_in": manifest["documents_in"],
    "documents_out": manifest["documents_out"],
    "tokens": manifest["tokens"],
    "step_seconds": manifest["step_seconds"],
    "driver_peak_mb": rss_kb(os.getpid(), "VmHWM") / 1024,
    "workers_peak_mb": peak["workers_kb"] / 1024,
    "worker_peak_mb": peak["worker_kb"] / 1024,
}))
"""
