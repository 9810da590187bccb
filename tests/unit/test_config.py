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


def test_missing_required_section():
    with pytest.raises(ConfigError, match=r"input: Field required"):
        build_config({})


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
