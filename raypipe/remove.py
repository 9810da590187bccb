"""Take documents out of a committed run after the fact (a takedown request, a licence
withdrawn): only the shards holding them are rewritten, and the run's record (manifest,
report, rejects ledger) says what was removed.

A removal is planned before anything changes: the documents-table rows it takes out go to
`_removals/removal-N.parquet`. Each shard holding one is then written anew as NAME.rN
(shards are never changed in place, so a reader of the current manifest never meets a
half-written file), the removed documents are added to the ledger (reason `removed`),
and the new manifest, written last, commits the removal; the replaced files are deleted
after it. A removal interrupted anywhere is finished by the next `raypipe remove` on the
output, which applies a plan the manifest does not list before anything else.

Native shards keep every other document where it was (the removed pieces become padding:
sequence numbers in the documents tables stay true); Megatron shards, whole documents
one per sequence, are rewritten without them. A shard is rewritten in memory here, one
at a time: it is bounded by output.shard_tokens.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from raypipe import megatron, mix
from raypipe.accounting import ledger_rows
from raypipe.blocklists import DomainSet, split_url
from raypipe.config import PipelineConfig
from raypipe.io import storage
from raypipe.manifest import SHARD_KEYS, token_report
from raypipe.pack import DOCUMENT, LENGTH, START, Packed
from raypipe.report.html import render
from raypipe.report.stats import ShardStats
from raypipe.report.tags import tag_counts
from raypipe.shards import (
    DOCUMENTS_DIR,
    documents_uri,
    load_array,
    require_documents_tables,
    shard_group,
    sidecar_uri,
    write_documents,
    write_shard,
)
from raypipe.tokenizer import load_tokenizer
from raypipe.writers import FORMATS, SHARDS_DIR, MegatronShard, covered

REASON, STAGE = "removed", "remove"
PLANS_DIR = "_removals"
REWRITABLE = ("native", "megatron")


@dataclass(frozen=True)
class Removed:
    documents: int
    copies: int  # documents as written: the mixture may write one several times
    tokens: int
    shards: int  # shards rewritten
    ledger: str | None  # the ledger file of this removal


def _json(uri: str) -> dict:
    return json.loads(storage.read_bytes(uri))


def _write_json(uri: str, value: dict) -> None:
    storage.write_atomic(uri, json.dumps(value, indent=2).encode())


def matching(output: str, manifest: dict, ids: set[str], domains: DomainSet | None) -> pa.Table:
    """Rows of the current shards' documents tables whose id is in `ids` or whose URL's host
    is under one of `domains`."""
    fs, path = storage.filesystem(storage.join(output, SHARDS_DIR, DOCUMENTS_DIR))
    current = pa.array([entry["path"] for entry in manifest["shards"]], pa.string())
    dataset = pads.dataset(path, filesystem=fs, format="parquet")
    found = []
    for batch in dataset.to_batches(filter=pc.field("shard").isin(current)):
        hit = np.isin(batch["id"].to_numpy(zero_copy_only=False), list(ids))
        if domains is not None:
            urls = batch["url"].to_pylist()
            hit |= np.array([bool(u) and domains.match(split_url(u)[0]) for u in urls], bool)
        found.append(pa.Table.from_batches([batch]).filter(pa.array(hit)))
    return pa.concat_tables(found) if found else pa.table({})


def remove(
    output: str, ids: set[str], domains: DomainSet | None, log: Callable[[str], None] = print
) -> Removed:
    """Remove the documents named by `ids` or `domains` from the committed run at `output`."""
    manifest_uri = storage.join(output, "manifest.json")
    if not storage.exists(manifest_uri):
        raise FileNotFoundError(f"{output} holds no committed run (no manifest.json)")
    manifest = _json(manifest_uri)
    form = manifest["config"]["output"]["format"]
    if form not in REWRITABLE:
        raise ValueError(
            f"{output} holds {form} output; remove rewrites {' and '.join(REWRITABLE)} shards. "
            "List the documents in content.opt_out (URLs) and run again instead"
        )
    require_documents_tables(output, manifest)
    for number, plan in _pending(output, manifest):
        log(f"finishing interrupted removal {number}")
        manifest = _apply(output, manifest, number, plan)
    plan = matching(output, manifest, ids, domains)
    if not plan.num_rows:
        return Removed(0, 0, 0, 0, None)
    number = max([0, *manifest.get("removals", [])]) + 1  # pending plans were applied above
    storage.write_table(_plan_uri(output, number), plan)
    _apply(output, manifest, number, plan)
    shards = len(set(plan["shard"].to_pylist()))
    tokens = int(pc.sum(plan["tokens"]).as_py())
    ledger = f"rejects/{REASON}-{number:05d}.parquet"
    return Removed(_documents(plan).num_rows, plan.num_rows, tokens, shards, ledger)


def _plan_uri(output: str, number: int) -> str:
    return storage.join(output, PLANS_DIR, f"removal-{number:05d}.parquet")


def _pending(output: str, manifest: dict) -> list[tuple[int, pa.Table]]:
    """Plans written but not committed: the manifest does not list them."""
    fs, path = storage.filesystem(storage.join(output, PLANS_DIR))
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    applied = set(manifest.get("removals", []))
    plans = []
    for info in sorted(infos, key=lambda i: i.base_name):
        number = int(info.base_name.split("-")[1].split(".")[0])
        if number not in applied:
            with fs.open_input_file(info.path) as handle:
                plans.append((number, pq.read_table(handle)))
    return plans


def _apply(output: str, manifest: dict, number: int, plan: pa.Table) -> dict:
    """Rewrite the shards `plan` touches, then commit the new manifest and report."""
    replaced = {}
    for path in sorted(set(plan["shard"].to_pylist())):
        gone = plan.filter(pc.equal(plan["shard"], path))["document"].to_numpy()
        replaced[path] = _rewrite(output, manifest, path, gone, number)
    ledger = ledger_rows(_documents(plan), STAGE, REASON)
    storage.write_table(storage.join(output, "rejects", f"{REASON}-{number:05d}.parquet"), ledger)
    sidecars = {e["path"]: _sidecar(output, e["path"]) for e in manifest["shards"]}
    sidecars.update(replaced)
    manifest = _account(manifest, plan, [sidecars[e["path"]] for e in manifest["shards"]])
    report = _json(storage.join(output, "report.json"))
    report["tags"] = manifest["tags"]
    manifest["removals"] = [*manifest.get("removals", []), number]
    options = manifest["config"]
    loaded = load_tokenizer(options["tokenizer"], options["eos_token"])
    packed = FORMATS[options["output"]["format"]].packed
    report.update(token_report(list(sidecars.values()), loaded, manifest["seq_len"], packed))
    manifest["warnings"] = report["warnings"]
    report["sources"] = manifest["sources"]
    _write_json(storage.join(output, "report.json"), report)
    storage.write_atomic(storage.join(output, "report.html"), render(manifest, report).encode())
    _write_json(storage.join(output, "manifest.json"), manifest)  # the commit
    for old in replaced:
        _delete_shard(output, old)
    storage.remove(_plan_uri(output, number))
    return manifest


def _documents(plan: pa.Table) -> pa.Table:
    """One row per removed document: a document the mixture wrote twice has two rows in
    the plan."""
    first = pc.index_in(
        pa.array(range(plan.num_rows)),
        plan.append_column("row", pa.array(range(plan.num_rows)))
        .group_by(["source", "id"])
        .aggregate([("row", "min")])["row_min"],
    )
    return plan.filter(pc.is_valid(first))


def _account(manifest: dict, plan: pa.Table, shards: list[dict]) -> dict:
    """The manifest with the removed documents moved from the output to the rejected."""
    manifest = json.loads(json.dumps(manifest))
    documents = _documents(plan)
    n = documents.num_rows
    manifest["documents_out"] -= n
    manifest["rejected"][REASON] = manifest["rejected"].get(REASON, 0) + n
    by_stage = manifest["rejected_by_stage"]
    by_stage[STAGE] = by_stage.get(STAGE, 0) + n
    sources = manifest["sources"]
    for name, count in Counter(documents["source"].to_pylist()).items():
        sources[name]["documents_out"] -= count
    for row in plan.group_by("source").aggregate([("tokens", "sum"), ("id", "count")]).to_pylist():
        sources[row["source"]]["documents_written"] -= row["id_count"]
        sources[row["source"]]["tokens_out"] -= row["tokens_sum"]
    total = sum(row.get("tokens_out", 0) for row in sources.values()) or 1
    for row in sources.values():
        row["share"] = row.get("tokens_out", 0) / total
    cfg = PipelineConfig.model_validate(manifest["config"])
    manifest["tags"] = tag_counts(sources, mix.sources(cfg))
    manifest["shards"] = [{k: s[k] for k in SHARD_KEYS} for s in shards]
    manifest["documents_written"] = sum(s["documents"] for s in shards)
    manifest["tokens"] = sum(s["tokens"] for s in shards)
    manifest["sequences"] = sum(s["sequences"] for s in shards)
    return manifest


def _rewrite(output: str, manifest: dict, path: str, gone: np.ndarray, number: int) -> dict:
    """Shard `path` without the documents numbered `gone`, as NAME.rN; its sidecar entry."""
    name = path.rsplit("/", 1)[-1]
    new_name = f"{name.split('.')[0]}.r{number}"
    table = storage.read_table(documents_uri(output, path))
    kept = table.filter(pc.invert(pc.is_in(table["document"], pa.array(gone))))
    stats = ShardStats(manifest["vocab_size"])
    if manifest["config"]["output"]["format"] == "native":
        entry, kept, valid = _rewrite_native(output, path, new_name, gone, kept, manifest)
    else:
        entry, kept, valid = _rewrite_megatron(output, path, new_name, gone, kept, manifest)
    stats.add(valid, kept["tokens"].to_numpy(), kept["chars"].to_numpy(), kept["words"].to_numpy())
    entry["stats"] = stats.as_dict()
    if "split_documents" in entry:  # packed formats count them
        entry["stats"]["split_documents"] = entry.pop("split_documents")
    old = _sidecar(output, path)
    entry.update(fingerprint=old["fingerprint"], group=old["group"])
    write_documents(output, entry["path"], kept)
    storage.write_atomic(sidecar_uri(output, old["group"]), json.dumps(entry).encode())
    return entry


def _sidecar(output: str, path: str) -> dict:
    """The sidecar entry of the shard at `path` (NAME.json, which names the shard's
    current version)."""
    return _json(sidecar_uri(output, shard_group(path.rsplit("/", 1)[-1])))


def _rewrite_native(
    output: str, path: str, new_name: str, gone: np.ndarray, kept: pa.Table, manifest: dict
) -> tuple[dict, pa.Table, np.ndarray]:
    tokens = np.array(load_array(storage.join(output, f"{path}.tokens.npy")))
    segments = load_array(storage.join(output, f"{path}.segments.npy"))
    dropped = np.isin(segments[:, DOCUMENT], gone)
    flat = tokens.reshape(-1)
    for start, length in segments[dropped][:, [START, LENGTH]].tolist():
        flat[start : start + length] = manifest["eos_id"]  # padding, as packing leaves it
    packed = Packed(tokens, segments[~dropped])
    entry = write_shard(output, new_name, packed, kept.num_rows)
    entry["split_documents"] = packed.split_documents
    return entry, kept, flat[covered(packed, 0)[0]]


def _rewrite_megatron(
    output: str, path: str, new_name: str, gone: np.ndarray, kept: pa.Table, manifest: dict
) -> tuple[dict, pa.Table, np.ndarray]:
    dtype, lengths = megatron.read_index(storage.read_bytes(storage.join(output, f"{path}.idx")))
    flat = np.frombuffer(storage.read_bytes(storage.join(output, f"{path}.bin")), dtype)
    keep = np.ones(len(lengths), bool)
    keep[gone] = False
    valid = flat[np.repeat(keep, lengths)]
    writer = MegatronShard(output, new_name, dtype, manifest["vocab_size"], None)
    writer.add(valid, lengths[keep])
    entry = writer.publish(int(keep.sum()))
    at = pa.array(np.arange(kept.num_rows, dtype=np.int64))
    for column in ("document", "first_sequence", "last_sequence"):  # renumbered in idx order
        kept = kept.set_column(kept.schema.get_field_index(column), column, at)
    return entry, kept, valid


SHARD_FILES = (".tokens.npy", ".segments.npy", ".bin", ".idx")  # native's and megatron's


def _delete_shard(output: str, path: str) -> None:
    """The files of a replaced shard (its sidecar, NAME.json, now describes NAME.rN)."""
    for suffix in SHARD_FILES:
        storage.remove(storage.join(output, f"{path}{suffix}"))
    storage.remove(documents_uri(output, path))
