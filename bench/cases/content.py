"""Content rules at scale: a million-domain block list (load time, memory, lookups/s)
beside a bare set probe (the ceiling) and datatrove's URLFilter, and the bad-word ratio
on real English documents beside a whitespace split (the ceiling)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pyarrow as pa

from bench.common import Measurement, iter_jsonl_zst, measure, ratio_table, run_peer, shared
from raypipe.blocklists import load_domains, split_url
from raypipe.config import ContentConfig
from raypipe.stages.content import Content

DOMAINS = 1_000_000
URLS = {True: 50_000, False: 200_000}
TEXT_MB = {True: 5, False: 30}
TEXT_INPUT = "bench/mixed_en_docs.jsonl.zst"
BATCH = 256  # documents per stage call: raypipe's default ray.batch_docs
# Public suffixes of one and two labels, so that registered domains are known to
# tldextract (datatrove) and subdomains are walked by raypipe.
SUFFIXES = ("com", "org", "net", "de", "co.uk", "com.br", "io", "fr")

PEER = """
import json, sys, time, functools
import tldextract
# Offline: the public suffix list bundled with tldextract, no fetch.
tldextract.TLDExtract = functools.partial(tldextract.TLDExtract, suffix_list_urls=())
from datatrove.data import Document
from datatrove.pipeline.filters import URLFilter
p = json.load(sys.stdin)
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
before, start = rss(), time.perf_counter()
with open(p["list"]) as lines:
    url_filter = URLFilter(extra_domains=lines, use_integrated_lists=False)
load = time.perf_counter() - start
memory = rss() - before
urls = open(p["urls"]).read().split()
docs = [Document(text="", id=str(i), metadata={"url": u}) for i, u in enumerate(urls)]
url_filter.filter(docs[0])  # warm-up: tldextract loads its suffix list
seconds, blocked = [], 0
for _ in range(3):
    start = time.perf_counter()
    blocked = sum(url_filter.filter(d) is not True for d in docs)
    seconds.append(time.perf_counter() - start)
