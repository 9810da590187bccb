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
    create_model,
    field_validator,
    model_validator,
)

from raypipe.writers import FORMATS, FormatName


class ConfigError(ValueError):
    """An unusable configuration: the message names the key and what is wrong."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class InputConfig(Section):
    paths: list[str] = Field(
        default_factory=list,
        description="Files, folders or globs; local or s3:// (or per source, in `sources`)",
    )
    format: Literal["auto", "jsonl", "parquet", "text", "warc", "html"] = Field(
        "auto",
        description="auto = from the extension (.warc, .html/.htm too); .gz and .zst are read "
        "transparently",
    )
    text_field: str = Field("text", description="Field holding the document text")
    id_field: str | None = Field(
        None,
        description="Field holding the document id (a record without it is rejected: "
        "missing_id; a WARC page: its url with `url`, else its WARC-Record-ID); unset = the "
        "record's `id` field when it has one, a WARC page's WARC-Record-ID, else "
        "'<file>#<row>'",
    )
    source: str | None = Field(
        None,
        description="Source name for these documents; unset = the 'source' field or the file stem",
    )
    keep_fields: list[str] = Field(
        default_factory=lambda: ["url", "date", "title"],
        description="Extra input fields carried to the output (web pages fill url, date, title); "
        "a record's `url` is always carried, for locating and removing documents",
    )
    max_doc_bytes: int = Field(
        10_000_000, ge=1, description="Larger documents are rejected (reason too_large)"
    )
    html_field: str | None = Field(
        None,
        description="JSONL/Parquet field holding raw HTML: such rows get their text from the "
        "extract stage",
    )
    max_page_bytes: int = Field(
        1 << 20,
        ge=1_024,
        description="HTML pages are cut to this many bytes before extraction (Common Crawl "
        "also truncates at 1 MiB)",
    )
    license: str | None = Field(
        None,
        description="Licence tag of these documents (e.g. cc-by-4.0), carried as the `license` "
        "column and counted in the report; unset = each record's own `license` field",
    )
    consent: str | None = Field(
        None,
        description="Consent tag of these documents (e.g. explicit, opt-out-honoured, none), "
        "carried as the `consent` column and counted in the report; unset = each record's own "
        "`consent` field",
    )

    @model_validator(mode="after")
    def _tags_are_not_kept_fields(self) -> InputConfig:
        if clash := {"license", "consent"} & set(self.keep_fields):
            raise ValueError(
                f"keep_fields: {sorted(clash)} are the source tag columns; set input.license "
                "or input.consent instead"
            )
        return self


class OutputConfig(Section):
    path: str = Field("out", description="Output folder, local or s3://")
    format: FormatName = Field(
        "native",
        description="; ".join(f"{f.name} = {f.description}" for f in FORMATS.values()),
    )
    shard_tokens: int = Field(
        100_000_000,
        ge=1_000,
        description="Approximate tokens per shard (estimated at 4 chars/token)",
    )
    overwrite: bool = Field(False, description="Replace a committed run of a different config")
    keep_work: bool = Field(
        True,
        description="Keep the phase checkpoints in OUT/_work/ after the commit, so that a run "
        "with other tokenizer, packing or output options reuses cleaning and dedup; false "
        "removes them (they take about the corpus's size)",
    )


class NormalizeConfig(Section):
    enabled: bool = True
    strip_html: bool = Field(True, description="Remove HTML tags and decode entities")
    remove_urls: bool = Field(False, description="Remove http(s):// and www. URLs")
    nfc: bool = Field(True, description="Unicode NFC normalization")


class ExtractConfig(Section):
    engine: Literal["resiliparse", "trafilatura"] = Field(
        "resiliparse",
        description="Main-content extraction from HTML: resiliparse (fast) or trafilatura "
        "(slower, often more precise)",
    )


class LangidConfig(Section):
    enabled: bool = True
    languages: list[str] = Field(
        default_factory=list,
        description='ISO codes to keep, e.g. [en, de]; ["*"] = every language, documents '
        "scoring below the threshold rejected; empty = annotate language and language_score "
        "only, reject nothing (below the threshold the language is `und`, and "
        "language-scoped rules skip the document)",
    )
    threshold: float = Field(
        0.65,
        ge=0,
        le=1,
        description="With languages set, a kept language scoring below this is rejected "
        "(reason language_score); FineWeb uses 0.65, 0.8 suits clean English",
    )
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="Per-language thresholds overriding threshold"
    )
    model_path: str | None = Field(
        None,
        description="A fastText language-ID model (lid.176.bin, GlotLID); unset = the bundled "
        "lid.176.ftz",
    )
    charset_check: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Also judge English by the character-set heuristic (ASCII share of a "
        "document's letters at least this) and count what it and fastText each find not "
        "English (counters.langid); it rejects nothing",
    )

    def counters(self) -> tuple[tuple[str, str], ...]:
        """What the character-set comparison counts, when it runs."""
        if self.charset_check is None:
            return ()
        return tuple(("langid", c) for c in ("charset_not_en", "fasttext_not_en", "both_not_en"))

    @field_validator("thresholds")
    @classmethod
    def _probabilities(cls, value: dict[str, float]) -> dict[str, float]:
        if bad := {k: v for k, v in value.items() if not 0 <= v <= 1}:
            raise ValueError(f"thresholds must be within 0..1, got {bad}")
        return value


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
        description="Share of characters that are neither letters nor digits above: "
        "heuristic:symbols",
    )
    symbol_ratio_of: Literal["visible", "all"] = Field(
        "visible",
        description="Denominator of the symbol share: visible = non-space characters; all = "
        "the whole text's length (the lesson's definition)",
    )
    languages: list[str] = Field(
        default_factory=list,
        description="Languages (the `language` column) the heuristic applies to; others pass "
        "it. Empty = all",
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
    alpha_words_of: Literal["tokens", "words"] = Field(
        "tokens",
        description="What min_alpha_words divides by: tokens = every token of the word "
        "splitter, punctuation included (datatrove, as FineWeb ran it); words = tokens that "
        "are not pure punctuation or symbols (dialogue-heavy prose keeps)",
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
    filter_no_terminal_punct: bool = Field(
        True,
        description="Remove lines not ending in . ? ! \" ' (or ending in ...); FineWeb turns "
        "this off and keeps them",
    )
    min_words_per_line: int = Field(3, ge=0, description="Lines with fewer words are removed")
    min_sentences: int = Field(
        5, ge=0, description="Pages with fewer sentences left: c4:min_sentences"
    )
    max_word_length: int = Field(
        1000, ge=1, description="Lines with a longer word (characters) are removed"
    )
    unwrap: bool = Field(
        False,
        description="Judge hard-wrapped text (books, mail: lines broken at a fixed width) by "
        "its paragraphs, and keep them one per line; datatrove judges its lines",
    )


class FineWebConfig(Section):
    enabled: bool = Field(False, description="FineWeb rules (Penedo et al. 2024, section 3.3)")
    languages: list[str] = _languages("fineweb")
    edition: Literal["fineweb-2", "fineweb"] = Field(
        "fineweb-2",
        description="fineweb-2 = datatrove since 8427759 (strict limits, blank lines not "
        "counted, terminal punctuation of every script); fineweb = the code FineWeb v1 ran "
        "(drop at the limits, blank lines counted, only . ' \" ! ? end a line)",
    )
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
    unwrap: bool = Field(
        False,
        description="Judge the line rules of hard-wrapped text (books, mail: lines broken at "
        "a fixed width) on its paragraphs; datatrove judges its lines",
    )


class PerplexityConfig(Section):
    enabled: bool = Field(
        False,
        description="Score documents with a byte n-gram model of reference text (column "
        "bits_per_byte); train one with `raypipe train-lm`",
    )
    model: str | None = Field(None, description="Model file written by `raypipe train-lm`")
    max_bits_per_byte: float = Field(
        4.0, gt=0, description="Higher score: perplexity:bits_per_byte (unless drop_worst)"
    )
    drop_worst: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Instead of max_bits_per_byte: drop this share of the deduplicated "
        "documents, the highest bits per byte of the whole run (perplexity:drop_worst)",
    )

    @model_validator(mode="after")
    def _needs_model(self) -> PerplexityConfig:
        if self.enabled and not self.model:
            raise ValueError("perplexity needs a model: train one with `raypipe train-lm`")
        return self


class ClassifierConfig(Section):
    enabled: bool = Field(
        False,
        description="Score documents with a fastText quality classifier (column "
        "quality_score: P(keep)); train one with `raypipe train-classifier`",
    )
    model: str | None = Field(None, description="Model file written by `raypipe train-classifier`")
    min_score: float = Field(
        0.5, ge=0, le=1, description="Lower P(keep): classifier:quality_score (unless drop_worst)"
    )
    drop_worst: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Instead of min_score: drop this share of the deduplicated documents, "
        "the lowest P(keep) of the whole run (classifier:drop_worst)",
    )

    @model_validator(mode="after")
    def _needs_model(self) -> ClassifierConfig:
        if self.enabled and not self.model:
            raise ValueError("classifier needs a model: train one with `raypipe train-classifier`")
        return self


class QualityConfig(Section):
    enabled: bool = True
    heuristic: HeuristicConfig = HeuristicConfig()
    gopher_repetition: GopherRepetitionConfig = GopherRepetitionConfig()
    gopher_quality: GopherQualityConfig = GopherQualityConfig()
    c4: C4Config = C4Config()
    fineweb: FineWebConfig = FineWebConfig()
    perplexity: PerplexityConfig = PerplexityConfig()
    classifier: ClassifierConfig = ClassifierConfig()


def _pii_entity(name: str, threshold: float, enabled: bool = True) -> type[Section]:
    """A `{enabled, threshold}` section with this entity's own defaults."""
    return create_model(
        name,
        __base__=Section,
        enabled=(bool, enabled),
        threshold=(
            float,
            Field(
                threshold,
                ge=0,
                le=1,
                description="Mask spans whose Presidio score (after validation and context "
                "words) is at least this",
            ),
        ),
    )


