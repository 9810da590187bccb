import pytest

from raypipe.config import ConfigError, build_config, load_config


def test_defaults_and_overrides():
    cfg = build_config({"input": {"paths": ["a.jsonl"]}}, ["pack.seq_len=4096", "tokenizer="])
    assert cfg.pack.seq_len == 4096
    assert cfg.tokenizer is None
    assert cfg.output.format == "native"


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match=r"quality\.heuristic\.min_wordz: unknown key"):
        build_config({"input": {"paths": ["a"]}, "quality": {"heuristic": {"min_wordz": 3}}})


def test_out_of_range_is_named():
    with pytest.raises(ConfigError, match=r"pack\.seq_len: Input should be greater"):
        build_config({"input": {"paths": ["a"]}}, {"pack.seq_len": 0})


def test_input_is_named_exactly_once():
    with pytest.raises(ConfigError, match=r"input.paths or in sources \(exactly one\)"):
        build_config({})
    with pytest.raises(ConfigError, match=r"exactly one"):
        build_config({"input": {"paths": ["a"]}, "sources": [{"name": "s", "paths": ["b"]}]})


def test_sources_are_checked():
    source = {"name": "web", "paths": ["w/"], "share": 0.5, "epochs": 2}
    with pytest.raises(ConfigError, match=r"sources.0: Value error, set share or epochs, not both"):
        build_config({"sources": [source]})
    with pytest.raises(ConfigError, match="names must be unique"):
        build_config({"sources": [{"name": "a", "paths": ["x"]}, {"name": "a", "paths": ["y"]}]})
    with pytest.raises(ConfigError, match="unknown sources"):
        build_config(
            {"sources": [{"name": "a", "paths": ["x"]}], "dedup": {"source_priority": ["b"]}}
        )
    with pytest.raises(ConfigError, match="set a tokenizer"):
        build_config({"sources": [{"name": "a", "paths": ["x"], "epochs": 2}], "tokenizer": None})


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="key=value"):
        build_config({"input": {"paths": ["a"]}}, ["pack.seq_len"])


def test_yaml_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("input: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_split_window_is_bounded_by_seq_len_and_meant_for_concat():
    base = {"input": {"paths": ["a"]}}
    assert (
        build_config(base, {"pack.seq_len": 128, "pack.split_window": 64}).pack.split_window == 64
    )
    with pytest.raises(ConfigError, match=r"pack: Value error, split_window: 65 is more than half"):
        build_config(base, {"pack.seq_len": 128, "pack.split_window": 65})
    with pytest.raises(ConfigError, match=r"split_window: applies to strategy concat, not pad"):
        build_config(base, {"pack.strategy": "pad", "pack.split_window": 8})


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_document_formats_with_a_tokenizer_are_refused_before_any_work(fmt):
    data = {"input": {"paths": ["x"]}, "output": {"path": "o", "format": fmt}}
    with pytest.raises(ConfigError, match=f"output.format {fmt} writes cleaned documents"):
        build_config({**data, "tokenizer": "gpt2"})
    assert build_config({**data, "tokenizer": None}).output.format == fmt