print(json.dumps({"load": load, "memory": memory, "seconds": seconds, "blocked": blocked}))
"""


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


def _write_inputs(folder: Path, n_urls: int) -> tuple[Path, Path, list[str]]:
    """A list of DOMAINS registered domains; URLs on www. subdomains, half of them listed."""
    domains = folder / "domains.txt"
    domains.write_text("".join(f"site{i}.{SUFFIXES[i % len(SUFFIXES)]}\n" for i in range(DOMAINS)))
    step = 2 * DOMAINS // n_urls
    urls = [
        f"https://www.site{i}.{SUFFIXES[i % len(SUFFIXES)]}/page/{i}?q=1"
        for i in range(0, 2 * DOMAINS, step)
    ]
    urls_file = folder / "urls.txt"
    urls_file.write_text("\n".join(urls) + "\n")
    return domains, urls_file, urls


def _url_batches(urls: list[str]) -> list[pa.Table]:
    tables = []
    for start in range(0, len(urls), BATCH):
        part = urls[start : start + BATCH]
        n = len(part)
        tables.append(
            pa.table(
                {
                    "uid": list(range(n)),
                    "id": [""] * n,
                    "source": ["web"] * n,
                    "text": ["x"] * n,
                    "stage": pa.nulls(n, pa.string()),
                    "reason": pa.nulls(n, pa.string()),
                    "url": part,
                }
            )
        )
    return tables


def _domain_section(quick: bool) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        domains_file, urls_file, urls = _write_inputs(Path(scratch), URLS[quick])
        before, start = _rss(), time.perf_counter()
        domains = load_domains((str(domains_file),))
        load_seconds, memory = time.perf_counter() - start, _rss() - before
        hosts = [split_url(url)[0] for url in urls]
        listed = set(domains.domains)
        bare = [url.split("/")[2].removeprefix("www.") for url in urls]
        stage = Content(ContentConfig(blocked_domains=[str(domains_file)]))
        tables = _url_batches(urls)
        blocked = sum(stage(t)["reason"].to_pylist().count("url_filter:domain") for t in tables)
        n = len(urls)
        rows = [
            measure(
                "set probe of the registered domain",
                n,
                lambda: sum(host in listed for host in bare),
                note="ceiling: host known, no parsing",
            ),
            measure(
                "raypipe DomainSet.match (suffix walk)",
                n,
                lambda: sum(map(domains.match, hosts)),
                note="host known",
            ),
            measure(
                "raypipe Content stage, URL rules",
                n,
                lambda: [stage(t) for t in tables],
                note=f"Arrow batches of {BATCH}: parse URL, walk, reject",
            ),
        ]
        peer = run_peer(PEER, {"list": str(domains_file), "urls": str(urls_file)})
    rows.append(
        Measurement(
            "datatrove URLFilter.filter",
            n,
            peer["seconds"],
            note="tldextract, registered domain + fqdn",
        )
    )
    return "\n".join(
        [
            f"### A {DOMAINS:,}-domain block list: lookups",
            "",
            ratio_table("URLs/s", rows, "raypipe Content stage, URL rules"),
            "",
            "| system | load 1M domains (s) | memory (MB RSS) | URLs blocked |",
            "|---|---:|---:|---:|",
            f"| raypipe load_domains | {load_seconds:.2f} | {memory / 1e6:,.0f} | "
            f"{blocked:,} of {n:,} |",
            f"| datatrove URLFilter | {peer['load']:.2f} | {peer['memory'] / 1e6:,.0f} | "
            f"{peer['blocked']:,} of {n:,} |",
            "",
            f"Input: a generated list of {DOMAINS:,} registered domains (`site<i>.<suffix>`, "
            f"{len(SUFFIXES)} public suffixes incl. `co.uk`, `com.br`) and {n:,} URLs on "
            "their `www.` subdomains, half of them listed. The Content stage figure includes "
            "URL parsing and marking rejects on Arrow batches.",
        ]
    )


def _words_section(quick: bool) -> str:
    texts = [r["text"] for r in iter_jsonl_zst(shared(TEXT_INPUT), TEXT_MB[quick] * 1_000_000)]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    stage = Content(ContentConfig(bad_words={"enabled": True}))
    english = stage.word_lists["en"]
    tables = [
        pa.table(
            {
                "uid": list(range(len(part))),
                "id": [""] * len(part),
                "source": ["s"] * len(part),
                "text": part,
                "stage": pa.nulls(len(part), pa.string()),
                "reason": pa.nulls(len(part), pa.string()),
            }
        )
        for part in (texts[i : i + BATCH] for i in range(0, len(texts), BATCH))
    ]
    rejected = sum(stage(t)["reason"].to_pylist().count("bad_words") for t in tables)
    listed = english.entries

    def split_and_probe() -> None:
        for text in texts:
            words = text.lower().split()
            sum(word in listed for word in words)

    rows = [
        measure("str.split + set probe", mb, split_and_probe, note="ceiling: no word boundaries"),
        measure(
            "raypipe Content stage, bad_words",
            mb,
            lambda: [stage(t) for t in tables],
            note="Unicode words, phrases, Arrow batches",
        ),
    ]
    return "\n".join(
        [
            "### Bad-word ratio",
            "",
            ratio_table("MB/s", rows, "raypipe Content stage, bad_words"),
            "",
            f"Input: {len(texts):,} documents ({mb:.1f} MB) of `{TEXT_INPUT}` (e-mail incl. "
            f"spam, kernel and Python docs, manuals, Brown corpus). Builtin English list "
            f"({len(english)} entries), max_ratio {stage.cfg.bad_words.max_ratio}: "
            f"{rejected:,} documents rejected ({rejected / len(texts):.2%}).",
        ]
    )


def run(quick: bool) -> str:
    return "\n\n".join(
        [
            "## Content filters",
            "Single core, in process (the stage as a cleaning actor runs it).",
            _domain_section(quick),
            _words_section(quick),
        ]
    )
