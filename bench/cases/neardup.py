"""Near-duplicate removal: accuracy against exact Jaccard, the S-curve, speed beside peers.

Inputs: `bench/gutenberg_en_docs.jsonl.zst` (real book passages) with planted near-duplicates
of known exact Jaccard appended; `eval/neardup/` (Clough & Stevenson plagiarism answers and
Gutenberg edition pairs). raypipe runs its whole clustering in one process here (the same
shard code the Ray actors run), datasketch MinHashLSH and datatrove's 4-stage MinHash run
in the peers' environment, each on one core and the same JSONL file.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import zstandard

from bench.common import (
    Measurement,
    iter_jsonl_zst,
    measure,
    ratio_table,
    run_peer,
    shared,
    slow_repeats,
)
from raypipe.batch import CORE_SCHEMA
from raypipe.config import DedupConfig, NearDedupConfig
from raypipe.dedup.exact import DedupKeys
from raypipe.dedup.lsh import near_duplicates_here
from raypipe.dedup.minhash import MinHasher, Signatures, candidate_probability

CFG = NearDedupConfig(enabled=True)
BATCH = 256
# Words are runs of letters and digits: \w without the underscore, which is punctuation (Project
# Gutenberg marks _italics_ with it) and, like all punctuation, must not change a shingle.
WORD = re.compile(r"[^\W_]+")
S_CURVE_POINTS = (0.5, 0.7, 0.8, 0.9)
ACTOR_GB = 4  # memory of one shard actor in the cluster sized for 1B documents
CLASSIC_DOCUMENTS = {True: 20, False: 60}  # the sha256-per-hash MinHash's slice


# -- inputs -------------------------------------------------------------------------------
def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Ground truth's own shingling (independent of raypipe's): WORD words, lowercased."""
    words = WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str) -> float:
    x, y = shingles(a), shingles(b)
    return len(x & y) / max(1, len(x | y))


