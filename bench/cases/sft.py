"""Fine-tuning dedup: semantic (MiniLM embeddings + inverted-file index) beside MinHash on a
human-labelled paraphrase set, and how the time of each grows from 10k to 100k examples."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Callable

import numpy as np
import zstandard

from bench.common import Measurement, iter_jsonl_zst, ratio_table, shared
from raypipe.sft import dedup
from raypipe.sft.clean import judge
from raypipe.sft.config import load_sft_config

CLOUGH = "eval/neardup/clough_plagiarism.tar.zst"
BOOKS = "bench/gutenberg_en_docs.jsonl.zst"
NEAR = [0.7, 0.5, 0.3]  # 0.7 is dedup.near.threshold's default
SEMANTIC = [0.95, 0.9, 0.85]  # 0.95 is dedup.semantic.threshold's default
SIZES = {True: (2_000, 20_000), False: (10_000, 100_000)}
ANSWER_WORDS = 120
PLANT_EVERY = 100  # one near copy (one word changed) per this many examples
EMBED_SAMPLE = 256


def _clough() -> tuple[list[str], list[tuple[int, int, str]]]:
    """The 95 answers and 5 sources as texts, and (answer, source, category) labels."""
    with open(shared(CLOUGH), "rb") as packed:
        raw = zstandard.ZstdDecompressor().stream_reader(packed).read()
    files = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                name = member.name.rsplit("/", 1)[-1]
                files[name] = tar.extractfile(member).read().decode("utf-8", "replace")
    texts, labels, source_of = [], [], {}
    for task in "abcde":
        source_of[task] = len(texts)
        texts.append(files[f"orig_task{task}.txt"])
    for row in files["file_information.csv"].splitlines()[1:]:
        name, task, category = row.strip().split(",")
        if category != "orig":
            labels.append((len(texts), source_of[task], category))
            texts.append(files[name])
    return texts, labels


def _scores(found: set[tuple[int, int]], labels: list[tuple[int, int, str]]) -> dict:
    hit = {(a, s, c): (min(a, s), max(a, s)) in found for a, s, c in labels}
    positives = [key for key in hit if key[2] != "non"]
    true = sum(hit[key] for key in positives)
    false = sum(hit[key] for key in hit if key[2] == "non")
    recall = {c: np.mean([hit[k] for k in hit if k[2] == c]) for c in ("cut", "light", "heavy")}
    return {
        "precision": true / (true + false) if true + false else float("nan"),
        "recall": true / len(positives),
        **recall,
        "pairs": {k for k in positives if hit[k]},
    }


def _quality(embed: Callable[[list[str]], np.ndarray]) -> str:
    texts, labels = _clough()
    sigs = dedup.signatures(texts, 128, 3)
    vectors = embed(texts)
    rows = []
    for threshold in NEAR:
        found = {tuple(p) for p in dedup.near_pairs(sigs, threshold).tolist()}
        rows.append((f"MinHash J ≥ {threshold}", _scores(found, labels)))
    for threshold in SEMANTIC:
        found = {tuple(p) for p in dedup.semantic_pairs(vectors, threshold, 8).tolist()}
        rows.append((f"semantic cos > {threshold}", _scores(found, labels)))
    minhash, semantic = rows[0][1]["pairs"], rows[len(NEAR)][1]["pairs"]
    lines = [
        "| method | precision | recall | recall cut | light | heavy | found only by it |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, score in rows:
        only = len(score["pairs"] - (semantic if name.startswith("MinHash") else minhash))
        lines.append(
            f"| {name} | {score['precision']:.2f} | {score['recall']:.2f} | {score['cut']:.2f} | "
            f"{score['light']:.2f} | {score['heavy']:.2f} | {only} |"
        )
    positives = sum(1 for label in labels if label[2] != "non")
    note = (
        f"Clough & Stevenson short-answer corpus ({len(labels)} answers, 5 Wikipedia sources): "
        f"an answer and its source are a positive pair when the answer was made from it by "
        f"cutting, light or heavy revision ({positives}), a negative when written "
        f"independently on the same topic ({len(labels) - positives}, hard negatives). "
        "Pairs found between two answers are not labelled and not counted. 'found only by "
        "it' compares each row with the other method at its default threshold."
    )
    return "\n".join(lines) + "\n\n" + note


def _examples(count: int) -> list[str]:
    """`count` JSONL instruction lines of ANSWER_WORDS-word answers cut from books, one in
    PLANT_EVERY followed by a near copy (its last word changed)."""
    lines, words = [], []
    for row in iter_jsonl_zst(shared(BOOKS)):
        words.extend(row["text"].split())
        while len(words) >= ANSWER_WORDS and len(lines) < count:
            answer = " ".join(words[:ANSWER_WORDS])
            del words[:ANSWER_WORDS]
            record = {"instruction": "Continue the passage.", "output": answer}
            lines.append(json.dumps(record))
            if len(lines) % PLANT_EVERY == 0 and len(lines) < count:
                record["output"] = answer.rsplit(" ", 1)[0] + " changed"
                lines.append(json.dumps(record))
        if len(lines) >= count:
            return lines
    raise SystemExit(f"{BOOKS} holds fewer than {count} examples")


def _vectors(count: int, dim: int = 384) -> np.ndarray:
    """Unit vectors shaped like sentence embeddings (random directions), one in PLANT_EVERY
    followed by a copy at cosine ~0.99."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(count, dim)).astype(np.float32)
    base[1::PLANT_EVERY] = base[::PLANT_EVERY][: len(base[1::PLANT_EVERY])] + rng.normal(
        scale=0.008, size=base[1::PLANT_EVERY].shape
    )
    return base / np.linalg.norm(base, axis=1, keepdims=True)