PiiEmail = _pii_entity("PiiEmail", 0.5)
PiiPhone = _pii_entity("PiiPhone", 0.4)
PiiIp = _pii_entity("PiiIp", 0.6)
PiiCreditCard = _pii_entity("PiiCreditCard", 0.5)
PiiSsn = _pii_entity("PiiSsn", 0.4)
PiiIban = _pii_entity("PiiIban", 0.5)
PiiEsNif = _pii_entity("PiiEsNif", 0.5)
PiiEsNie = _pii_entity("PiiEsNie", 0.5)
PiiBrCpf = _pii_entity("PiiBrCpf", 0.5)
PiiBrCnpj = _pii_entity("PiiBrCnpj", 0.5)
PiiPerson = _pii_entity("PiiPerson", 0.85, enabled=False)


class PiiConfig(Section):
    enabled: bool = Field(False, description="Mask personal data (Presidio recognizers)")
    style: Literal["tag", "placeholder", "hash"] = Field(
        "tag",
        description="tag = <EMAIL_ADDRESS>; placeholder = email@example.com, 192.0.2.1, ...; "
        "hash = <EMAIL_ADDRESS:salted hash>, the same pseudonym for the same value",
    )
    salt_env: str = Field(
        "RAYPIPE_PII_SALT",
        description="Environment variable holding the secret salt of style hash (the salt "
        "itself is never logged or written)",
    )
    allow: list[str] = Field(
        default_factory=lambda: [
            "example.com",
            "example.org",
            "example.net",
            "192.0.2.0/24",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "2001:db8::/32",
        ],
        description="Never masked: exact values, e-mail domains (with subdomains), IP networks",
    )
    email_address: PiiEmail = PiiEmail()
    phone_number: PiiPhone = PiiPhone()
    ip_address: PiiIp = PiiIp()
    credit_card: PiiCreditCard = PiiCreditCard()
    us_ssn: PiiSsn = PiiSsn()
    iban_code: PiiIban = PiiIban()
    es_nif: PiiEsNif = PiiEsNif()  # Spain's DNI/NIF: 12345678Z (control letter checked)
    es_nie: PiiEsNie = PiiEsNie()  # Spain's foreigner number: X1234567L
    br_cpf: PiiBrCpf = PiiBrCpf()  # Brazil's CPF: 123.456.789-09 (check digits checked)
    br_cnpj: PiiBrCnpj = PiiBrCnpj()  # Brazil's CNPJ: 12.345.678/0001-95
    person: PiiPerson = PiiPerson()  # names need spaCy NER: many times slower

    def thresholds(self) -> dict[str, float]:
        """Presidio entity name -> threshold, for the enabled entities."""
        return {
            name.upper(): section.threshold
            for name in type(self).model_fields
            if isinstance(section := getattr(self, name), BaseModel) and section.enabled
        }

    def counters(self) -> tuple[tuple[str, str], ...]:
        """The stage's declared counters: masked spans of each enabled entity."""
        return tuple(("pii", entity.lower()) for entity in self.thresholds())