def plant(rows: list[dict], pairs: int, seed: int = 0) -> list[dict]:
    """Edited copies of `pairs` documents, aimed at the S-curve points and spread over 0.3-1.

    Replacing a share f of words keeps a 5-gram with chance s = (1-f)^5, so J ~ s / (2 - s).
    """
    rng = np.random.default_rng(seed)
    vocabulary = np.array(WORD.findall(" ".join(r["text"] for r in rows[:200])))
    targets = np.concatenate(
        [
            np.repeat(S_CURVE_POINTS, pairs // 5),
            rng.uniform(0.3, 1.0, pairs - 4 * (pairs // 5)),
        ]
    )
    planted = []
    for k, (at, target) in enumerate(
        zip(rng.choice(len(rows), pairs, replace=False), targets, strict=True)
    ):
        words = rows[at]["text"].split()
        keep = (2 * target / (1 + target)) ** (1 / 5)
        swap = rng.random(len(words)) > keep
        words = np.where(swap, rng.choice(vocabulary, len(words)), np.array(words, dtype=object))
        planted.append({"id": f"planted:{k}", "text": " ".join(words), "of": rows[at]["id"]})
    return planted


def planted_corpus(quick: bool) -> tuple[list[dict], list[dict]]:
    limit = 12_000_000 if quick else None
    rows = [
        {"id": r["id"], "text": r["text"]}
        for r in iter_jsonl_zst(shared("bench/gutenberg_en_docs.jsonl.zst"), limit)
    ]
    return rows, plant(rows, 500 if quick else 2000)


def write_jsonl(rows: list[dict], path: Path) -> Path:
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps({"id": row["id"], "text": row["text"]}) + "\n")
    return path


# -- raypipe, in one process --------------------------------------------------------------
def batches(rows: list[dict]) -> list[pa.Table]:
    out = []
    for start in range(0, len(rows), BATCH):
        part = rows[start : start + BATCH]
        n = len(part)
        out.append(
            pa.table(
                {
                    "uid": pa.array(range(start, start + n), pa.int64()),
                    "id": [r["id"] for r in part],
                    "source": ["bench"] * n,
                    "text": [r["text"] for r in part],
                    "stage": pa.nulls(n, pa.string()),
                    "reason": pa.nulls(n, pa.string()),
                },
                schema=CORE_SCHEMA,
            )
        )
    return out


def raypipe_dedup(path: Path) -> tuple[dict[str, str], dict]:
    """Read the JSONL file, sign, cluster, remove: {removed id: keeper id}, statistics."""
    rows = [json.loads(line) for line in path.open()]
    keys, sign = DedupKeys(DedupConfig()), Signatures(CFG)
    removed, stats = near_duplicates_here([sign(keys(b)) for b in batches(rows)], CFG)
    return dict(
        zip(removed["id"].to_pylist(), removed["duplicate_of"].to_pylist(), strict=True)
    ), stats


def same_cluster(removed: dict[str, str], a: str, b: str) -> bool:
    return removed.get(a, a) == removed.get(b, b)


def scores(truth: np.ndarray, found: np.ndarray) -> tuple[float, float, float]:
    tp = int((truth & found).sum())
    precision = tp / max(1, int(found.sum()))
    recall = tp / max(1, int(truth.sum()))
    return precision, recall, 2 * precision * recall / max(1e-9, precision + recall)


# -- peers --------------------------------------------------------------------------------
DATASKETCH = r"""
import json, re, resource, sys
from datasketch import MinHash, MinHashLSH
args = json.load(sys.stdin)
def cpu():
    return sum(
        u.ru_utime + u.ru_stime
        for u in (resource.getrusage(resource.RUSAGE_SELF),
                  resource.getrusage(resource.RUSAGE_CHILDREN))
    )
word = re.compile(r"[^\W_]+")
def run():
    lsh = MinHashLSH(num_perm=112, params=(14, 8))
    removed = {}
    for line in open(args["path"]):
        row = json.loads(line)
        words = word.findall(row["text"].lower())
        grams = {" ".join(words[i:i + 5]).encode() for i in range(len(words) - 4)}
        m = MinHash(num_perm=112)
        m.update_batch(list(grams))
        found = lsh.query(m)
        if found:
            removed[row["id"]] = min(found)
        else:
            lsh.insert(row["id"], m)
    return removed
seconds = []
for _ in range(args["repeats"]):
    start = cpu()
    removed = run()
    seconds.append(cpu() - start)
print(json.dumps({"seconds": seconds, "removed": removed}))
"""

DATATROVE = r"""
import json, resource, sys, tempfile
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers.jsonl import JsonlWriter
from datatrove.pipeline.dedup import (
    MinhashDedupSignature, MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter,
)
from datatrove.pipeline.dedup.minhash import MinhashConfig
args = json.load(sys.stdin)
def cpu():
    return sum(
        u.ru_utime + u.ru_stime
        for u in (resource.getrusage(resource.RUSAGE_SELF),
                  resource.getrusage(resource.RUSAGE_CHILDREN))
    )
cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
reader = lambda: JsonlReader(args["folder"], id_key="id")
def run(work):
    steps = [
        [reader(), MinhashDedupSignature(output_folder=f"{work}/sigs", config=cfg)],
        [MinhashDedupBuckets(input_folder=f"{work}/sigs", output_folder=f"{work}/bk",
                             config=cfg)],
        [MinhashDedupCluster(input_folder=f"{work}/bk", output_folder=f"{work}/remove",
                             config=cfg)],
        [reader(), MinhashDedupFilter(input_folder=f"{work}/remove",
                                      exclusion_writer=JsonlWriter(f"{work}/removed")),
         JsonlWriter(f"{work}/kept")],
    ]
    tasks = [1, cfg.num_buckets, 1, 1]
    for i, (pipeline, n) in enumerate(zip(steps, tasks)):
        LocalPipelineExecutor(pipeline=pipeline, tasks=n, workers=1,
                              logging_dir=f"{work}/logs{i}").run()
seconds = []
for _ in range(args["repeats"]):  # each run in a new folder: nothing of the last is reused
    work = tempfile.mkdtemp()
    start = cpu()
    run(work)
    seconds.append(cpu() - start)
import glob, gzip
removed = {}
for name in glob.glob(f"{work}/removed/*"):
    for line in gzip.open(name, "rt"):
        removed[json.loads(line)["id"]] = None
print(json.dumps({"seconds": seconds, "removed": removed}))
"""


# -- ground truth over the whole corpus --------------------------------------------------
def shingle_set(text: str) -> np.ndarray:
    """The document's distinct shingles (WORD 5-grams) as sorted 64-bit ids."""
    words = WORD.findall(text.lower())
    grams = (hash(tuple(words[i : i + 5])) for i in range(len(words) - 4))
    return np.unique(np.fromiter(grams, np.int64))


def similar_pairs(sets: list[np.ndarray], threshold: float) -> np.ndarray:
    """[pairs, 2] (i < j): every pair of sets with exact Jaccard >= threshold.

    Prefix filtering (Bayardo et al.'s all-pairs join): with shingles ordered rarest first,
    two sets of Jaccard >= t share one of the first |A| - ceil(t |A|) + 1 shingles of each,
    so only sets sharing such a shingle (and of sizes within a factor t) are compared.
    """
    sizes = np.array([len(x) for x in sets])
    flat, doc = np.concatenate(sets), np.repeat(np.arange(len(sets)), sizes)
    distinct, token, frequency = np.unique(flat, return_inverse=True, return_counts=True)
    rank = np.empty(len(distinct), np.int64)
    rank[np.lexsort((distinct, frequency))] = np.arange(len(distinct))
    order = np.lexsort((rank[token], doc))
    token, doc = rank[token][order], doc[order]
    place = np.arange(len(doc)) - (np.cumsum(sizes) - sizes)[doc]
    prefix = sizes - np.ceil(threshold * sizes - 1e-9).astype(np.int64) + 1
    token, doc = token[place < prefix[doc]], doc[place < prefix[doc]]
    order = np.lexsort((doc, token))
    token, doc = token[order], doc[order]
    counts = np.unique(token, return_counts=True)[1]
    shared = np.repeat(counts > 1, counts)  # prefix shingles of one document only: no pair
    groups = np.split(doc[shared], np.cumsum(counts[counts > 1])[:-1])
    candidates = [
        np.stack([group[i], group[j]], axis=1)
        for group in groups
        for i, j in [np.triu_indices(len(group), 1)]
    ]
    if not candidates:
        return np.empty((0, 2), np.int64)
    pairs = np.unique(np.concatenate(candidates), axis=0)
    small, large = np.sort(sizes[pairs], axis=1).T
    pairs = pairs[small >= threshold * large]
    common = np.array(
        [len(np.intersect1d(sets[i], sets[j], assume_unique=True)) for i, j in pairs], np.int64
    )
    union = sizes[pairs[:, 0]] + sizes[pairs[:, 1]] - common
    return pairs[common / union >= threshold]


def first_of_clusters(n: int, pairs: np.ndarray) -> np.ndarray:
    """For each of n documents, the smallest index of its connected component."""
    label = np.arange(n)
    while True:  # min-label propagation: a few rounds on near-duplicate clusters
        low = np.minimum(label[pairs[:, 0]], label[pairs[:, 1]])
        before = label.copy()
        np.minimum.at(label, pairs[:, 0], low)
        np.minimum.at(label, pairs[:, 1], low)
        if (label == before).all():
            return label


def corpus_accuracy(documents: list[dict], removed_by: dict[str, dict]) -> str:
    """Removed documents of each system against those exact Jaccard implies."""
    sets = [shingle_set(d["text"]) for d in documents]
    pairs = similar_pairs(sets, CFG.threshold)
    label = first_of_clusters(len(documents), pairs)
    truth = label != np.arange(len(documents))
    lines = [
        f"All {len(documents):,} documents: {len(pairs):,} pairs have exact 5-gram Jaccard >= "
        f"{CFG.threshold} (found by prefix filtering and checked exactly, not sampled); their "
        f"connected components, each keeping its first document, remove {truth.sum():,}. Each "
        "system's removed documents against those:",
        "",
        "| system | removed | precision | recall | F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for system, removed in removed_by.items():
        found = np.array([d["id"] in removed for d in documents])
        precision, recall, f1 = scores(truth, found)
        lines.append(f"| {system} | {found.sum():,} | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    return "\n".join(lines)


# -- the sections ---------------------------------------------------------------------------
def planted_accuracy(rows, planted, removed_by: dict[str, dict]) -> tuple[str, np.ndarray]:
    by_id = {r["id"]: r["text"] for r in rows}
    exact = np.array([jaccard(by_id[p["of"]], p["text"]) for p in planted])
    truth = exact >= CFG.threshold
    uniform = np.arange(len(planted)) >= 4 * (len(planted) // 5)  # see plant()
    lines = [
        "| system | all: precision | recall | F1 | uniform J 0.3-1: precision | recall | F1 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for system, removed in removed_by.items():
        if system == "datatrove":  # keeps no keeper: a planted copy removed = found
            found = np.array([p["id"] in removed for p in planted])
        else:
            found = np.array([same_cluster(removed, p["id"], p["of"]) for p in planted])
        cells = [
            f"{value:.3f}"
            for subset in (np.ones(len(planted), bool), uniform)
            for value in scores(truth[subset], found[subset])
        ]
        lines.append(f"| {system} | {' | '.join(cells)} |")
    return "\n".join(lines), exact


def s_curve(rows, planted, exact: np.ndarray) -> str:
    by_id = {r["id"]: r["text"] for r in rows}
    hasher = MinHasher.of(CFG)
    originals, _ = hasher.signatures([by_id[p["of"]] for p in planted])
    copies, _ = hasher.signatures([p["text"] for p in planted])
    candidate = (hasher.band_keys(originals) == hasher.band_keys(copies)).any(axis=1)
    lines = [
        "| Jaccard | pairs | measured P(candidate) | theoretical | sampling error (1 sd) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for point in S_CURVE_POINTS:
        near = np.abs(exact - point) <= 0.025
        theory = float(candidate_probability(exact[near], CFG.bands, CFG.rows).mean())
        error = (theory * (1 - theory) / max(1, near.sum())) ** 0.5
        lines.append(
            f"| {point:.1f} | {near.sum()} | {candidate[near].mean():.3f} | {theory:.3f} | "
            f"{error:.3f} |"
        )
    return "\n".join(lines)


def clough() -> str:
    archive = shared("eval/neardup/clough_plagiarism.tar.zst")
    with tempfile.TemporaryDirectory() as tmp:
        with (
            archive.open("rb") as raw,
            zstandard.ZstdDecompressor().stream_reader(raw) as stream,
            tarfile.open(fileobj=stream, mode="r|") as tar,
        ):
            tar.extractall(tmp, filter="data")
        folder = Path(tmp) / "clough_plagiarism"
        table = (folder / "file_information.csv").read_text().split()[1:]
        labels = [line.split(",") for line in table if not line.endswith(",orig")]
        names = [name for name, *_ in labels] + [f"orig_task{t}.txt" for t in "abcde"]
        docs = [{"id": n, "text": (folder / n).read_text(errors="replace")} for n in names]
    path = write_jsonl(docs, Path(tempfile.mkdtemp()) / "clough.jsonl")
    removed, _ = raypipe_dedup(path)
    text = {d["id"]: d["text"] for d in docs}
    pairs = [(name, f"orig_task{task}.txt", category) for name, task, category in labels]
    exact = np.array([jaccard(text[a], text[b]) for a, b, _ in pairs])
    found = np.array([same_cluster(removed, a, b) for a, b, _ in pairs])
    precision, recall, f1 = scores(exact >= CFG.threshold, found)
    rows = ["| answers | pairs | exact J mean | linked to their source |", "|---|---:|---:|---:|"]
    for category in ("cut", "light", "heavy", "non"):
        mine = np.array([c == category for *_, c in pairs])
        rows.append(
            f"| {category} | {mine.sum()} | {exact[mine].mean():.2f} | {found[mine].mean():.0%} |"
        )
    summary = (
        f"Against exact Jaccard >= {CFG.threshold} ({int((exact >= CFG.threshold).sum())} pairs): "
        f"precision {precision:.3f}, recall {recall:.3f}, F1 {f1:.3f}."
    )
    return "\n".join(rows) + "\n\n" + summary


def gutenberg_pairs() -> str:
    wanted = {}
    for line in shared("eval/neardup/gutenberg_pairs.tsv").read_text().splitlines()[1:]:
        sampled, _, a, b = line.split("\t")
        unescape = lambda s: s.replace("\\r", "\r").replace("\\\\", "\\")  # noqa: E731
        wanted[(unescape(a), unescape(b))] = float(sampled)
    books = [
        {"id": r["id"], "text": r["text"]}
        for r in iter_jsonl_zst(shared("bench/gutenberg_en_100mb.jsonl.zst"))
    ]
    path = write_jsonl(books, Path(tempfile.mkdtemp()) / "books.jsonl")
    removed, _ = raypipe_dedup(path)
    text = {b["id"]: b["text"] for b in books}
    pairs = [p for p in wanted if p[0] in text and p[1] in text]
    exact = np.array([jaccard(text[a], text[b]) for a, b in pairs])
    labelled = np.array([wanted[p] >= CFG.threshold for p in pairs])
    found = np.array([same_cluster(removed, a, b) for a, b in pairs])
    lines = ["| ground truth | positives | precision | recall | F1 |", "|---|---:|---:|---:|---:|"]
    for name, truth in (
        ("listed J (sampled, boilerplate out) >= 0.8", labelled),
        ("exact 5-gram Jaccard >= 0.8", exact >= CFG.threshold),
    ):
        precision, recall, f1 = scores(truth, found)
        lines.append(f"| {name} | {truth.sum()} | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    return "\n".join(lines) + f"\n\n{len(books)} books; {len(pairs)} listed pairs."


def classic_signature(text: str) -> list[int]:
    """MinHash as tutorials write it: one salted sha256 per shingle per permutation."""
    words = WORD.findall(text.lower())
    grams = {" ".join(words[i : i + 5]) for i in range(len(words) - 4)} or {""}
    return [
        min(
            int.from_bytes(hashlib.sha256(f"{seed} {gram}".encode()).digest()[:8], "little")
            for gram in grams
        )
        for seed in range(CFG.bands * CFG.rows)
    ]


def cpu_rate(system: str, texts: list[str], sign: Callable[[list[str]], object], note: str):
    """MB per CPU-second of `sign` over `texts`."""
    mb = sum(len(t.encode()) for t in texts) / 1e6
    return measure(system, mb, lambda: sign(texts), note=note, clock=time.process_time)


def signature_table(rows: list[dict], quick: bool) -> str:
    texts = [r["text"] for r in rows]
    hasher = MinHasher.of(CFG)
    ours = cpu_rate(
        "raypipe signatures",
        texts,
        lambda part: [hasher.signatures(part[i : i + BATCH]) for i in range(0, len(part), BATCH)],
        f"1 core, {CFG.bands}x{CFG.rows} permutations, all {len(texts):,} passages",
    )
    sliced = texts[: CLASSIC_DOCUMENTS[quick]]
    classic = cpu_rate(
        "pure-Python MinHash, sha256 per hash",
        sliced,
        lambda part: [classic_signature(t) for t in part],
        f"1 core, first {len(sliced)} passages (its rate stands for the whole corpus)",
    )
    hours = ours.work / classic.rate / 3600
    return (
        ratio_table("MB/s", [ours, classic], ours.system)
        + f"\n\nThe sha256-per-hash MinHash would sign these {ours.work:,.0f} MB in "
        f"{hours:,.1f} hours of one core; raypipe signs them in {ours.work / ours.rate:,.0f} s "
        f"({ours.rate / classic.rate:,.0f}x as fast)."
    )


def memory(stats: dict, documents: int, seconds: float, mb: float) -> str:
    bands = stats["shard_bytes"] / documents
    candidates = stats["candidate_documents"]
    verifying = stats["shingle_bytes"] / documents
    lines = [
        f"While band keys stream in, shards hold {bands:,.0f} bytes per document "
        f"({CFG.bands} band entries of key, uid and rank = {CFG.bands * 24} B, plus uid, rank, "
        "id and source); sealing a shard sorts its band entries into edges and drops them. "
        f"Verification then holds the shingle sets of the {candidates:,} documents at an end of "
        f"a candidate edge ({candidates / documents:.1%} of all, "
        f"{stats['shingle_bytes'] / max(1, candidates):,.0f} B each at 4 B per distinct shingle):"
        f" {verifying:,.0f} B per document of this corpus, a figure that grows with its share "
        "of near-duplicates.",
        "",
        "| documents | actors | GB per actor, band tables | GB per actor, verification "
        "| hours, 1 core per actor |",
        "|---:|---:|---:|---:|---:|",
    ]
    docs_per_second = documents / seconds
    fits = None
    for actors in (64, 256, 1024):
        gb = [1e9 * per_doc / actors / 1e9 for per_doc in (bands, verifying)]
        hours = 1e9 / (docs_per_second * actors) / 3600
        lines.append(f"| 1,000,000,000 | {actors} | {gb[0]:,.1f} | {gb[1]:,.1f} | {hours:,.1f} |")
        if fits is None and max(gb) <= ACTOR_GB:
            fits = actors
    lines.append(
        f"\nTime extrapolated from this run ({docs_per_second:,.0f} documents/s/core end to end, "
        f"average document {mb * 1e6 / documents / 1e3:,.1f} KB). 1B documents need "
        f"{bands:,.0f} GB of band tables in total, then {verifying:,.0f} GB of shingle sets. "
        + (
            f"Cluster: {fits} actors of at most {ACTOR_GB} GB, e.g. {fits // 8} nodes of 8 cores "
            "and 64 GB (half the memory left to Ray's object store and the reading tasks)."
            if fits
            else f"More than 1024 actors are needed to stay under {ACTOR_GB} GB each."
        )
    )
    return "\n".join(lines)


def run(quick: bool) -> str:
    rows, planted = planted_corpus(quick)
    folder = Path(tempfile.mkdtemp())
    path = write_jsonl([*rows, *planted], folder / "corpus.jsonl")
    mb = path.stat().st_size / 1e6
    documents = len(rows) + len(planted)

    ours = Measurement("raypipe (in process)", mb, note="1 core")
    for _ in range(slow_repeats(quick)):
        start = time.process_time()
        removed, stats = raypipe_dedup(path)
        ours.seconds.append(time.process_time() - start)
    sketch = run_peer(DATASKETCH, {"path": str(path), "repeats": slow_repeats(quick)}, cpus=1)
    trove = run_peer(DATATROVE, {"folder": str(folder), "repeats": slow_repeats(quick)}, cpus=1)
    peers = [
        Measurement("datasketch MinHashLSH", mb, sketch["seconds"], "1 process, no verification"),
        Measurement("datatrove 4-stage MinHash", mb, trove["seconds"], "1 worker"),
    ]
    removed_by = {
        "raypipe": removed,
        "datasketch": sketch["removed"],
        "datatrove": trove["removed"],
    }
    accuracy, exact = planted_accuracy(rows, planted, removed_by)
    return "\n\n".join(
        [
            "## Near-duplicate removal (MinHash LSH, 14 bands x 8 rows, 5-word shingles)",
            f"Input: {len(rows):,} passages of Gutenberg books (`bench/gutenberg_en_docs`, "
            f"{'first 12 MB' if quick else 'all'}) + {len(planted):,} planted copies with words "
            f"replaced to hit a chosen 5-gram Jaccard; {mb:,.1f} MB of JSONL, one core each.",
            "### End-to-end speed (read, signatures, LSH, components, removal)",
            "Rates are MB per CPU-second (process and children), so that they measure one core "
            f"even when the machine is shared; {slow_repeats(quick)} run(s) of each.",
            ratio_table("MB/s", [ours, *peers], "raypipe (in process)"),
            "### Accuracy on planted pairs (truth: exact 5-gram Jaccard >= 0.8)",
            "All planted pairs (a fifth of them aimed at J = 0.8 itself, where a 112-minimum "
            "estimate errs either way) and the share planted uniformly over J 0.3-1:",
            accuracy,
            "### Accuracy on the whole corpus (truth: exact all-pairs 5-gram Jaccard >= 0.8)",
            corpus_accuracy([*rows, *planted], removed_by),
            "### S-curve: chance that a pair becomes a candidate",
            s_curve(rows, planted, exact),
            "### Signature throughput",
            signature_table(rows, quick),
            "### Labelled sets (`eval/neardup/`)",
            "Clough & Stevenson plagiarism answers vs their Wikipedia source:",
            clough(),
            "Gutenberg edition pairs (262 whole books):",
            gutenberg_pairs(),
            "### Memory in the shard actors and 1B documents",
            memory(stats, documents, mb / ours.rate, mb),
            "Notes: raypipe links a candidate pair only if its exact shingle Jaccard (the "
            "candidates' texts read again) reaches the threshold, datatrove and datasketch link "
            "every candidate; datasketch queries before inserting; datatrove's planted-pair "
            "recall counts a copy it removed. Words here are runs of letters and digits, as in "
            "raypipe (the underscore is punctuation). raypipe's removal set does "
            "not depend on the number of shard actors (tested); on Ray the same shard code runs "
            "as one actor per CPU.",
        ]
    )
