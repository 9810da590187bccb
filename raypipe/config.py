"""Every option raypipe has: its default, its bounds and what it means, in one place.

A run is configured by one YAML file validated against `PipelineConfig`. Unknown keys and
out-of-range values are errors that name the key. `--set a.b=value` overrides any key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)


class ConfigError(ValueError):
    """An unusable configuration: the message names the key and what is wrong."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class InputConfig(Section):
    paths: list[str] = Field(
        default_factory=list,
        description="Files, folders or globs; local or s3:// (or per source, in `sources`)",
    )
    format: Literal["auto", "jsonl", "parquet", "text"] = Field(
        "auto", description="auto = from the extension; .gz and .zst are read transparently"
    )
    text_field: str = Field("text", description="Field holding the document text")
    id_field: str | None = Field(
        None, description="Field holding the document id; unset = '<file>#<row>'"
    )
    source: str | None = Field(
        None,
        description="Source name for these documents; unset = the 'source' field or the file stem",
    )
    keep_fields: list[str] = Field(
        default_factory=lambda: ["url"], description="Extra input fields carried to the output"
    )
    max_doc_bytes: int = Field(
        10_000_000, ge=1, description="Larger documents are rejected (reason too_large)"
    )


class OutputConfig(Section):
    path: str = Field("out", description="Output folder, local or s3://")
    format: Literal["native", "parquet", "jsonl"] = Field(
        "native",
        description="native = token shards; parquet/jsonl = cleaned documents (used when "
        "tokenizer is unset)",
    )
    shard_tokens: int = Field(
        100_000_000,
        ge=1_000,
        description="Approximate tokens per shard (estimated at 4 chars/token)",
    )
    overwrite: bool = Field(False, description="Replace a committed run of a different config")


class NormalizeConfig(Section):
    enabled: bool = True
    strip_html: bool = Field(True, description="Remove HTML tags and decode entities")
    remove_urls: bool = Field(False, description="Remove http(s):// and www. URLs")
    nfc: bool = Field(True, description="Unicode NFC normalization")


class HeuristicConfig(Section):
    enabled: bool = True
    min_words: int = Field(50, ge=0, description="Fewer words: reason heuristic:min_words")
    max_caps_word_ratio: float = Field(
        0.5, ge=0, le=1, description="Share of ALL-CAPS words above: heuristic:caps_words"
    )
    max_symbol_ratio: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Share of non-space characters that are neither letters nor digits "
        "above: heuristic:symbols",
    )


def _languages(filter_name: str) -> Any:
    return Field(
        default_factory=lambda: ["en"],
        description=f"Languages (the `language` column) {filter_name} applies to; others pass "
        "it. Empty = all. Without a langid stage it applies to every document",
    )


def _fraction(default: float, meaning: str) -> Any:
    return Field(default, ge=0, le=1, description=meaning)


class GopherQualityConfig(Section):
    enabled: bool = Field(
        False, description="Gopher quality rules (Rae et al. 2021, appendix A.1.1)"
    )
    languages: list[str] = _languages("gopher_quality")
    min_words: int = Field(
        50, ge=0, description="Fewer words (not counting symbols): gopher_quality:min_words"
    )
    max_words: int = Field(100_000, ge=1, description="More words: gopher_quality:max_words")
    min_mean_word_length: float = Field(
        3, ge=0, description="Shorter mean word length: gopher_quality:mean_word_length"
    )
    max_mean_word_length: float = Field(
        10, ge=0, description="Longer mean word length: gopher_quality:mean_word_length"
    )
    max_hash_ratio: float = Field(
        0.1, ge=0, description="More '#' per word: gopher_quality:hash_ratio"
    )
    max_ellipsis_ratio: float = Field(
        0.1, ge=0, description="More ellipses per word: gopher_quality:ellipsis_ratio"
    )
    max_bullet_lines: float = _fraction(
        0.9, "Share of lines starting with a bullet above: gopher_quality:bullet_lines"
    )
    max_ellipsis_lines: float = _fraction(
        0.3, "Share of lines ending with an ellipsis above: gopher_quality:ellipsis_lines"
    )
    min_alpha_words: float = _fraction(
        0.8, "Share of words with a letter below: gopher_quality:alpha_words"
    )
    min_stop_words: int = Field(
        2, ge=0, description="Fewer distinct stop words: gopher_quality:stop_words"
    )
    stop_words: list[str] = Field(
        default_factory=lambda: ["the", "be", "to", "of", "and", "that", "have", "with"],
        description="The stop words min_stop_words counts (case-sensitive)",
    )