def _growth(sizes: tuple[int, ...], make: Callable, step: Callable) -> list[tuple[float, int]]:
    """(seconds, duplicates found) of one run of `step` on each size (large runs take long
    enough that one run is a stable figure)."""
    results = []
    for n in sizes:
        data = make(n)
        start = time.perf_counter()
        found = step(data)
        results.append((time.perf_counter() - start, found))
    return results


def run(quick: bool) -> str:
    try:
        import faiss
    except ImportError:
        raise SystemExit(
            "the sft case measures the semantic extra: pip install -e '.[semantic]' "
            "(make bench does)"
        ) from None
    sizes = SIZES[quick]
    config = load_sft_config(None)

    def clean(lines: list[str]) -> int:
        verdicts = judge(enumerate(lines, start=1), config)
        return sum(v.reason == "duplicate:near" for v in verdicts)

    def ivf(vectors: np.ndarray) -> int:
        return len(dedup.semantic_pairs(vectors, 0.95, 8))

    def exhaustive(vectors: np.ndarray) -> int:
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        limits, _, _ = index.range_search(vectors, 0.95)
        return (int(limits[-1]) - len(vectors)) // 2  # each pair twice, each vector itself

    faiss.omp_set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    table = [
        f"| step | {sizes[0]:,} examples s | {sizes[1]:,} examples s | growth | found |",
        "|---|---:|---:|---:|---:|",
    ]
    steps = [
        ("schema + rules + exact + MinHash near (judge)", _examples, clean),
        ("semantic search: inverted file, √n cells", _vectors, ivf),
    ]
    for name, make, step in steps:
        (small, few), (large, many) = _growth(sizes, make, step)
        cells = f"{small:.2f} | {large:.2f} | {large / small:.1f}x | {few:,} / {many:,}"
        table.append(f"| {name} | {cells} |")
    # The exhaustive ceiling runs on the small size only: at the large one it would take
    # ~100x as long, longer than everything else here together.
    [(small, few)] = _growth(sizes[:1], _vectors, exhaustive)
    name = "semantic search: exhaustive (n × n dot products)"
    table.append(f"| {name} | {small:.2f} | not run | 100x (n²) | {few:,} |")
    from raypipe.sft.semantic import Embedder

    embedder = Embedder(None, 64)
    sample = [json.loads(line)["output"] for line in _examples(EMBED_SAMPLE)]
    embedder(sample[:8])  # first call pays for lazy initialization
    start = time.perf_counter()
    embedder(sample)
    embed = Measurement("embedding (all-MiniLM-L6-v2, CPU)", len(sample))
    embed.seconds.append(time.perf_counter() - start)
    throughput = ratio_table("examples/s", [embed], embed.system)
    return "\n".join(
        [
            "## sft: semantic vs MinHash dedup of fine-tuning examples",
            "",
            _quality(embedder),
            "",
            "Time as the dataset grows 10x (one core, one run each; linear growth is 10x, "
            "quadratic 100x):",
            "",
            "\n".join(table),
            "",
            f"Examples: {ANSWER_WORDS}-word answers cut from `{BOOKS}`, one in {PLANT_EVERY} "
            "followed by a near copy; 'found' for judge also counts the genuine near-duplicate "
            "editions the books hold (kept there on purpose), for search only the planted pairs. "
            "Semantic search runs on unit vectors of the embedding's "
            "size (384) with the same planted copies at cosine ~0.99, since embedding 100k "
            "examples on this CPU would take the whole budget; embedding is one forward pass "
            "per example (linear in n):",
            "",
            throughput,
            "",
            f"Wall time of this case: {time.perf_counter() - started:,.0f} s.",
        ]
    )