class BadWordsConfig(Section):
    enabled: bool = Field(False, description="Reject documents dense in listed words")
    lists: dict[str, str] = Field(
        default_factory=lambda: {"en": "builtin"},
        description="Language code -> word list file (local or s3://, one word or phrase a "
        "line); builtin = the small list shipped for that language (en)",
    )
    max_ratio: float = Field(
        0.02, ge=0, le=1, description="Share of words that are listed above: reason bad_words"
    )
    language: str = Field(
        "en", description="Language of documents without a `language` column (no langid stage)"
    )

    @field_validator("lists")
    @classmethod
    def _builtin_exists(cls, lists: dict[str, str]) -> dict[str, str]:
        # Imported here: raypipe.wordlists reports malformed lists as ConfigError.
        from raypipe.wordlists import BUILTIN, builtin_languages

        if missing := {lang for lang, uri in lists.items() if uri == BUILTIN} - set(
            builtin_languages()
        ):
            raise ValueError(
                f"no builtin list for {sorted(missing)}; builtin lists: {builtin_languages()}"
            )
        return lists


class ContentConfig(Section):
    blocked_domains: list[str] = Field(
        default_factory=list,
        description="Domain list files (local or s3://): a listed domain blocks itself and its "
        "subdomains, reason url_filter:domain",
    )
    blocked_url_substrings: list[str] = Field(
        default_factory=list,
        description="Files of URL substrings (case-insensitive): reason url_filter:substring",
    )
    opt_out: list[str] = Field(
        default_factory=list,
        description="Files of domains or URL prefixes whose owners opted out: reason opt_out",
    )
    bad_words: BadWordsConfig = BadWordsConfig()

    @property
    def url_rules(self) -> bool:
        return bool(self.blocked_domains or self.blocked_url_substrings or self.opt_out)

    @property
    def active(self) -> bool:
        return self.url_rules or self.bad_words.enabled


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