class GopherRepetitionConfig(Section):
    enabled: bool = Field(False, description="Gopher repetition rules (Rae et al. 2021, table A1)")
    languages: list[str] = _languages("gopher_repetition")
    dup_line_frac: float = _fraction(
        0.3, "Share of lines repeating an earlier line above: gopher_repetition:dup_line_frac"
    )
    dup_para_frac: float = _fraction(
        0.3, "Share of paragraphs repeating an earlier one above: gopher_repetition:dup_para_frac"
    )
    dup_line_char_frac: float = _fraction(
        0.2, "Share of characters in repeated lines above: gopher_repetition:dup_line_char_frac"
    )
    dup_para_char_frac: float = _fraction(
        0.2,
        "Share of characters in repeated paragraphs above: gopher_repetition:dup_para_char_frac",
    )
    top_ngram_char_frac: dict[int, float] = Field(
        default_factory=lambda: {2: 0.2, 3: 0.18, 4: 0.16},
        description="n: share of characters in the most frequent word n-gram above which "
        "gopher_repetition:top_<n>_gram",
    )
    dup_ngram_char_frac: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.1},
        description="n: share of characters in repeated word n-grams above which "
        "gopher_repetition:dup_<n>_gram",
    )

    @field_validator("top_ngram_char_frac", "dup_ngram_char_frac")
    @classmethod
    def _ngram_fractions(cls, value: dict[int, float]) -> dict[int, float]:
        for n, fraction in value.items():
            if not 2 <= n <= 20 or not 0 <= fraction <= 1:
                raise ValueError(f"{n}: {fraction}: n must be 2..20 and the fraction 0..1")
        return value


class C4Config(Section):
    enabled: bool = Field(
        False,
        description="C4 page cleaning (Raffel et al. 2020, section 2.2): keeps only sentence lines",
    )
    languages: list[str] = _languages("c4")
    min_words_per_line: int = Field(3, ge=0, description="Lines with fewer words are removed")
    min_sentences: int = Field(
        5, ge=0, description="Pages with fewer sentences left: c4:min_sentences"
    )
    max_word_length: int = Field(
        1000, ge=1, description="Lines with a longer word (characters) are removed"
    )


class FineWebConfig(Section):
    enabled: bool = Field(False, description="FineWeb rules (Penedo et al. 2024, section 3.3)")
    languages: list[str] = _languages("fineweb")
    min_line_punct_ratio: float = _fraction(
        0.12, "Share of lines ending in sentence punctuation below: fineweb:line_punct_ratio"
    )
    max_short_line_ratio: float = _fraction(
        0.67, "Share of short lines above: fineweb:short_line_ratio"
    )
    short_line_length: int = Field(
        30, ge=1, description="Lines of at most this many characters are short"
    )
    max_dup_line_char_ratio: float = _fraction(
        0.1, "Share of characters in repeated lines above: fineweb:char_dup_ratio"
    )
    max_newline_word_ratio: float = Field(
        0.3, ge=0, description="Line breaks per word above (list-like): fineweb:list_ratio"
    )


