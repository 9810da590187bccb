"""Content and consent rules: URL block lists, opt-out lists, bad-word ratios, source tags."""

from __future__ import annotations

import gzip
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from raypipe.batch import CORE_SCHEMA
from raypipe.blocklists import DomainSet, load_domains, parse_domains, split_url
from raypipe.config import ConfigError, ContentConfig, build_config
from raypipe.io.readers import read_file
from raypipe.io.storage import StorageError
from raypipe.mix import sources
from raypipe.pipeline import document_stages
from raypipe.report.tags import tag_counts
from raypipe.stages.content import Content
from raypipe.wordlists import load_word_list, make_word_list, words


def write_list(folder, name: str, lines: list[str]) -> str:
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def batch(urls: list[str | None], texts: list[str] | None = None, languages=None) -> pa.Table:
    n = len(urls)
    columns = {
        "uid": list(range(n)),
        "id": [f"d{i}" for i in range(n)],
        "source": ["web"] * n,
        "text": texts or ["plain words about the weather"] * n,
        "stage": [None] * n,
        "reason": [None] * n,
        "url": urls,
    }
    table = pa.table(columns, schema=pa.schema([*CORE_SCHEMA, ("url", pa.string())]))
    return table if languages is None else table.append_column("language", pa.array(languages))


# -- URLs and hosts ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "host", "path"),
    [
        ("https://Sub.Example.COM/A/b?q=1", "sub.example.com", "/A/b?q=1"),
        ("http://user:pw@example.com:8080", "example.com", "/"),
        ("example.com/path", "example.com", "/path"),
        ("//example.com.", "example.com", "/"),
        ("https://bücher.de/x", "xn--bcher-kva.de", "/x"),
        ("https://[::1]:80/x", "[::1]", "/x"),
        ("https://example.com#frag", "example.com", "#frag"),
    ],
)
def test_split_url(url, host, path):
    assert split_url(url) == (host, path)


def test_listed_domain_blocks_itself_and_its_subdomains_only(tmp_path):
    uri = write_list(
        tmp_path,
        "domains.txt",
        [
            "# UT1-style list",
            "Example.COM",
            "blog.other.org   # only the blog",
            "0.0.0.0 ads.tracker.net",
            "*.wild.io",
            "https://pasted.net/some/page",
            "Bücher.de.",
        ],
    )
    domains = load_domains((uri,))
    assert len(domains) == 6
    for host in ["example.com", "www.example.com", "a.b.example.com", "blog.other.org",
                 "x.blog.other.org", "ads.tracker.net", "wild.io", "cdn.wild.io",
                 "pasted.net", "xn--bcher-kva.de"]:  # fmt: skip
        assert domains.match(host), host
    for host in ["other.org", "www.other.org", "notexample.com", "example.com.au",
                 "tracker.net", "com", ""]:  # fmt: skip
        assert not domains.match(host), host


def test_malformed_domain_line_names_file_and_line(tmp_path):
    uri = write_list(tmp_path, "bad.txt", ["good.com", "two words here"])
    with pytest.raises(ConfigError, match=r"bad.txt:2: expected one domain"):
        parse_domains(uri)