class NearDedupConfig(Section):
    enabled: bool = Field(
        False, description="Drop near-duplicates (MinHash LSH), after exact duplicates"
    )
    ngram: int = Field(5, ge=1, le=32, description="Words per shingle")
    bands: int = Field(14, ge=1, le=64, description="LSH bands (bands x rows permutations)")
    rows: int = Field(8, ge=1, le=32, description="Signature rows per band")
    threshold: float = Field(
        0.8,
        gt=0,
        le=1,
        description="With verify, candidate pairs below this exact shingle Jaccard are not linked",
    )
    verify: bool = Field(
        True,
        description="Check candidates' exact shingle Jaccard (removes banding false positives; "
        "rereads the candidates' texts)",
    )


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
    near: NearDedupConfig = NearDedupConfig()


class TokenizeConfig(Section):
    batch_size: int = Field(512, ge=1, le=65_536, description="Documents per tokenizer call")


class PackConfig(Section):
    seq_len: int = Field(2048, ge=8, le=1 << 20, description="Tokens per packed sequence")
    strategy: Literal["concat", "best_fit", "pad"] = Field(
        "concat",
        description="concat = documents back to back, one crossing a sequence end continues "
        "in the next; best_fit = best-fit-decreasing, documents up to seq_len never split; "
        "pad = one document per sequence (baseline)",
    )
    buffer_docs: int = Field(
        4096,
        ge=1,
        le=1 << 20,
        description="best_fit: documents placed together (and open sequences kept); more "
        "fills tighter, costs memory",
    )
    split_window: int = Field(
        0,
        ge=0,
        le=1 << 19,
        description="concat: a document crossing a sequence end is cut after the last "
        "paragraph or sentence end (or EOS) in the sequence's final split_window tokens, the "
        "rest of the sequence padded; none there = cut at seq_len. 0 = always cut at seq_len "
        "(no padding). At most seq_len / 2",
    )

    @model_validator(mode="after")
    def _window_fits_concat(self) -> PackConfig:
        if self.split_window > self.seq_len // 2:
            raise ValueError(
                f"split_window: {self.split_window} is more than half of seq_len {self.seq_len}"
            )
        if self.split_window and self.strategy != "concat":
            raise ValueError(
                f"split_window: applies to strategy concat, not {self.strategy}; set it to 0"
            )
        return self


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
    num_cpus: int | None = Field(
        None,
        ge=2,
        description="CPUs of the local Ray; unset = all (stage actors run beside read tasks, "
        "so at least 2)",
    )
    max_actors: int | None = Field(
        None,
        ge=1,
        description="Most actors per stage pool; unset = the cluster's CPUs at the start of "
        "the run (set it on an autoscaling cluster, whose CPUs arrive with the demand)",
    )
    batch_docs: int = Field(256, ge=1, le=65_536, description="Documents per cleaning batch")