class PerplexityConfig(Section):
    enabled: bool = Field(
        False,
        description="Score documents with a byte n-gram model of reference text (column "
        "bits_per_byte); train one with `raypipe train-lm`",
    )
    model: str | None = Field(None, description="Model file written by `raypipe train-lm`")
    max_bits_per_byte: float = Field(
        4.0, gt=0, description="Higher score: perplexity:bits_per_byte"
    )

    @model_validator(mode="after")
    def _needs_model(self) -> PerplexityConfig:
        if self.enabled and not self.model:
            raise ValueError("perplexity needs a model: train one with `raypipe train-lm`")
        return self


class QualityConfig(Section):
    enabled: bool = True
    heuristic: HeuristicConfig = HeuristicConfig()
    gopher_repetition: GopherRepetitionConfig = GopherRepetitionConfig()
    gopher_quality: GopherQualityConfig = GopherQualityConfig()
    c4: C4Config = C4Config()
    fineweb: FineWebConfig = FineWebConfig()
    perplexity: PerplexityConfig = PerplexityConfig()


class SourceConfig(Section):
    """One named source of a mixture."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Source name")
    paths: list[str] = Field(min_length=1, description="Files, folders or globs of this source")
    share: float | None = Field(
        None, gt=0, le=1, description="Target share of output tokens (or set epochs)"
    )
    epochs: float | None = Field(
        None, gt=0, description="Times this source is read: 0.44 samples, 3.4 repeats (default 1)"
    )
    max_epochs: float = Field(
        4.0, gt=0, description="A share needing more epochs than this is an error"
    )
    input: dict[str, Any] = Field(
        default_factory=dict, description="Overrides of `input.*` for this source, e.g. text_field"
    )
    stages: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of stage options for this source, e.g. {quality.enabled: false}",
    )

    @model_validator(mode="after")
    def _share_or_epochs(self) -> SourceConfig:
        if self.share is not None and self.epochs is not None:
            raise ValueError("set share or epochs, not both")
        return self


class ExactDedupConfig(Section):
    enabled: bool = Field(True, description="Drop documents whose normalized text is identical")


class DedupConfig(Section):
    keeper: Literal["first", "longest"] = Field(
        "first",
        description="Which copy of a duplicate cluster survives: first in input order, or "
        "the longest (ties: first)",
    )
    source_priority: list[str] = Field(
        default_factory=list,
        description="Source names, most trusted first: a duplicate's keeper comes from the "
        "earliest listed source",
    )
    exact: ExactDedupConfig = ExactDedupConfig()


class TokenizeConfig(Section):
    batch_size: int = Field(512, ge=1, le=65_536, description="Documents per encode_batch call")


class PackConfig(Section):
    seq_len: int = Field(2048, ge=8, le=1 << 20, description="Tokens per packed sequence")


class StorageConfig(Section):
    endpoint: str | None = Field(
        None,
        description="S3-compatible endpoint URL (also AWS_ENDPOINT_URL); credentials come only "
        "from the standard AWS environment or instance role",
    )
    region: str | None = Field(None, description="S3 region (also AWS_REGION)")


class RayConfig(Section):
    address: str | None = Field(
        None, description="Ray cluster to join (also RAY_ADDRESS); unset = start a local Ray"
    )
    num_cpus: int | None = Field(None, ge=1, description="CPUs of the local Ray; unset = all")
    batch_docs: int = Field(256, ge=1, le=65_536, description="Documents per cleaning batch")


class PipelineConfig(Section):
    input: InputConfig = InputConfig()
    sources: list[SourceConfig] = Field(
        default_factory=list, description="Named sources of a mixture (instead of input.paths)"
    )
    output: OutputConfig = OutputConfig()
    tokenizer: str | None = Field(
        "gpt2",
        description="gpt2 (built in, offline), a tokenizer.json path, or a Hugging Face "
        "name; unset = write cleaned documents",
    )
    eos_token: str | None = Field(
        None,
        description="End-of-document token; unset = the tokenizer's own (<|endoftext|>, </s>, ...)",
    )
    seed: int = Field(0, ge=0, description="Seed of every random choice (shuffle, hashing)")
    normalize: NormalizeConfig = NormalizeConfig()
    quality: QualityConfig = QualityConfig()
    dedup: DedupConfig = DedupConfig()
    tokenize: TokenizeConfig = TokenizeConfig()
    pack: PackConfig = PackConfig()
    storage: StorageConfig = StorageConfig()
    ray: RayConfig = RayConfig()

    @field_validator("tokenizer")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    @model_validator(mode="after")
    def _one_way_to_name_inputs(self) -> PipelineConfig:
        if bool(self.input.paths) == bool(self.sources):
            raise ValueError("name the input in input.paths or in sources (exactly one)")
        names = [source.name for source in self.sources]
        if len(set(names)) != len(names):
            raise ValueError("sources: names must be unique")
        if names and (unknown := set(self.dedup.source_priority) - set(names)):
            raise ValueError(f"dedup.source_priority names unknown sources: {sorted(unknown)}")
        mixing = any(s.share is not None or s.epochs not in (None, 1) for s in self.sources)
        if mixing and not self.tokenizer:
            raise ValueError("sources with share or epochs mix tokens: set a tokenizer")
        return self


def _parse_override(item: str) -> tuple[list[str], Any]:
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects key=value, got {item!r}")
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else None


def _apply(data: dict, keys: list[str], value: Any) -> None:
    node = data
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {'.'.join(keys)}: {key} is not a section")
        node = child
    node[keys[-1]] = value


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
        lines.append(f"  {key}: {message}")
    return "invalid config:\n" + "\n".join(lines)


def build_config(data: dict, overrides: dict[str, Any] | list[str] | None = None) -> PipelineConfig:
    """Validate a config mapping after applying overrides ({"a.b": v} or ["a.b=v"])."""
    data = yaml.safe_load(yaml.safe_dump(data or {}))  # deep copy of plain data
    items = (
        overrides.items() if isinstance(overrides, dict) else map(_parse_override, overrides or [])
    )
    for keys, value in items:
        _apply(data, keys.split(".") if isinstance(keys, str) else keys, value)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def load_config(
    path: str | Path, overrides: dict[str, Any] | list[str] | None = None
) -> PipelineConfig:
    """Read a YAML config file; overrides win over the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config {path}: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"config {path} is not valid YAML: {error}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping of sections")
    return build_config(data or {}, overrides)