def test_missing_or_binary_list_is_a_clear_error(tmp_path):
    with pytest.raises(StorageError, match="list file not found"):
        parse_domains(str(tmp_path / "nope.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        parse_domains(str(tmp_path / "bin.txt"))


def test_compressed_list(tmp_path):
    (tmp_path / "d.txt.gz").write_bytes(gzip.compress(b"gz.example\n"))
    assert parse_domains(str(tmp_path / "d.txt.gz")) == ["gz.example"]


def test_list_from_s3(s3_server):
    fs = pafs.S3FileSystem(endpoint_override=s3_server_endpoint(), scheme="http")
    with fs.open_output_stream(f"{s3_server[len('s3://') :]}/lists/domains.txt") as out:
        out.write(b"# remote\ns3.example\n")
    assert parse_domains(f"{s3_server}/lists/domains.txt") == ["s3.example"]


def s3_server_endpoint() -> str:
    import os

    return os.environ["AWS_ENDPOINT_URL"].removeprefix("http://")


def content(tmp_path, **lists) -> Content:
    options = {key: [write_list(tmp_path, f"{key}.txt", lines)] for key, lines in lists.items()}
    return Content(ContentConfig(**options))


def test_url_rules_and_their_reasons(tmp_path):
    stage = content(
        tmp_path,
        opt_out=["optout.example", "news.example/members/", "https://shop.example/Private"],
        blocked_domains=["blocked.example", "optout.example"],
        blocked_url_substrings=["CASINO", "/adult/"],
    )
    cases = {
        "https://www.optout.example/a": "opt_out",  # opted out wins over blocked
        "https://news.example/members/page": "opt_out",
        "https://news.example/public": None,
        "https://sub.news.example/members/page": None,  # a prefix holds for its host only
        "https://shop.example/Private/x": "opt_out",
        "https://shop.example/private/x": None,  # paths are case-sensitive, as in robots.txt
        "https://BLOCKED.example./x": "url_filter:domain",
        " http://blocked.example:8080/x ": "url_filter:domain",
        "https://notblocked.example/": None,
        "https://games.example/Casino-Night": "url_filter:substring",
        "https://site.example/adult/1": "url_filter:substring",
        None: None,
        "": None,
        "   ": None,
    }
    out = stage(batch(list(cases)))
    assert out["reason"].to_pylist() == list(cases.values())
    assert set(out["stage"].drop_null().to_pylist()) == {"content"}
    rejected = [r is not None for r in cases.values()]
    assert [t == "" for t in out["text"].to_pylist()] == rejected


def test_already_rejected_rows_keep_their_reason(tmp_path):
    stage = content(tmp_path, blocked_domains=["blocked.example"])
    rows = batch(["https://blocked.example/", "https://blocked.example/"])
    rows = rows.set_column(5, "reason", pa.array(["heuristic:min_words", None]))
    assert stage(rows)["reason"].to_pylist() == ["heuristic:min_words", "url_filter:domain"]


# -- bad words --------------------------------------------------------------------------
def test_builtin_english_list_on_whole_words():
    english = load_word_list("en", "builtin")
    assert english.share("What the FUCK is this shit") == pytest.approx(2 / 6)
    # Listed words inside longer words do not count (Scunthorpe, class, Dickens, cocktail).
    assert english.share("Scunthorpe class assessment by Dickens over cocktails") == 0
    assert english.share("a blow job") == pytest.approx(2 / 3)  # phrases count all their words
    assert english.share("a blow\n  JOB") == pytest.approx(2 / 3)  # whatever the spacing
    assert english.share("(shit) fuck,you") == pytest.approx(2 / 3)  # punctuation is a boundary
    assert english.share("fuck你") == pytest.approx(1 / 2)  # so is a change to an unspaced script
    assert english.share("") == 0


@pytest.mark.parametrize(
    ("entry", "text", "share"),
    [
        ("сука", "Это сука, а не сукно", 1 / 5),  # Cyrillic: сукно (cloth) is another word
        ("कुत्ता", "वह कुत्ता है कुत्तापन नहीं", 1 / 5),  # Devanagari: vowel signs stay in words
        ("كلب", "هذا كلب وليس كلبي", 1 / 4),  # Arabic
        ("傻逼", "你是傻逼吗", 2 / 5),  # Chinese: one character is one word
        ("傻逼", "傻瓜不是", 0),
        ("バカ", "お前はバカだ", 2 / 6),  # Japanese kana
        ("ควาย", "เขาเป็นควาย", 4 / 11),  # Thai, written without spaces
    ],
)
def test_non_latin_scripts(entry, text, share):
    assert make_word_list([entry]).share(text) == pytest.approx(share)


def test_words_keep_marks_and_split_unspaced_scripts():
    assert words("Ünïcode कुत्ता 한국어 你好") == ["ünïcode", "कुत्ता", "한국어", "你", "好"]


def test_bad_words_ratio_threshold_and_language_routing(tmp_path):
    english = write_list(tmp_path, "en.txt", ["damn"])
    russian = write_list(tmp_path, "ru.txt", ["сука"])
    cfg = ContentConfig(
        bad_words={"enabled": True, "lists": {"en": english, "ru": russian}, "max_ratio": 0.2}
    )
    stage = Content(cfg)
    texts = [
        "damn it all to heaven",  # 1/5 = 0.2: not above the limit
        "damn damn it all now",  # 2/5
        "сука сука да",  # Russian list
        "damn damn damn",  # no list for German: kept
        "damn damn damn",  # no language column value: kept
    ]
    out = stage(batch([None] * 5, texts, ["en", "en", "ru", "de", None]))
    assert out["reason"].to_pylist() == [None, "bad_words", "bad_words", None, None]
    # Without a langid stage every document is taken to be in bad_words.language.
    assert stage(batch([None], ["damn damn it"]))["reason"].to_pylist() == ["bad_words"]


def test_config_errors():
    with pytest.raises(ConfigError, match="no builtin list for \\['fr'\\]"):
        build_config(
            {"input": {"paths": ["x"]}, "content": {"bad_words": {"lists": {"fr": "builtin"}}}}
        )
    with pytest.raises(ConfigError, match="source tag columns"):
        build_config({"input": {"paths": ["x"], "keep_fields": ["url", "license"]}})


def test_stage_runs_only_when_a_rule_is_set(tmp_path):
    base = {"input": {"paths": ["x"]}}
    assert "content" not in [s.name for s in document_stages(build_config(base))]
    cfg = build_config(base, {"content.bad_words.enabled": True})
    names = [s.name for s in document_stages(cfg)]
    assert names[names.index("normalize") :][:3] == ["normalize", "langid", "content"]


# -- tags -------------------------------------------------------------------------------
def test_tags_become_columns(mini_corpus):
    cfg = build_config(
        {"input": {"paths": [str(mini_corpus)], "license": "cc0-1.0", "consent": "none"}}
    )
    table = next(read_file(str(mini_corpus), 0, cfg.input, 10))
    assert table["license"].to_pylist() == ["cc0-1.0"] * 10
    assert table["consent"].to_pylist() == ["none"] * 10
    untagged = next(
        read_file(str(mini_corpus), 0, build_config({"input": {"paths": ["x"]}}).input, 3)
    )
    assert untagged["license"].null_count == 3


# -- a list of a million domains --------------------------------------------------------
def lookups_per_second(domains: DomainSet, hosts: list[str]) -> float:
    start = time.perf_counter()
    for host in hosts:
        domains.match(host)
    return len(hosts) / (time.perf_counter() - start)


def test_million_domain_list_loads_once_and_looks_up_in_constant_time(tmp_path):
    path = tmp_path / "million.txt"
    path.write_text("".join(f"site{i}.example{i % 97}.com\n" for i in range(1_000_000)))
    start = time.perf_counter()
    domains = load_domains((str(path),))
    load_seconds = time.perf_counter() - start
    assert len(domains) == 1_000_000
    assert load_domains((str(path),)) is domains  # loaded once per worker process

    hosts = [f"www.site{i}.example{i % 97}.com" for i in range(0, 2_000_000, 20)]
    assert sum(map(domains.match, hosts)) == len(hosts) // 2  # the first half are listed
    # A thousand times fewer entries must not be many times faster (memory caches aside):
    # lookups do not grow with the list. Measured alternately so that the load of a
    # shared machine affects both alike.
    small = DomainSet(list(domains.domains)[:1000])
    big_rates, small_rates = [], []
    for _ in range(3):
        big_rates.append(lookups_per_second(domains, hosts))
        small_rates.append(lookups_per_second(small, hosts))
    assert max(big_rates) > 0.2 * max(small_rates), (big_rates, small_rates)
    # Generous bounds for a shared 2-core machine (figures: bench/cases/content.py).
    assert load_seconds < 20
    assert max(big_rates) > 20_000


def test_tag_counts_sum_sources_per_tag():
    cfg = build_config(
        {
            "sources": [
                {"name": "web", "paths": ["w"], "input": {"license": "mixed", "consent": "none"}},
                {"name": "books", "paths": ["b"], "input": {"license": "public-domain"}},
                {"name": "code", "paths": ["c"], "input": {"license": "mit", "consent": "none"}},
            ]
        }
    )
    rows = {
        "web": {"documents_in": 10, "documents_out": 6, "tokens_out": 600, "share": 0.6},
        "books": {"documents_in": 3, "documents_out": 2, "tokens_out": 300, "share": 0.3},
        "code": {"documents_in": 4, "documents_out": 1, "tokens_out": 100, "share": 0.1},
    }
    tags = tag_counts(rows, sources(cfg))
    assert tags["consent"] == {
        "none": {"documents_in": 14, "documents_out": 7, "tokens_out": 700},
        "unspecified": {"documents_in": 3, "documents_out": 2, "tokens_out": 300},
    }
    assert tags["license"]["mit"] == {"documents_in": 4, "documents_out": 1, "tokens_out": 100}
    # One unnamed input: its sources are named per file and share its tags.
    single = build_config({"input": {"paths": ["x"], "consent": "explicit"}})
    tags = tag_counts({"a": rows["web"], "b": rows["code"]}, sources(single))
    assert tags["consent"] == {
        "explicit": {"documents_in": 14, "documents_out": 7, "tokens_out": 700}
    }


def test_run_summary_lists_tags_only_when_inputs_are_tagged():
    from rich.console import Console

    from raypipe.cli import _summary

    counts = {"documents_in": 4, "documents_cleaned": 3, "documents_out": 2, "tokens_out": 900}
    manifest = {"documents_in": 4, "documents_out": 2, "rejected": {"opt_out": 2}}
    console = Console(width=100, record=True)
    console.print(_summary({**manifest, "tags": {"consent": {"none": counts}}}))
    console.print(_summary({**manifest, "tags": {"license": {"unspecified": counts}}}))
    text = console.export_text()
    assert "consent: none" in text and "2 docs 900 tokens" in text
    assert "unspecified" not in text