class Resources(Section):
    """What each actor of a stage's own pool reserves from Ray (as `ray.remote` does)."""

    num_cpus: float = Field(1, ge=0, description="CPUs per actor of the stage's pool")
    num_gpus: float = Field(
        0, ge=0, description="GPUs per actor; a stage that asks for one runs only where one is"
    )
    memory: int | None = Field(None, ge=0, description="Bytes of RAM per actor; unset = none")


class UserStage(Section):
    use: str = Field(
        pattern=r"^[\w.]+:\w+$",
        description="`module:Class` of a raypipe Filter (or of a stage called on batches), "
        "importable on the workers",
    )
    after: Literal["extract", "normalize", "langid", "content", "quality", "pii"] = Field(
        "quality", description="The built-in stage it runs after (in place when that one is off)"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the class"
    )
    resources: Resources | None = Field(
        None,
        description="Run it in its own actor pool with these resources; unset = beside "
        "the built-in stages",
    )


DEFAULT_RECIPE = "production"  # why: docs/recipes.md


class PipelineConfig(Section):
    recipe: str | None = Field(
        DEFAULT_RECIPE,
        description="The named recipe whose options are the defaults of this config "
        "(docs/recipes.md, `raypipe options --recipe NAME`); null = every option's own "
        "default, no recipe",
    )
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
    extract: ExtractConfig = ExtractConfig()
    normalize: NormalizeConfig = NormalizeConfig()
    langid: LangidConfig = LangidConfig()
    content: ContentConfig = ContentConfig()
    quality: QualityConfig = QualityConfig()
    pii: PiiConfig = PiiConfig()
    stages: list[UserStage] = Field(
        default_factory=list, description="Your own stages, each placed after a built-in one"
    )
    dedup: DedupConfig = DedupConfig()
    tokenize: TokenizeConfig = TokenizeConfig()
    pack: PackConfig = PackConfig()
    storage: StorageConfig = StorageConfig()
    ray: RayConfig = RayConfig()

    @model_validator(mode="before")
    @classmethod
    def _recipe_under_the_config(cls, data: Any) -> Any:
        """The named recipe's settings under the config's own keys, however the config is
        built (a config already resolved, as a manifest holds it, stays the same)."""
        if not isinstance(data, dict) or not (name := data.get("recipe", DEFAULT_RECIPE)):
            return data
        from raypipe import recipes

        try:
            recipe = recipes.load(str(name))
        except ValueError as error:
            raise ValueError(f"recipe: {error}") from None
        return recipes.merged(recipe.as_config(), data)

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
        form = FORMATS[self.output.format]
        token_formats = ", ".join(f.name for f in FORMATS.values() if f.tokens)
        # native, the default, without a tokenizer writes the documents as Parquet
        if form.tokens and not self.tokenizer and form.name != "native":
            raise ValueError(f"output.format {form.name} writes tokens: set a tokenizer")
        if not form.tokens and self.tokenizer:
            raise ValueError(
                f"output.format {form.name} writes cleaned documents, not tokens: "
                f"unset the tokenizer (tokenizer: null) or choose one of {token_formats}"
            )
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
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
        if key := ".".join(str(part) for part in item["loc"]):
            lines.append(f"  {key}: {message}")
        else:  # a check across sections says what it concerns itself
            lines.append(f"  {message.removeprefix('Value error, ')}")
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