def _bounds(field) -> str:
    parts = []
    for item in field.metadata:
        for name, symbol in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(item, name, None) is not None:
                parts.append(f"{symbol} {getattr(item, name):,}")
        if getattr(item, "min_length", None):
            parts.append(f"at least {item.min_length} item(s)")
    choices = getattr(field.annotation, "__args__", ())
    if choices and all(isinstance(c, str) for c in choices):
        parts.append(" \\| ".join(choices))
    return ", ".join(parts)


def reference_rows(model: type[BaseModel] = PipelineConfig, prefix: str = "") -> list[str]:
    """Markdown rows `| key | default | bounds | meaning |` for every option."""
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(reference_rows(annotation, f"{key}."))
            continue
        item = getattr(annotation, "__args__", (None,))[0]
        if isinstance(item, type) and issubclass(item, BaseModel):
            rows.append(f"| `{key}` | `[]` |  | {field.description} |")
            rows.extend(reference_rows(item, f"{key}[]."))
            continue
        default = (
            "required" if field.is_required() else field.get_default(call_default_factory=True)
        )
        default_text = "required" if default == "required" else f"`{json.dumps(default)}`"
        meaning = field.description or ("Turn this on or off" if name == "enabled" else "")
        meaning = meaning.replace("|", "\\|")
        rows.append(f"| `{key}` | {default_text} | {_bounds(field)} | {meaning} |")
    return rows


def reference_table() -> str:
    header = "| key | default | bounds | meaning |\n|---|---|---|---|"
    return "\n".join([header, *reference_rows()])