def reference_rows(
    model: type[BaseModel] = PipelineConfig, prefix: str = "", recipe: Any = None
) -> list[str]:
    """Markdown rows `| key | default | bounds | meaning |` for every option; with a
    `raypipe.recipes.Recipe`, its values (and their citations) are the defaults."""
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(reference_rows(annotation, f"{key}.", recipe))
            continue
        item = getattr(annotation, "__args__", (None,))[0]
        if isinstance(item, type) and issubclass(item, BaseModel):
            optional = type(None) in annotation.__args__  # `Model | None`: a section or null
            rows.append(f"| `{key}` | `{'null' if optional else '[]'}` |  | {field.description} |")
            rows.extend(reference_rows(item, f"{key}." if optional else f"{key}[].", recipe))
            continue
        default = (
            "required" if field.is_required() else field.get_default(call_default_factory=True)
        )
        default_text = "required" if default == "required" else f"`{json.dumps(default)}`"
        if recipe and (setting := recipe.settings.get(key)):
            default_text = f"**`{json.dumps(setting.value)}`** [{setting.cite}]"
        if recipe and key == "recipe":
            default_text = f"`{json.dumps(recipe.name)}`"
        meaning = field.description or ("Turn this on or off" if name == "enabled" else "")
        meaning = meaning.replace("|", "\\|")
        rows.append(f"| `{key}` | {default_text} | {_bounds(field)} | {meaning} |")
    return rows


def reference_table(recipe_name: str | None = DEFAULT_RECIPE) -> str:
    """Every option as a Markdown table; with a recipe (the default one unless None), its
    values in bold with their sources listed below the table."""
    if not recipe_name:
        header = "| key | default | bounds | meaning |\n|---|---|---|---|"
        return "\n".join([header, *reference_rows()])
    from raypipe import recipes

    try:
        recipe = recipes.load(recipe_name)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    header = (
        f"Recipe `{recipe.name}`: {recipe.title}\n\n"
        "| key | value | bounds | meaning |\n|---|---|---|---|"
    )
    sources = [f"- [{key}] {text}" for key, text in recipe.references.items()]
    notes = [f"- {note}" for note in recipe.notes]
    return "\n".join(
        [header, *reference_rows(recipe=recipe), "", "Sources:", *sources]
        + (["", "Where raypipe differs:", *notes] if notes else [])
    )
